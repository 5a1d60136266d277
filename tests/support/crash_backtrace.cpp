// Every test binary prints a backtrace when it crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL), so that
// a crash on a machine without a debugger (scripts/gpu_check.sh's) still says where it happened.
// Off under sanitizers, which print their own report.

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TDRL_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TDRL_TEST_SANITIZED 1
#endif

namespace {

#ifndef TDRL_TEST_SANITIZED
void print_backtrace_and_die(int sig) {
  // Only async-signal-safe calls: write and backtrace_symbols_fd (backtrace was warmed up).
  const char* head = "\ntest binary: fatal signal ";
  (void)!::write(STDERR_FILENO, head, std::strlen(head));
  const char* name = ::strsignal(sig);
  (void)!::write(STDERR_FILENO, name, std::strlen(name));
  (void)!::write(STDERR_FILENO, "; backtrace:\n", 13);
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  // SA_RESETHAND restored the default action: the binary dies of the signal as before.
  ::raise(sig);
}

const bool crash_backtrace_installed = [] {
  void* warm_up[1];
  ::backtrace(warm_up, 1);  // loads the unwinder now, not inside the handler
  struct sigaction action {};
  action.sa_handler = print_backtrace_and_die;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::sigaction(sig, &action, nullptr);
  return true;
}();
#endif

}  // namespace
