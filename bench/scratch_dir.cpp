#include "scratch_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace tdrl::bench {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail_on_path(const std::string& what, const std::string& path) {
  throw std::runtime_error("ScratchDir: " + what + " '" + path + "': " + std::strerror(errno));
}

/// The folder the emergency paths (a signal, std::terminate) remove; empty once removed.
struct Cleanup {
  std::mutex mutex;
  std::string path;
};

// Never destroyed: the signal watcher may use it while static destructors run.
Cleanup& cleanup() {
  static Cleanup* state = new Cleanup;
  return *state;
}

int signal_pipe_write = -1;  // the signal handler's only state

void remove_scratch() {
  auto& state = cleanup();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.path.empty()) return;
  // Retried: a benchmark still running on another thread may be adding files to it.
  std::error_code ec;
  for (int attempt = 0; attempt < 5 && fs::exists(state.path, ec); ++attempt)
    fs::remove_all(state.path, ec);
  state.path.clear();
}

void on_signal(int sig) {
  const auto byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = write(signal_pipe_write, &byte, 1);
}

// Runs on its own thread, so that the removal is not done inside a signal handler.
void watch_signals(int read_fd) {
  unsigned char sig = 0;
  while (read(read_fd, &sig, 1) < 0 && errno == EINTR) {
  }
  remove_scratch();
  static const char kMessage[] = "interrupted: scratch folder removed\n";
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  _exit(128 + sig);
}

[[noreturn]] void on_terminate() {
  if (const auto error = std::current_exception()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::cerr << "uncaught exception: " << e.what() << "\n";
    } catch (...) {
      std::cerr << "uncaught exception of unknown type\n";
    }
  }
  remove_scratch();
  std::abort();
}

void install_emergency_cleanup() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) fail_on_path("cannot create a pipe for", "signal handling");
  signal_pipe_write = fds[1];
  std::thread(watch_signals, fds[0]).detach();
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &action, nullptr);
  std::set_terminate(on_terminate);
}

}  // namespace

ScratchDir::ScratchDir(const fs::path& parent, const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(cleanup().mutex);
    if (!cleanup().path.empty())
      throw std::logic_error("ScratchDir: only one per process; '" + cleanup().path + "' exists");
    std::string folder = (parent / (name + ".XXXXXX")).string();
    if (mkdtemp(folder.data()) == nullptr) fail_on_path("cannot create", folder);
    path_ = folder;
    cleanup().path = path_;
  }
  static std::once_flag installed;
  std::call_once(installed, install_emergency_cleanup);
}

ScratchDir::~ScratchDir() { remove_scratch(); }

int64_t free_bytes(const fs::path& path) {
  struct statvfs vfs {};
  if (statvfs(path.c_str(), &vfs) != 0)
    fail_on_path("cannot query the filesystem of", path.string());
  return static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
}

std::string filesystem_name(const std::string& path) {
  struct statfs info {};
  if (statfs(path.c_str(), &info) != 0) return "unknown filesystem";
  switch (static_cast<uint64_t>(info.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs: reads and writes never reach a disk";
    case 0x794C7630:
      return "overlayfs";
    default: {
      std::ostringstream os;
      os << "filesystem type 0x" << std::hex << info.f_type;
      return os.str();
    }
  }
}

}  // namespace tdrl::bench
