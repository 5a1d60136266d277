// Google Benchmark of TensorDict's memory-mapped persistence and parallel map against the
// same bytes moved, or the same work split, by hand.
//
// Every operation is registered twice, as BM_<Op>/TensorDict and BM_<Op>/Raw:
// - MemmapWrite: td.memmap(prefix) of 10 float32 leaves [10000, 64] (25.6 MB) into a new
//   folder against mkdir and open/write/close of the same 10 buffers into 10 files plus a small
//   meta file. MemmapReplace: the same over the previous call's folder (memmap replaces the
//   folder; the raw side unlinks and recreates its files).
// - MemmapRead: load_memmap(prefix), then the sum of every leaf (every byte is touched),
//   against open/read/close of the same files into preallocated buffers and the same sums.
// - LoadMemmap<size>: load_memmap of a dataset {"obs": float32 [N, 256], "reward": float32 [N]}
//   of 64 MiB, 256 MiB and 1 GiB against reading its meta.json and open/fstat/mmap of its two
//   files. Nothing is read from the data, so the time must not grow with N.
// - Gather256: td.index({idx}) of 256 random rows of the 1 GiB dataset, mapped once, against
//   pread of the same rows from its two files, opened once. LoadGather256 maps (or opens)
//   afresh on every call, so every touched page faults in.
// - Map<n>Worker(s): TensorDict::map over 16 chunks of a [4096, 256] TensorDict with a
//   CPU-bound fn (4 x matmul + tanh) on n threads, against the same chunk loop on std::threads.
//
// Nothing is dropped from the page cache: every read, on both sides, is of warm files. All
// files live in a scratch folder beside this executable (so on the build tree's filesystem;
// TDRL_BENCH_DIR names another parent), removed at exit, on SIGINT/SIGTERM/SIGHUP and on an
// uncaught exception (scratch_dir.h). The datasets are written once, on first use.

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tensordict/tensordict.h>

#include "common.h"
#include "scratch_dir.h"

namespace tdrl::bench {
namespace {

namespace fs = std::filesystem;

using tensordict::MapOptions;
using tensordict::MemoryMappedTensor;
using tensordict::TensorDict;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr double kMB = 1e6;

// MemmapWrite / MemmapRead: 10 float32 leaves [10000, 64] = 25.6 MB.
constexpr int kLeaves = 10;
constexpr int64_t kRows = 10000;
constexpr int64_t kCols = 64;
constexpr int64_t kLeafBytes = kRows * kCols * 4;
constexpr int64_t kTotalBytes = kLeaves * kLeafBytes;

// Datasets: "obs" float32 [N, 256] + "reward" float32 [N], 1028 bytes per row.
constexpr int64_t kObsDim = 256;
constexpr int64_t kRowBytes = (kObsDim + 1) * 4;
constexpr int64_t kFillRows = 16384;  // rows written per step when a dataset is created
constexpr int64_t kGatherRows = 256;
constexpr size_t kIndexPool = 64;  // index tensors cycled through by the gathers
constexpr uint64_t kSeed = 2026;

// Map: [4096, 256] in chunks of 256 rows (16 chunks), 4 x (matmul [256, 256], tanh) each.
constexpr int64_t kMapRows = 4096;
constexpr int64_t kMapChunk = 256;
constexpr int kMatmuls = 4;

// Disk needed at the peak: the three datasets (1344 MiB) and eight 25.6 MB folders.
constexpr int64_t kDiskNeeded = 1344 * kMiB + 8 * kTotalBytes;

// ---- POSIX helpers -------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error("bench_memmap: " + what + " '" + path + "': " + std::strerror(errno));
}

/// An open file descriptor, closed when this goes.
class UniqueFd {
 public:
  UniqueFd(const std::string& path, int flags) : fd_(open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    if (fd_ < 0) fail("cannot open", path);
  }
  ~UniqueFd() {
    if (fd_ >= 0) close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }

