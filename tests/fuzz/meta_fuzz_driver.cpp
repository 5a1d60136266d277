// Runs the meta.json fuzz target (meta_fuzz.cpp) without libFuzzer, so that the suite runs it on
// every build with the project's own compiler: every corpus file first (the regressions), then
// random mutations of them (byte flips, insertions of the dictionary's tokens, splices of two
// inputs, deep nesting up to 1 MiB) for a fixed time from a fixed seed. A crash, a sanitizer
// report or an exception other than tensordict::Error fails the run; the failing input is
// written to the working directory (`meta_fuzz_failure.json`) so that it can join the corpus.
// This is not coverage-guided: the libFuzzer build (docs/memmap.md) explores further.
//
//   meta_fuzz_driver <corpus-dir> <dict-file> <seconds> [seed]

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxLen = size_t{1} << 20;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The dictionary's tokens: one quoted string per line, `#` lines are comments.
std::vector<std::string> read_dict(const fs::path& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 2 || line.front() != '"' || line.back() != '"') continue;
    std::string token;
    for (size_t i = 1; i + 1 < line.size(); ++i) {
      if (line[i] == '\\' && i + 2 < line.size()) ++i;
      token += line[i];
    }
    out.push_back(token);
  }
  return out;
}

std::string mutate(const std::string& input, const std::vector<std::string>& corpus,
                   const std::vector<std::string>& dict, std::mt19937_64& rng) {
  std::string s = input;
  auto pick = [&](size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  const int steps = 1 + static_cast<int>(pick(4));
  for (int i = 0; i < steps; ++i) {
    switch (pick(6)) {
      case 0:  // flip a byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(pick(256));
        break;
      case 1:  // insert a token
        if (!dict.empty()) s.insert(pick(s.size() + 1), dict[pick(dict.size())]);
        break;
      case 2:  // erase a run
        if (!s.empty()) {
          const size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
        }
        break;
      case 3: {  // splice in a piece of another input
        const std::string& other = corpus[pick(corpus.size())];
        if (!other.empty()) {
          const size_t from = pick(other.size());
          s.insert(pick(s.size() + 1), other.substr(from, 1 + pick(64)));
        }
        break;
      }
      case 4: {  // nest deeply: the inputs a short length limit never reached
        const size_t depth = 1 + pick(size_t{1} << (1 + pick(17)));
        const char open = pick(2) ? '[' : '{';
        s.insert(pick(s.size() + 1), std::string(depth, open));
        break;
      }
      default:  // a number at its limits
        s.insert(pick(s.size() + 1), pick(2) ? "18446744073709551616" : "-9223372036854775809");
        break;
    }
  }
  if (s.size() > kMaxLen) s.resize(kMaxLen);
  return s;
}

bool run_one(const std::string& input) {
  try {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    return true;
  } catch (const std::exception& e) {
    std::cerr << "meta_fuzz_driver: unexpected exception: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "meta_fuzz_driver: unexpected non-std exception\n";
  }
  std::ofstream("meta_fuzz_failure.json", std::ios::binary) << input;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: meta_fuzz_driver <corpus-dir> <dict-file> <seconds> [seed]\n";
    return 2;
  }
  std::vector<std::string> corpus;
  for (const auto& entry : fs::directory_iterator(argv[1]))
    if (entry.is_regular_file()) corpus.push_back(read_file(entry.path()));
  const std::vector<std::string> dict = read_dict(argv[2]);
  const double seconds = std::atof(argv[3]);
  std::mt19937_64 rng(argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 20261126);
  if (corpus.empty()) {
    std::cerr << "meta_fuzz_driver: no corpus files in " << argv[1] << "\n";
    return 2;
  }
  // The corpus: every checked-in input, unchanged.
  for (const auto& input : corpus)
    if (!run_one(input)) return 1;
  // Mutations for the time given.
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int64_t runs = 0;
  while (std::chrono::steady_clock::now() < end) {
    const std::string input = mutate(corpus[runs % corpus.size()], corpus, dict, rng);
    if (!run_one(input)) return 1;
    ++runs;
  }
  std::cout << "meta_fuzz_driver: " << corpus.size() << " corpus inputs and " << runs
            << " mutations, no finding\n";
  return 0;
}
