#include "run/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <system_error>

namespace tdrl::apps::detail {

namespace fs = std::filesystem;

std::string errno_text(int error) { return std::generic_category().message(error); }

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void fsync_path(const fs::path& path, bool is_dir, const std::string& op) {
  int flags = O_RDONLY | O_CLOEXEC | (is_dir ? O_DIRECTORY : 0);
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    throw std::runtime_error(op + ": cannot open " + in_quotes(path.string()) +
                             " to sync it: " + errno_text(errno));
  }
  if (::fsync(fd) != 0 && errno != EINVAL) {
    int error = errno;
    ::close(fd);
    throw std::runtime_error(op + ": cannot sync " + in_quotes(path.string()) + ": " +
                             errno_text(error));
  }
  ::close(fd);
}

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "n/a";
  auto total = static_cast<int64_t>(std::llround(seconds));
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  return buf;
}

}  // namespace tdrl::apps::detail
