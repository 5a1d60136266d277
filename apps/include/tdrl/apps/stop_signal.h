#pragma once

/// SIGINT/SIGTERM as a request to stop after the current batch.
///
/// Errors: file-system failures throw std::runtime_error naming the path and the system's
/// reason; invalid arguments throw tensordict::ValueError (also a std::runtime_error).

namespace tdrl::apps {

/// SIGINT/SIGTERM handling: install() makes both set a flag instead of killing the process
/// (a second signal of the same kind restores the default action, so a stuck run can still be
/// interrupted). requested() reads the flag.
///
/// The handler only stores the signal number in a lock-free std::atomic<int> (async-signal-
/// safe); the handler is installed with SA_RESETHAND, so after the first SIGINT the next one
/// terminates the process as usual. requested() may be called from any thread.
class StopSignal {
 public:
  /// Installs the handlers for SIGINT and SIGTERM (again: re-arms them). Throws
  /// std::runtime_error when sigaction fails.
  static void install();
  static bool requested();
  /// The signal number received last (0 when none).
  static int signal_number();
  /// Clears the flag and, when install() was called before, re-arms the handlers (tests).
  static void reset();
};

}  // namespace tdrl::apps
