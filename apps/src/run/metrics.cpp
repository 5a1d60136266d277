#include "tdrl/apps/metrics.h"

#include "tdrl/apps/run_dir.h"

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

#include "run/file_util.h"

namespace tdrl::apps {

namespace fs = std::filesystem;
using detail::errno_text;
using detail::in_quotes;

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

std::string list_names(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "]";
}

std::string format_cell(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return "0";
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, result.ptr);
}

bool parse_cell(const std::string& cell, double* value) {
  const char* first = cell.data();
  const char* last = first + cell.size();
  auto result = std::from_chars(first, last, *value);
  return result.ec == std::errc() && result.ptr == last;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    if (comma == std::string::npos) {
      cells.push_back(line.substr(start));
      return cells;
    }
    cells.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

void strip_cr(std::string* line) {
  if (!line->empty() && line->back() == '\r') line->pop_back();
}

/// Drops a last line that has no final newline (a row cut short by a crash).
void drop_partial_last_line(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size == 0) return;
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  uintmax_t end = size;
  char last = 0;
  in.seekg(static_cast<std::streamoff>(end - 1));
  in.get(last);
  if (last == '\n') return;
  // Scan back in chunks for the last newline.
  constexpr uintmax_t kChunk = 4096;
  uintmax_t keep = 0;
  while (end > 0) {
    uintmax_t begin = end > kChunk ? end - kChunk : 0;
    std::string chunk(static_cast<size_t>(end - begin), '\0');
    in.seekg(static_cast<std::streamoff>(begin));
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    size_t pos = chunk.rfind('\n');
    if (pos != std::string::npos) {
      keep = begin + pos + 1;
      break;
    }
    end = begin;
  }
  in.close();
  fs::resize_file(path, keep, ec);
  if (ec) {
    throw std::runtime_error("MetricsWriter: cannot drop the partial last row of " +
                             in_quotes(path) + ": " + ec.message());
  }
}

}  // namespace

// ---------------------------------------------------------------- MetricsWriter

MetricsWriter::MetricsWriter(const std::string& path, std::vector<std::string> columns)
    : path_(path), columns_(std::move(columns)) {
  TDRL_CHECK(!columns_.empty(), tensordict::ValueError, "MetricsWriter: no columns for ",
             in_quotes(path_), "; pass the column names, e.g. {\"frames\", \"return\"}");
  for (size_t i = 0; i < columns_.size(); ++i) {
    const std::string& c = columns_[i];
    TDRL_CHECK(c.find_first_of(",\"\r\n") == std::string::npos, tensordict::ValueError,
               "MetricsWriter: column name ", in_quotes(c),
               " holds ',', '\"' or a line break; rename it");
    if (std::find(columns_.begin(), columns_.begin() + static_cast<long>(i), c) !=
        columns_.begin() + static_cast<long>(i)) {
      throw tensordict::ValueError("MetricsWriter: column " + in_quotes(c) + " is given twice in " +
                                   list_names(columns_));
    }
  }
  const std::string header = join(columns_, ",");

  drop_partial_last_line(path_);
  std::error_code ec;
  const bool has_header = fs::exists(path_, ec) && fs::file_size(path_, ec) > 0 && !ec;
  if (has_header) {
    std::ifstream in(path_);
    std::string first;
    std::getline(in, first);
    strip_cr(&first);
    if (first != header) {
      throw std::runtime_error("MetricsWriter: " + in_quotes(path_) + " has the columns " +
                               list_names(split_csv_line(first)) + "; expected " +
                               list_names(columns_) +
                               " (write the metrics of this configuration to a new run folder)");
    }
  }
  out_.open(path_, std::ios::out | std::ios::app | std::ios::binary);
  if (!out_) {
    throw std::runtime_error("MetricsWriter: cannot open " + in_quotes(path_) +
                             " for appending: " + errno_text(errno));
  }
  if (!has_header) {
    out_ << header << '\n';
    out_.flush();
    if (!out_) {
      throw std::runtime_error("MetricsWriter: cannot write the header of " + in_quotes(path_));
    }
  }
}

void MetricsWriter::write(const std::map<std::string, double>& row) {
  for (const auto& entry : row) {
    TDRL_CHECK(std::find(columns_.begin(), columns_.end(), entry.first) != columns_.end(),
               tensordict::ValueError, "MetricsWriter::write: ", in_quotes(entry.first),
               " is not a column of ", in_quotes(path_), "; the columns are ",
               list_names(columns_));
  }
  std::string line;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (i > 0) line += ',';
    auto it = row.find(columns_[i]);
    if (it != row.end()) line += format_cell(it->second);
  }
  line += '\n';
  out_ << line;
  out_.flush();
  if (!out_) {
    throw std::runtime_error("MetricsWriter::write: cannot append a row to " + in_quotes(path_) +
                             " (disk full or file removed?)");
  }
}

std::vector<std::map<std::string, double>> read_metrics(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("read_metrics: cannot open " + in_quotes(path) + ": " +
                             errno_text(errno));
  }
  std::vector<std::map<std::string, double>> rows;
  std::string line;
  if (!std::getline(in, line)) return rows;
  strip_cr(&line);
  const std::vector<std::string> columns = split_csv_line(line);
  int64_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    strip_cr(&line);
    const std::vector<std::string> cells = split_csv_line(line);
    if (cells.size() != columns.size()) {
      throw std::runtime_error("read_metrics: " + in_quotes(path) + " line " +
                               std::to_string(number) + " has " + std::to_string(cells.size()) +
                               " cells; the header has " + std::to_string(columns.size()));
    }
    std::map<std::string, double> row;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (cells[i].empty()) continue;
      double value = 0.0;
      if (!parse_cell(cells[i], &value)) {
        throw std::runtime_error("read_metrics: " + in_quotes(path) + " line " +
                                 std::to_string(number) + " column " + in_quotes(columns[i]) +
                                 ": " + in_quotes(cells[i]) + " is not a number");
      }
      row[columns[i]] = value;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void truncate_metrics(const std::string& path, int64_t frames) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::stringstream content;
  content << in.rdbuf();
  in.close();
  const std::string text = content.str();
  // Complete lines only: an unterminated last line was cut short.
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    const auto end = text.find('\n', start);
    if (end == std::string::npos) break;
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (lines.empty()) return;
  std::string header = lines.front();
  strip_cr(&header);
  const auto columns = split_csv_line(header);
  const auto at = std::find(columns.begin(), columns.end(), "frames");
  if (at == columns.end())
    throw std::runtime_error("truncate_metrics: " + in_quotes(path) +
                             " has no 'frames' column; its columns are " + list_names(columns));
  const auto frames_column = static_cast<size_t>(at - columns.begin());
  std::string kept = lines.front() + "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string line = lines[i];
    strip_cr(&line);
    const auto cells = split_csv_line(line);
    double row_frames = 0.0;
    if (cells.size() != columns.size() || !parse_cell(cells[frames_column], &row_frames)) continue;
    if (row_frames <= static_cast<double>(frames)) kept += lines[i] + "\n";
  }
  write_file_atomically(path, kept);
}

}  // namespace tdrl::apps