 private:
  int fd_;
};

/// A read-write shared mapping of a whole file, unmapped when this goes (as the storage of a
/// MemoryMappedTensor is).
class Mapping {
 public:
  explicit Mapping(const std::string& path) {
    UniqueFd file(path, O_RDWR);
    struct stat st {};
    if (fstat(file.get(), &st) != 0) fail("cannot stat", path);
    size_ = static_cast<size_t>(st.st_size);
    address_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, file.get(), 0);
    if (address_ == MAP_FAILED) fail("cannot map", path);
  }
  ~Mapping() { munmap(address_, size_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

 private:
  void* address_ = nullptr;
  size_t size_ = 0;
};

void write_file(const std::string& path, const void* data, size_t size) {
  UniqueFd file(path, O_WRONLY | O_CREAT | O_TRUNC);
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(file.get(), p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write", path);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void read_exact(int fd, void* data, size_t size, const std::string& path) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("short read from", path);
    p += n;
    size -= static_cast<size_t>(n);
  }
}

std::string read_text(const std::string& path) {
  UniqueFd file(path, O_RDONLY);
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = read(file.get(), chunk, sizeof chunk)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot read", path);
    }
    text.append(chunk, static_cast<size_t>(n));
  }
  return text;
}

/// Copies row `index[i]` of the file behind `fd` into row i of `out` (C-contiguous).
void pread_rows(int fd, const torch::Tensor& index, const torch::Tensor& out) {
  const size_t row_bytes = static_cast<size_t>(out.numel() / out.size(0)) * out.element_size();
  const int64_t* rows = index.data_ptr<int64_t>();
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < index.numel(); ++i) {
    size_t done = 0;
    while (done < row_bytes) {
      const off_t offset = static_cast<off_t>(rows[i] * static_cast<int64_t>(row_bytes) + done);
      const ssize_t n = pread(fd, dst + done, row_bytes - done, offset);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("short pread from descriptor", std::to_string(fd));
      done += static_cast<size_t>(n);
    }
    dst += row_bytes;
  }
}

// ---- Scratch folder ------------------------------------------------------------------------

// TDRL_BENCH_DIR, else the folder of this executable; checked for room.
fs::path scratch_parent() {
  const char* env = std::getenv("TDRL_BENCH_DIR");
  const fs::path parent = env != nullptr && *env != '\0'
                              ? fs::path(env)
                              : fs::read_symlink("/proc/self/exe").parent_path();
  const int64_t available = free_bytes(parent);
  if (available < kDiskNeeded)
    throw std::runtime_error("bench_memmap: '" + parent.string() + "' has " +
                             std::to_string(available / kMiB) + " MiB free; the benchmark needs " +
                             std::to_string(kDiskNeeded / kMiB) +
                             " MiB (set TDRL_BENCH_DIR to another folder)");
  return parent;
}

/// The scratch folder, created on first use; a function static, so it also goes on exit().
const ScratchDir& scratch() {
  static const ScratchDir dir(scratch_parent(), "bench_memmap");
  return dir;
}

std::string in_scratch(const std::string& name) { return scratch().path() + "/" + name; }

// ---- Inputs, built on first use ------------------------------------------------------------

struct WriteInputs {
  std::vector<std::string> names;     // k0..k9
  std::vector<torch::Tensor> leaves;  // float32 [10000, 64]
  TensorDict td;                      // the leaves, batch [10000]
  std::string raw_meta;               // written by the raw side beside the leaves
};

const WriteInputs& write_inputs() {
  static const WriteInputs in = [] {
    WriteInputs in;
    in.td = TensorDict::empty({kRows});
    std::ostringstream meta;
    meta << "{\"batch_size\": [" << kRows << "], \"leaves\": {";
    for (int i = 0; i < kLeaves; ++i) {
      in.names.push_back("k" + std::to_string(i));
      in.leaves.push_back(torch::rand({kRows, kCols}));
      in.td.set(in.names.back(), in.leaves.back());
      meta << (i ? ", " : "") << "\"" << in.names.back() << "\": {\"dtype\": \"torch.float32\", "
           << "\"shape\": [" << kRows << ", " << kCols << "]}";
    }
    meta << "}}\n";
    in.raw_meta = meta.str();
    return in;
  }();
  return in;
}

/// The folder both MemmapRead sides read: written once by td.memmap, so its pages are cached.
const std::string& read_folder() {
  static const std::string path = [] {
    std::string p = in_scratch("read");
    write_inputs().td.memmap(p);
    return p;
  }();
  return path;
}

