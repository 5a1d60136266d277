#pragma once

// File-system and formatting helpers shared by the run's files (run folder, metrics,
// learning curve, progress, checkpoints) and the Trainer.

#include <filesystem>
#include <string>

namespace tdrl::apps::detail {

/// The system's message for an errno value.
std::string errno_text(int error);
/// 's' in single quotes, as messages name paths.
std::string in_quotes(const std::string& s);
/// Makes a rename or a new entry in `dir` durable. Best effort: some file systems refuse to
/// fsync folders, and the data is already safe in the files themselves.
void fsync_dir(const std::filesystem::path& dir);
/// fsyncs a file or folder; throws std::runtime_error naming `op` and the path on failure.
void fsync_path(const std::filesystem::path& path, bool is_dir, const std::string& op);
/// printf of one double.
std::string printf_string(const char* format, double value);
/// "1:02:03" (hours unbounded), "n/a" for a negative or non-finite duration.
std::string format_duration(double seconds);

}  // namespace tdrl::apps::detail
