// A fresh folder under the system temporary directory for tests that write files, removed
// with everything in it when the test ends.

#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace tensordict::testing {

/// Creates `<tmp>/tdrl_<suite>_<test>_<pid>_<n>` on construction, removes it on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<uint64_t> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "tdrl";
    if (info) name += std::string("_") + info->test_suite_name() + "_" + info->name();
    for (char& c : name)
      if (c == '/') c = '_';  // parameterised test names contain '/'
    name += "_" + std::to_string(getpid()) + "_" + std::to_string(counter.fetch_add(1));
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  /// `<folder>/<name>` as a string, the form the memmap API takes.
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// The whole content of a file as bytes (empty when it cannot be read).
inline std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Replaces the content of a file.
inline void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace tensordict::testing
