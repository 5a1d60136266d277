// A scratch folder for the files a benchmark writes, removed on every way out of the program.

#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace tdrl::bench {

/// A new folder `<parent>/<name>.XXXXXX` (mkdtemp), removed with everything in it when this
/// object goes, on SIGINT, SIGTERM or SIGHUP (by a watcher thread, after which the process
/// exits with 128 + the signal number) and on std::terminate (an uncaught exception, which is
/// printed first). One per process. Throws std::runtime_error when the folder cannot be made.
///
/// Example:
/// ```
/// static const ScratchDir dir(build_folder, "bench_memmap");  // also removed by exit()
/// td.memmap(dir.path() + "/run");
/// ```
class ScratchDir {
 public:
  ScratchDir(const std::filesystem::path& parent, const std::string& name);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Bytes an unprivileged user may still write under `path`; throws std::runtime_error when
/// the filesystem cannot be queried.
int64_t free_bytes(const std::filesystem::path& path);

/// The kind of filesystem holding `path` ("ext4", "tmpfs", ...), for the report.
std::string filesystem_name(const std::string& path);

}  // namespace tdrl::bench
