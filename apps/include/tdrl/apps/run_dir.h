#pragma once

/// The parts of a training run that touch the file system and the terminal: the run folder,
/// metrics.csv, the learning-curve image, the progress display, atomic checkpoints, and the
/// SIGINT/SIGTERM stop request.
///
/// Errors: file-system failures throw std::runtime_error naming the path and the system's
/// reason; invalid arguments (an unknown mode, keep < 1, an unknown metrics column) throw
/// tensordict::ValueError, which also derives from std::runtime_error, so `catch (const
/// std::runtime_error&)` catches everything thrown here.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tdrl::apps {

/// A run's folder: `<parent>/<name>-<YYYYmmdd-HHMMSS>` (local time; a `-2`, `-3`, ... suffix
/// when taken). Holds config.yaml, metrics.csv, the learning curve, logs and checkpoints/.
///
/// Example: `RunDir run = RunDir::create("runs", "ppo cartpole");` makes
/// `runs/ppo_cartpole-20240501-142233`, and `run.file("metrics.csv")` names a file in it.
class RunDir {
 public:
  /// Creates a new run folder (and `parent`). In `name`, whitespace, '/' and '\' become '_'
  /// (an empty name becomes "run"). Creating the folder is atomic (mkdir), so two runs started
  /// in the same second get different folders. Throws std::runtime_error naming the path when
  /// it cannot be created.
  static RunDir create(const std::string& parent, const std::string& name);
  /// An existing run folder (for --resume and tdrl-eval). Throws std::runtime_error when
  /// `path` is not a folder holding config.yaml ("... is not a run folder: no config.yaml").
  static RunDir open(const std::string& path);

  /// The folder, as given to open() or as `<parent>/<folder name>` from create().
  const std::string& path() const { return path_; }
  /// `path()/name`.
  std::string file(const std::string& name) const;

 private:
  explicit RunDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

/// Writes text to `path` atomically: a temporary file in the same folder, flushed and
/// fsynced, then renamed over `path` (and the folder fsynced, best effort). Readers see the
/// old content or the new one, never a mix. Throws std::runtime_error naming the path on
/// failure (the old file, if any, is left as it was; the temporary file is removed).
void write_file_atomically(const std::string& path, const std::string& content);

/// metrics.csv: one row per log point with fixed columns (the header is written when the
/// file is new or empty; appending to an existing file checks its header equals `columns`,
/// std::runtime_error otherwise). Rows are flushed after each write.
///
/// Cells: a missing value is an empty cell; numbers are written in the shortest form that
/// reads back to the same double (integral values below 1e15 as plain integers, so frame
/// counts read "42000"); NaN is written "nan" and infinities "inf" / "-inf" (all read back by
/// read_metrics). When appending to a file whose last row was cut short by a crash (no final
/// newline), that partial row is dropped first.
///
/// Not thread-safe: one writer per file.
/// Example: `MetricsWriter m(run.file("metrics.csv"), {"frames", "return"});
///           m.write({{"frames", 1000}, {"return", 12.5}});`
class MetricsWriter {
 public:
  /// Throws tensordict::ValueError for no columns, a repeated column, or a column name holding
  /// ',', '"' or a line break; std::runtime_error when the file cannot be opened or its header
  /// differs from `columns` (the message shows both).
  MetricsWriter(const std::string& path, std::vector<std::string> columns);
  /// Appends one row. Throws tensordict::ValueError for a key that is not a column (listing the
  /// columns; nothing is written) and std::runtime_error when the write fails.
  void write(const std::map<std::string, double>& row);
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  std::string path_;
  std::vector<std::string> columns_;
  std::ofstream out_;
};

/// Reads metrics.csv back: one map per row, keyed by the header's column names (empty cells
/// left out; "nan", "inf", "-inf" parsed). An empty file gives no rows. Throws
/// std::runtime_error for a missing file, or a malformed one (a row whose cell count differs
/// from the header's, or a cell that is not a number), naming the path and the line.
std::vector<std::map<std::string, double>> read_metrics(const std::string& path);

/// Writes an SVG learning curve: return against frames, one polyline per series (e.g.
/// "train" and "eval"), with axes, ticks, labels, a legend and `title`; written atomically.
///
/// The image is self-contained (no scripts, fonts or external references) with a viewBox,
/// so it scales. Axis ticks are at 1-2-5 steps; frame ticks read "500", "1k", "2.5M".
/// Points are drawn in the order given (pass them sorted by frames); non-finite points are
/// left out. Series with fewer than one point are skipped (a one-point series also gets a dot
/// marker); an all-empty plot still gets axes. Each series has its own colour (a fixed
/// palette, cycled) and a legend entry. The output depends only on the arguments.
/// Throws std::runtime_error when the file cannot be written.
void write_learning_curve_svg(
    const std::string& path, const std::string& title,
    const std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>>& series);

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
};

/// Checkpoints under `<run>/checkpoints/`: each in its own folder `ckpt-<frames>` (frames
/// zero-padded to 12 digits, so names sort by frames), written into `tmp-...` first, then
/// renamed, then recorded in the file `latest` (written atomically, holding the folder name
/// relative to dir()); older checkpoints beyond `keep` are removed after that. A crash at any
/// point leaves `latest` naming a complete checkpoint (or none).
///
/// Files written by `fill` and the folders are fsynced before the rename. Writing the frames
/// of an existing checkpoint replaces it (on Linux by an atomic exchange of the folders).
/// Stale `tmp-*` folders left by a crash are ignored by latest() and removed by the next
/// write(). One writer per folder (not thread- or process-safe).
/// Example: `CheckpointStore store(run.file("checkpoints"), 2);
///           store.write(frames, [&](const std::string& folder) { save_all(folder); });`
class CheckpointStore {
 public:
  /// `dir` is created by the first write(). Throws tensordict::ValueError when keep < 1.
  explicit CheckpointStore(std::string dir, int keep = 2);
  /// Creates the temporary folder, calls `fill(folder)` to write the files, and commits it.
  /// Returns the committed folder (`dir()/ckpt-<frames>`). When `fill` throws, the temporary
  /// folder is removed and the exception propagates (`latest` unchanged). Throws
  /// tensordict::ValueError when frames < 0, std::runtime_error naming the path when a folder
  /// cannot be created, synced or renamed.
  std::string write(int64_t frames, const std::function<void(const std::string&)>& fill);
  /// The folder `latest` names (`dir()/<name>`), or nullopt when there is none (no `latest`
  /// file, an empty one, a name that is not a plain folder name, or a missing folder).
  std::optional<std::string> latest() const;
  const std::string& dir() const { return dir_; }
  int keep() const { return keep_; }

 private:
  std::string dir_;
  int keep_;
};

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