/// A folder written by memmap_like and filled with uniform noise in steps of kFillRows rows.
struct Dataset {
  std::string label;  // "64MiB"
  std::string path;
  int64_t rows = 0;

  std::string obs_file() const { return path + "/obs.memmap"; }
  std::string reward_file() const { return path + "/reward.memmap"; }
  std::string meta_file() const { return path + "/meta.json"; }
};

Dataset make_dataset(const std::string& label, int64_t bytes) {
  Dataset ds{label, in_scratch("dataset_" + label), bytes / kRowBytes};
  TensorDict row({{"obs", torch::zeros({kObsDim})}, {"reward", torch::zeros(at::IntArrayRef{})}});
  TensorDict td = row.expand({ds.rows}).memmap_like(ds.path);
  const torch::Tensor obs = td.get("obs");
  const torch::Tensor reward = td.get("reward");
  for (int64_t start = 0; start < ds.rows; start += kFillRows) {
    const int64_t stop = std::min(ds.rows, start + kFillRows);
    obs.slice(0, start, stop).uniform_();
    reward.slice(0, start, stop).uniform_();
  }
  // Written back now, so that no benchmark runs beside the writeback of a gigabyte.
  MemoryMappedTensor::flush(obs);
  MemoryMappedTensor::flush(reward);
  return ds;
}

/// 64 MiB, 256 MiB and 1 GiB, written on first use (1.3 GiB on disk).
const std::vector<Dataset>& datasets() {
  static const std::vector<Dataset> all = [] {
    std::cout << "bench_memmap: writing the 64 MiB, 256 MiB and 1 GiB datasets ..." << std::endl;
    return std::vector<Dataset>{make_dataset("64MiB", 64 * kMiB),
                                make_dataset("256MiB", 256 * kMiB),
                                make_dataset("1GiB", 1024 * kMiB)};
  }();
  return all;
}

const Dataset& gather_dataset() { return datasets().back(); }

/// kIndexPool int64 [256] row indices into the 1 GiB dataset from a generator seeded kSeed.
const std::vector<torch::Tensor>& index_pool() {
  static const std::vector<torch::Tensor> pool = [] {
    std::mt19937_64 rng(kSeed);
    std::uniform_int_distribution<int64_t> row(0, gather_dataset().rows - 1);
    std::vector<torch::Tensor> out;
    for (size_t k = 0; k < kIndexPool; ++k) {
      torch::Tensor idx = torch::empty({kGatherRows}, torch::kLong);
      for (int64_t i = 0; i < kGatherRows; ++i) idx.data_ptr<int64_t>()[i] = row(rng);
      out.push_back(idx);
    }
    return out;
  }();
  return pool;
}

struct MapInputs {
  TensorDict td;    // "x" float32 [4096, 256], batch [4096]
  torch::Tensor x;  // the same tensor
  torch::Tensor w;  // float32 [256, 256], scaled so that tanh does not saturate
};

const MapInputs& map_inputs() {
  static const MapInputs in = [] {
    MapInputs in;
    in.x = torch::randn({kMapRows, kObsDim});
    in.w = torch::randn({kObsDim, kObsDim}) / 16;
    in.td = TensorDict({{"x", in.x}}, {kMapRows});
    return in;
  }();
  return in;
}

/// The CPU-bound work per chunk, the same on both sides.
torch::Tensor map_chunk(torch::Tensor x, const torch::Tensor& w) {
  for (int i = 0; i < kMatmuls; ++i) x = torch::tanh(x.matmul(w));
  return x;
}

// ---- The raw side of each operation --------------------------------------------------------

/// The two mappings a raw load holds.
struct RawDataset {
  std::string meta;
  Mapping obs;
  Mapping reward;
};

RawDataset raw_load(const Dataset& ds) {
  return RawDataset{read_text(ds.meta_file()), Mapping(ds.obs_file()), Mapping(ds.reward_file())};
}

std::pair<torch::Tensor, torch::Tensor> raw_gather(int obs_fd, int reward_fd,
                                                   const torch::Tensor& idx) {
  torch::Tensor obs = torch::empty({kGatherRows, kObsDim});
  torch::Tensor reward = torch::empty({kGatherRows});
  pread_rows(obs_fd, idx, obs);
  pread_rows(reward_fd, idx, reward);
  return {obs, reward};
}

