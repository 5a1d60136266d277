#include "tdrl/apps/stop_signal.h"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <string>

#include <tensordict/errors.h>

#include "run/file_util.h"

namespace tdrl::apps {

namespace fs = std::filesystem;
using detail::errno_text;

namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_stop_installed{false};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be lock-free");

void stop_signal_handler(int signal_number) { g_stop_signal.store(signal_number); }

}  // namespace

// ---------------------------------------------------------------- StopSignal

void StopSignal::install() {
  struct sigaction action {};
  action.sa_handler = stop_signal_handler;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND: the handler runs once; the next signal of that kind has its default action.
  action.sa_flags = SA_RESTART | SA_RESETHAND;
  for (int signal_number : {SIGINT, SIGTERM}) {
    if (::sigaction(signal_number, &action, nullptr) != 0) {
      throw std::runtime_error("StopSignal::install: sigaction(" + std::to_string(signal_number) +
                               ") failed: " + errno_text(errno));
    }
  }
  g_stop_installed.store(true);
}

bool StopSignal::requested() { return g_stop_signal.load() != 0; }

int StopSignal::signal_number() { return g_stop_signal.load(); }

void StopSignal::reset() {
  g_stop_signal.store(0);
  if (g_stop_installed.load()) install();
}

}  // namespace tdrl::apps
