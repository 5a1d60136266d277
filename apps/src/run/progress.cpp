#include "tdrl/apps/progress.h"

#include <unistd.h>

#include <algorithm>
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
#include <tensordict/name_table.h>

#include "run/file_util.h"

namespace tdrl::apps {

namespace fs = std::filesystem;

namespace {

using detail::format_duration;
using detail::printf_string;

std::string format_return(double r) {
  if (!std::isfinite(r)) return std::isnan(r) ? "n/a" : (r > 0 ? "inf" : "-inf");
  if (std::fabs(r) >= 10.0) return printf_string("%.1f", r);
  return printf_string("%.3g", r);
}

}  // namespace

// ---------------------------------------------------------------- ProgressDisplay

namespace {

// The modes: the one table that both names them and says what each shows.
struct ProgressMode {
  bool (*bar)();  // whether a bar is drawn
  bool none;      // whether nothing is printed
};
const tensordict::NameTable<ProgressMode>& progress_modes() {
  static const tensordict::NameTable<ProgressMode> modes(
      "mode", {
                  {"auto", {[] { return ::isatty(STDOUT_FILENO) == 1; }, false}},
                  {"bar", {[] { return true; }, false}},
                  {"lines", {[] { return false; }, false}},
                  {"none", {[] { return false; }, true}},
              });
  return modes;
}

}  // namespace

const std::vector<std::string>& progress_mode_names() { return progress_modes().names(); }

ProgressDisplay::ProgressDisplay(const std::string& mode, int64_t total_frames,
                                 std::chrono::duration<double> interval)
    : total_frames_(total_frames), interval_(interval) {
  const ProgressMode& m = progress_modes().at(mode, "ProgressDisplay");
  bar_ = m.bar();
  none_ = m.none;
}

void ProgressDisplay::update(int64_t frames, double fps, double recent_return, double elapsed_s) {
  if (none_) return;
  const bool known_total = total_frames_ > 0;
  const bool reaches = known_total && frames >= total_frames_ && !reached_total_;
  const double gap = bar_ ? 0.1 : interval_.count();
  if (printed_ && !reaches && elapsed_s - last_elapsed_ < gap) return;
  printed_ = true;
  last_elapsed_ = elapsed_s;
  if (reaches) reached_total_ = true;

  const double fraction =
      known_total
          ? std::clamp(static_cast<double>(frames) / static_cast<double>(total_frames_), 0.0, 1.0)
          : 0.0;
  const int percent = static_cast<int>(std::floor(fraction * 100.0));
  const std::string frames_text =
      known_total ? std::to_string(frames) + "/" + std::to_string(total_frames_) + " frames"
                  : std::to_string(frames) + " frames";
  const std::string fps_text =
      (std::isfinite(fps) ? printf_string("%.0f", std::max(fps, 0.0)) : "n/a") + " fps";
  const std::string return_text = "return " + format_return(recent_return);
  std::string eta_text;
  if (known_total) {
    const double remaining = static_cast<double>(std::max<int64_t>(total_frames_ - frames, 0));
    eta_text = " | ETA " + (remaining == 0.0                  ? format_duration(0.0)
                            : (std::isfinite(fps) && fps > 0) ? format_duration(remaining / fps)
                                                              : std::string("n/a"));
  }

  if (bar_) {
    std::string line;
    if (known_total) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(std::lround(fraction * kWidth));
      line = "[" + std::string(filled, '#') + std::string(kWidth - filled, '-') + "] " +
             std::to_string(percent) + "% ";
    }
    line += frames_text + " | " + fps_text + " | " + return_text + eta_text;
    const size_t length = line.size();
    if (length < last_length_) line += std::string(last_length_ - length, ' ');
    last_length_ = length;
    line_open_ = true;
    last_bar_ = line;
    std::cout << '\r' << line << std::flush;
  } else {
    std::string line = frames_text;
    if (known_total) line += " (" + std::to_string(percent) + "%)";
    line += " | " + fps_text + " | " + return_text + " | elapsed " + format_duration(elapsed_s) +
            eta_text;
    std::cout << line << '\n' << std::flush;
  }
}

void ProgressDisplay::message(const std::string& line) {
  if (none_) return;
  if (!bar_ || !line_open_) {
    std::cout << line << '\n' << std::flush;
    return;
  }
  // Over the bar (padded to erase it), then the bar again on the next line.
  std::string text = line;
  if (text.size() < last_length_) text += std::string(last_length_ - text.size(), ' ');
  std::cout << '\r' << text << '\n' << last_bar_ << std::flush;
}

void ProgressDisplay::finish() {
  if (!bar_ || !line_open_) return;
  std::cout << '\n' << std::flush;
  line_open_ = false;
  last_length_ = 0;
}

}  // namespace tdrl::apps
