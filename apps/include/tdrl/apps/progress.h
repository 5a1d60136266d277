#pragma once

/// The terminal display of a training run.
///
/// Errors: file-system failures throw std::runtime_error naming the path and the system's
/// reason; invalid arguments throw tensordict::ValueError (also a std::runtime_error).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tdrl::apps {

/// The modes ProgressDisplay takes (logger.progress): "auto", "bar", "lines", "none".
const std::vector<std::string>& progress_mode_names();

/// The terminal display: on a TTY (mode "auto" or "bar") a one-line progress bar redrawn in
/// place ("[#####-----] 42% 42000/100000 frames | 5234 fps | return 123.4 | ETA 0:01:23");
/// otherwise (mode "lines", or "auto" without a TTY) one plain line every `interval`;
/// "none" prints nothing. Writes to stdout (std::cout).
///
/// "auto" checks isatty(STDOUT_FILENO); "bar" draws the bar even when stdout is not a TTY.
/// Lines read "42000/100000 frames (42%) | 5234 fps | return 123.4 | elapsed 0:00:08 |
/// ETA 0:01:23". A NaN return prints "return n/a"; the ETA is (total - frames) / fps and
/// prints "ETA n/a" when fps is not positive. `total_frames` <= 0 means unknown: no bar,
/// percentage or ETA.
///
/// Pacing uses the `elapsed_s` given to update(): the first update prints; after that, lines
/// print when `interval` has passed since the last one and the bar redraws when 0.1 s has;
/// the first update that reaches `total_frames` always prints. Not thread-safe.
class ProgressDisplay {
 public:
  /// Throws tensordict::ValueError for a mode other than "auto", "bar", "lines", "none".
  ProgressDisplay(const std::string& mode, int64_t total_frames,
                  std::chrono::duration<double> interval);
  /// Updates the display; `recent_return` may be NaN when no episode ended yet.
  void update(int64_t frames, double fps, double recent_return, double elapsed_s);
  /// Prints `line` on a line of its own, above the bar (which is redrawn below it) or between
  /// the periodic lines; nothing in mode "none". For events such as evaluations.
  void message(const std::string& line);
  /// Ends the bar's line (a newline) so later output starts on a fresh line. Does nothing in
  /// the other modes, before the first update, or when called again.
  void finish();
  bool is_bar() const { return bar_; }

 private:
  bool bar_ = false;
  bool none_ = false;
  int64_t total_frames_ = 0;
  std::chrono::duration<double> interval_;
  double last_elapsed_ = 0.0;
  bool printed_ = false;
  bool reached_total_ = false;
  bool line_open_ = false;
  size_t last_length_ = 0;
  std::string last_bar_;  // the bar as last drawn, redrawn after a message
};

}  // namespace tdrl::apps
