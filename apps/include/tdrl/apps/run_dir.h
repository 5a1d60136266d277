#pragma once

/// A training run's folder, and the atomic file write every part of a run uses.
///
/// Errors: file-system failures throw std::runtime_error naming the path and the system's
/// reason; invalid arguments throw tensordict::ValueError (also a std::runtime_error).

#include <string>
#include <utility>

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

}  // namespace tdrl::apps