torch::Tensor raw_map(const torch::Tensor& x, const torch::Tensor& w, int workers) {
  const int64_t chunks = (x.size(0) + kMapChunk - 1) / kMapChunk;
  std::vector<torch::Tensor> parts(static_cast<size_t>(chunks));
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < chunks;)
      parts[static_cast<size_t>(i)] = map_chunk(x.slice(0, i * kMapChunk, (i + 1) * kMapChunk), w);
  };
  std::vector<std::thread> threads;
  for (int k = 1; k < workers; ++k) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  return torch::cat(parts, 0);
}

TensorDict td_map(const TensorDict& td, const torch::Tensor& w, int workers) {
  MapOptions options;
  options.num_workers = workers;
  options.chunk_size = kMapChunk;
  return td.map(
      [&w](const TensorDict& chunk) {
        torch::Tensor y = map_chunk(chunk.get("x"), w);
        return TensorDict({{"y", y}}, {y.size(0)});
      },
      options);
}

// Both sides must compute the same thing before either is timed.
void check(bool same, const std::string& what) {
  if (!same) throw std::logic_error("bench_memmap: TensorDict and raw results differ in " + what);
}

// ---- Benchmarks: each operation as a TensorDict / Raw pair ---------------------------------

// MemmapWrite writes into a prefix that does not exist: the previous call's folder is removed
// with the timer paused. MemmapReplace writes over the previous call's folder: memmap writes a
// new folder, renames it into place and removes the old one.
void memmap_td(benchmark::State& state, bool replace) {
  const TensorDict& td = write_inputs().td;
  const std::string prefix = in_scratch(replace ? "replace_td" : "write_td");
  for (auto _ : state) {
    if (!replace) {
      state.PauseTiming();
      fs::remove_all(prefix);
      state.ResumeTiming();
    }
    TensorDict mapped = td.memmap(prefix);
    benchmark::DoNotOptimize(mapped);
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

// The same two cases by hand: a new folder and 11 new files; or the 11 files unlinked and
// created again in the same folder. (Truncating them in place instead would make ext4 start
// their writeback at close, its auto_da_alloc heuristic, which memmap never triggers.)
void memmap_raw(benchmark::State& state, bool replace) {
  const auto& in = write_inputs();
  const std::string dir = in_scratch(replace ? "replace_raw" : "write_raw");
  std::vector<std::string> paths;
  for (const auto& name : in.names) paths.push_back(dir + "/" + name + ".memmap");
  paths.push_back(dir + "/meta.json");
  fs::create_directories(dir);
  for (auto _ : state) {
    if (replace) {
      for (const auto& path : paths) unlink(path.c_str());
    } else {
      state.PauseTiming();
      fs::remove_all(dir);
      state.ResumeTiming();
      if (mkdir(dir.c_str(), 0755) != 0) fail("cannot create", dir);
    }
    for (int i = 0; i < kLeaves; ++i)
      write_file(paths[static_cast<size_t>(i)], in.leaves[static_cast<size_t>(i)].data_ptr(),
                 static_cast<size_t>(kLeafBytes));
    write_file(paths.back(), in.raw_meta.data(), in.raw_meta.size());
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void MemmapWriteTd(benchmark::State& state) { memmap_td(state, /*replace=*/false); }
void MemmapWriteRaw(benchmark::State& state) { memmap_raw(state, /*replace=*/false); }
void MemmapReplaceTd(benchmark::State& state) { memmap_td(state, /*replace=*/true); }
void MemmapReplaceRaw(benchmark::State& state) { memmap_raw(state, /*replace=*/true); }

void MemmapReadTd(benchmark::State& state) {
  const auto& names = write_inputs().names;
  const std::string& folder = read_folder();
  for (auto _ : state) {
    TensorDict td = TensorDict::load_memmap(folder);
    double total = 0;
    for (const auto& name : names) total += td.get(name).sum().item<double>();
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void MemmapReadRaw(benchmark::State& state) {
  const auto& in = write_inputs();
  const std::string& folder = read_folder();
  std::vector<torch::Tensor> buffers;
  for (int i = 0; i < kLeaves; ++i) buffers.push_back(torch::empty({kRows, kCols}));
  for (auto _ : state) {
    for (int i = 0; i < kLeaves; ++i) {
      const std::string path = folder + "/" + in.names[static_cast<size_t>(i)] + ".memmap";
      UniqueFd file(path, O_RDONLY);
      read_exact(file.get(), buffers[static_cast<size_t>(i)].data_ptr(),
                 static_cast<size_t>(kLeafBytes), path);
    }
    double total = 0;
    for (const auto& buffer : buffers) total += buffer.sum().item<double>();
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
  check(torch::equal(buffers[3], in.leaves[3]), "MemmapRead");
}

void load_td(benchmark::State& state, size_t which) {
  const Dataset& ds = datasets()[which];
  time_calls(state, [&] { return TensorDict::load_memmap(ds.path); });
}

void load_raw(benchmark::State& state, size_t which) {
  const Dataset& ds = datasets()[which];
  time_calls(state, [&] { return raw_load(ds); });
}

void LoadMemmap64MiBTd(benchmark::State& state) { load_td(state, 0); }
void LoadMemmap64MiBRaw(benchmark::State& state) { load_raw(state, 0); }
void LoadMemmap256MiBTd(benchmark::State& state) { load_td(state, 1); }
void LoadMemmap256MiBRaw(benchmark::State& state) { load_raw(state, 1); }
void LoadMemmap1GiBTd(benchmark::State& state) { load_td(state, 2); }
void LoadMemmap1GiBRaw(benchmark::State& state) { load_raw(state, 2); }

void Gather256Td(benchmark::State& state) {
  const auto& pool = index_pool();
  TensorDict td = TensorDict::load_memmap(gather_dataset().path);
  size_t k = 0;
  time_calls(state, [&] { return td.index({pool[k++ % kIndexPool]}); });
}

void Gather256Raw(benchmark::State& state) {
  const auto& pool = index_pool();
  const Dataset& ds = gather_dataset();
  UniqueFd obs(ds.obs_file(), O_RDONLY);
  UniqueFd reward(ds.reward_file(), O_RDONLY);
  size_t k = 0;
  time_calls(state, [&] { return raw_gather(obs.get(), reward.get(), pool[k++ % kIndexPool]); });
  const auto rows = raw_gather(obs.get(), reward.get(), pool[0]);
  const TensorDict expected = TensorDict::load_memmap(ds.path).index({pool[0]});
  check(torch::equal(rows.first, expected.get("obs")) &&
            torch::equal(rows.second, expected.get("reward")),
        "Gather256");
}

void LoadGather256Td(benchmark::State& state) {
  const auto& pool = index_pool();
  const std::string& path = gather_dataset().path;
  size_t k = 0;
  time_calls(state, [&] { return TensorDict::load_memmap(path).index({pool[k++ % kIndexPool]}); });
}

void LoadGather256Raw(benchmark::State& state) {
  const auto& pool = index_pool();
  const Dataset& ds = gather_dataset();
  size_t k = 0;
  for (auto _ : state) {
    std::string meta = read_text(ds.meta_file());
    UniqueFd obs(ds.obs_file(), O_RDONLY);
    UniqueFd reward(ds.reward_file(), O_RDONLY);
    auto rows = raw_gather(obs.get(), reward.get(), pool[k++ % kIndexPool]);
    benchmark::DoNotOptimize(meta);
    benchmark::DoNotOptimize(rows);
  }
}

void map_td(benchmark::State& state, int workers) {
  const auto& in = map_inputs();
  time_calls(state, [&] { return td_map(in.td, in.w, workers); });
}

void map_raw(benchmark::State& state, int workers) {
  const auto& in = map_inputs();
  time_calls(state, [&] { return raw_map(in.x, in.w, workers); });
  check(torch::equal(raw_map(in.x, in.w, workers), td_map(in.td, in.w, workers).get("y")), "Map");
}

void Map1WorkerTd(benchmark::State& state) { map_td(state, 1); }
void Map1WorkerRaw(benchmark::State& state) { map_raw(state, 1); }
void Map2WorkersTd(benchmark::State& state) { map_td(state, 2); }
void Map2WorkersRaw(benchmark::State& state) { map_raw(state, 2); }

// ---- Registration and the ratio table ------------------------------------------------------

// Targets from the performance issue.
constexpr double kThroughputTarget = 0.8;  // memmap write and read, against raw
constexpr double kLoadGrowthTarget = 1.5;  // load_memmap time, 1 GiB over 64 MiB (16x the data)
constexpr double kSpeedupTarget = 1.8;     // map, 2 workers over 1, on 2 cores

struct OpPair {
  const char* op;
  int64_t bytes;     // bytes moved per call, shown as MB/s; 0: shown as a time
  double min_ratio;  // target for raw time / tensordict time; 0: none
  bool all_threads;  // map: CPU time of the whole process, not of the calling thread
  void (*tensordict)(benchmark::State&);
  void (*raw)(benchmark::State&);
};

const std::vector<OpPair>& op_pairs() {
  static const std::vector<OpPair> pairs = {
      {"MemmapWrite", kTotalBytes, kThroughputTarget, false, MemmapWriteTd, MemmapWriteRaw},
      {"MemmapReplace", kTotalBytes, kThroughputTarget, false, MemmapReplaceTd, MemmapReplaceRaw},
      {"MemmapRead", kTotalBytes, kThroughputTarget, false, MemmapReadTd, MemmapReadRaw},
      {"LoadMemmap64MiB", 0, 0, false, LoadMemmap64MiBTd, LoadMemmap64MiBRaw},
      {"LoadMemmap256MiB", 0, 0, false, LoadMemmap256MiBTd, LoadMemmap256MiBRaw},
      {"LoadMemmap1GiB", 0, 0, false, LoadMemmap1GiBTd, LoadMemmap1GiBRaw},
      {"Gather256", 0, 0, false, Gather256Td, Gather256Raw},
      {"LoadGather256", 0, 0, false, LoadGather256Td, LoadGather256Raw},
      {"Map1Worker", 0, 0, true, Map1WorkerTd, Map1WorkerRaw},
      {"Map2Workers", 0, 0, true, Map2WorkersTd, Map2WorkersRaw},
  };
  return pairs;
}

// Real time throughout: file I/O and worker threads are not in the calling thread's CPU time.
void register_benchmarks() {
  for (const auto& pair : op_pairs()) {
    const std::string base = std::string("BM_") + pair.op;
    for (const auto& [side, fn] :
         {std::pair{"/TensorDict", pair.tensordict}, std::pair{"/Raw", pair.raw}}) {
      auto* b = benchmark::RegisterBenchmark((base + side).c_str(), fn)
                    ->Unit(benchmark::kMicrosecond)
                    ->UseRealTime();
      if (pair.all_threads) b->MeasureProcessCPUTime();
    }
  }
}

std::string time_str(double ns) {
  if (ns < 1e3) return fixed(ns, 0) + " ns";
  if (ns < 1e6) return fixed(ns / 1e3, 1) + " us";
  if (ns < 1e9) return fixed(ns / 1e6, 1) + " ms";
  return fixed(ns / 1e9, 2) + " s";
}

std::string cell(const Timing& t, int64_t bytes) {
  return bytes > 0 ? fixed(bytes / kMB / (t.real / 1e9), 0) + " MB/s" : time_str(t.real);
}

std::string verdict(bool ok) { return ok ? " ok" : " MISS"; }

// Ratios are raw time / tensordict time: TensorDict's throughput (or speed) as a fraction of
// the raw code's, so higher is better, like the throughput targets. Three decimals, so that a
// ratio just under its target does not print as equal to it.
void print_ratio_table(const RatioReporter& reporter, std::ostream& os) {
  os << "\nTensorDict vs raw POSIX/LibTorch: real time per call (median of repetitions), "
     << "torch::set_num_threads(1); ratio = raw time / tensordict time (higher is better), "
     << "MB = 10^6 bytes\n\n"
     << "| op | tensordict | raw | ratio | cpu ratio | target |\n"
     << "|---|---:|---:|---:|---:|---|\n";
  int missed = 0;
  int measured = 0;
  auto timing = [&](const char* op, const char* side) {
    return reporter.timing(std::string("BM_") + op + side);
  };
  for (const auto& pair : op_pairs()) {
    const Timing td = timing(pair.op, "/TensorDict");
    const Timing raw = timing(pair.op, "/Raw");
    if (td.real <= 0 || raw.real <= 0) continue;
    const double ratio = raw.real / td.real;
    std::string target = "-";
    if (pair.min_ratio > 0) {
      const bool ok = ratio >= pair.min_ratio;
      ++measured;
      missed += ok ? 0 : 1;
      target = ">= " + fixed(pair.min_ratio, 1) + verdict(ok);
    }
    os << "| " << pair.op << " | " << cell(td, pair.bytes) << " | " << cell(raw, pair.bytes)
       << " | " << fixed(ratio, 3) << " | " << fixed(raw.cpu / td.cpu, 2) << " | " << target
       << " |\n";
  }

  // A row of one op's time in two cases (sizes, thread counts): numerator / denominator for
  // TensorDict, against `target` (at most or at least), and for raw code beside it.
  auto scaling_row = [&](const char* label, const char* numerator, const char* denominator,
                         double target, bool at_most) {
    const Timing num_td = timing(numerator, "/TensorDict");
    const Timing den_td = timing(denominator, "/TensorDict");
    const Timing num_raw = timing(numerator, "/Raw");
    const Timing den_raw = timing(denominator, "/Raw");
    if (num_td.real <= 0 || den_td.real <= 0 || num_raw.real <= 0 || den_raw.real <= 0) return;
    const double value = num_td.real / den_td.real;
    const bool ok = at_most ? value <= target : value >= target;
    ++measured;
    missed += ok ? 0 : 1;
    os << "| " << label << " | " << fixed(value, 3) << "x | "
       << fixed(num_raw.real / den_raw.real, 3) << "x | - | - | " << (at_most ? "<= " : ">= ")
       << fixed(target, 1) << verdict(ok) << " |\n";
  };
  // load_memmap reads nothing, so 16x the data must not cost more time.
  scaling_row("LoadMemmap time 1GiB / 64MiB", "LoadMemmap1GiB", "LoadMemmap64MiB",
              kLoadGrowthTarget, /*at_most=*/true);
  scaling_row("Map speed-up 2 workers / 1", "Map1Worker", "Map2Workers", kSpeedupTarget,
              /*at_most=*/false);

  os << "\n" << measured - missed << " of " << measured << " targets met.\n";
  const Timing two_td = timing("Map2Workers", "/TensorDict");
  if (two_td.real > 0)
    os << "Map2Workers/TensorDict kept " << fixed(two_td.cpu / two_td.real, 2)
       << " cores busy on average (process CPU time / real time); a 2x speed-up needs 2 free "
       << "cores.\n";
}

/// Sets OpenBLAS (LibTorch's BLAS on Debian) to one thread, so that map's workers are the only
/// parallelism; torch::set_num_threads does not reach it. Returns its thread count, or -1.
int limit_blas_threads() {
  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(1);
  if (auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads")))
    return get();
  return -1;
}

}  // namespace
}  // namespace tdrl::bench

int main(int argc, char** argv) {
  // One intra-op thread (and one BLAS thread): the two map workers are then the only
  // parallelism, and every other benchmark runs on one core of a small, shared machine.
  torch::set_num_threads(1);
  const int blas_threads = tdrl::bench::limit_blas_threads();
  torch::manual_seed(0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const std::string& dir = tdrl::bench::scratch().path();
  std::cout << "bench_memmap: torch::set_num_threads(1) (intra-op threads: "
            << torch::get_num_threads() << "), OpenBLAS threads: "
            << (blas_threads < 0 ? std::string("not found") : std::to_string(blas_threads))
            << "\nbench_memmap: scratch folder " << dir << " (" << tdrl::bench::filesystem_name(dir)
            << "), removed at exit; the page cache is not dropped: every read is of warm files\n";
  tdrl::bench::register_benchmarks();

  return tdrl::bench::run_and_print_ratio_table(
      [](const tdrl::bench::RatioReporter& r, std::ostream& os) {
        tdrl::bench::print_ratio_table(r, os);
      });
}
