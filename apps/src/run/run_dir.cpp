#include "tdrl/apps/run_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <system_error>

#include <tensordict/errors.h>

#include "run/file_util.h"

namespace tdrl::apps {

namespace fs = std::filesystem;
using detail::errno_text;
using detail::fsync_dir;
using detail::in_quotes;

namespace {

fs::path parent_of(const fs::path& path) {
  fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

void write_all(int fd, const std::string& content) {
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category());
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

// ---------------------------------------------------------------- RunDir

RunDir RunDir::create(const std::string& parent, const std::string& name) {
  std::string clean = name;
  for (char& c : clean) {
    if (c == '/' || c == '\\' || std::isspace(static_cast<unsigned char>(c))) c = '_';
  }
  if (clean.empty()) clean = "run";

  std::error_code ec;
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw std::runtime_error("RunDir::create: cannot create the parent folder " +
                               in_quotes(parent) + ": " + ec.message());
    }
  }
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  const std::string base = clean + "-" + stamp;

  for (int attempt = 1; attempt <= 10000; ++attempt) {
    std::string folder = attempt == 1 ? base : base + "-" + std::to_string(attempt);
    fs::path path = parent.empty() ? fs::path(folder) : fs::path(parent) / folder;
    if (::mkdir(path.c_str(), 0755) == 0) return RunDir(path.string());
    if (errno != EEXIST) {
      throw std::runtime_error("RunDir::create: cannot create the run folder " +
                               in_quotes(path.string()) + ": " + errno_text(errno));
    }
  }
  throw std::runtime_error("RunDir::create: every folder name " + in_quotes(base) +
                           "[-N] up to -10000 is taken in " + in_quotes(parent) +
                           "; clean the folder or pick another run name");
}

RunDir RunDir::open(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    throw std::runtime_error("RunDir::open: " + in_quotes(path) +
                             " is not a run folder: no such folder");
  }
  if (!fs::is_regular_file(fs::path(path) / "config.yaml", ec)) {
    throw std::runtime_error("RunDir::open: " + in_quotes(path) +
                             " is not a run folder: no config.yaml (pass the folder that "
                             "tdrl-train created, e.g. runs/<name>-<date>-<time>)");
  }
  return RunDir(path);
}

std::string RunDir::file(const std::string& name) const {
  return (fs::path(path_) / name).string();
}

// ---------------------------------------------------------------- write_file_atomically

void write_file_atomically(const std::string& path, const std::string& content) {
  static std::atomic<uint64_t> counter{0};
  const fs::path target(path);
  const fs::path dir = parent_of(target);
  const fs::path tmp = dir / ("." + target.filename().string() + ".tmp-" +
                              std::to_string(::getpid()) + "-" + std::to_string(counter++));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("write_file_atomically: cannot create a temporary file next to " +
                             in_quotes(path) + ": " + errno_text(errno));
  }
  std::string failed;
  try {
    write_all(fd, content);
  } catch (const std::system_error& e) {
    failed = std::string("write failed: ") + e.code().message();
  }
  if (failed.empty() && ::fsync(fd) != 0) failed = "fsync failed: " + errno_text(errno);
  if (::close(fd) != 0 && failed.empty()) failed = "close failed: " + errno_text(errno);
  if (failed.empty() && ::rename(tmp.c_str(), target.c_str()) != 0) {
    failed = "rename failed: " + errno_text(errno);
  }
  if (!failed.empty()) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("write_file_atomically: cannot write " + in_quotes(path) + ": " +
                             failed + " (the old file is unchanged)");
  }
  fsync_dir(dir);
}

}  // namespace tdrl::apps
