#pragma once

/// metrics.csv: one row of numbers per log point, written and read back.
///
/// Errors: file-system failures throw std::runtime_error naming the path and the system's
/// reason; invalid arguments throw tensordict::ValueError (also a std::runtime_error).

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace tdrl::apps {

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

/// Cuts metrics.csv back to the rows of at most `frames` frames (the "frames" column), keeping
/// the header and every kept row's text as it was, and drops a last row cut short by a kill (no
/// newline, or fewer cells than the header): what a run resumed from the checkpoint at `frames`
/// writes again. Rewrites the file atomically; nothing happens when it does not exist. Throws
/// std::runtime_error when it has no "frames" column or cannot be rewritten.
void truncate_metrics(const std::string& path, int64_t frames);

}  // namespace tdrl::apps
