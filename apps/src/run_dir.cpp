#include "tdrl/apps/run_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
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

namespace tdrl::apps {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int error) { return std::generic_category().message(error); }

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

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

/// The folder of `path` ("." for a bare file name).
fs::path parent_of(const fs::path& path) {
  fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

/// Makes a rename or a new entry in `dir` durable. Best effort: some file systems refuse to
/// fsync folders, and the data is already safe in the files themselves.
void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

/// fsyncs a file or folder; throws naming `op` and the path on failure.
void fsync_path(const fs::path& path, bool is_dir, const std::string& op) {
  int flags = O_RDONLY | O_CLOEXEC | (is_dir ? O_DIRECTORY : 0);
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    throw std::runtime_error(op + ": cannot open " + in_quotes(path.string()) +
                             " to sync it: " + errno_text(errno));
  }
  if (::fsync(fd) != 0 && errno != EINVAL) {
    int error = errno;
    ::close(fd);
    throw std::runtime_error(op + ": cannot sync " + in_quotes(path.string()) + ": " +
                             errno_text(error));
  }
  ::close(fd);
}

void write_all(int fd, const std::string& content) {
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category());
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
}

// ---- metrics cells ----

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

// ---- SVG ----

struct Axis {
  double lo = 0.0;
  double hi = 1.0;
  double step = 0.2;
  std::vector<double> ticks;
};

/// A 1-2-5 step giving about `target` intervals over [min, max], and the tick values.
Axis nice_axis(double min, double max, int target) {
  if (!(max > min)) {
    double d = std::fabs(min) > 0 ? std::fabs(min) * 0.5 : 1.0;
    min -= d;
    max += d;
  }
  double raw = (max - min) / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double factor = norm <= 1.0 ? 1.0 : norm <= 2.0 ? 2.0 : norm <= 5.0 ? 5.0 : 10.0;
  Axis axis;
  axis.step = factor * mag;
  axis.lo = std::floor(min / axis.step + 1e-9) * axis.step;
  axis.hi = std::ceil(max / axis.step - 1e-9) * axis.step;
  if (!(axis.hi > axis.lo)) axis.hi = axis.lo + axis.step;
  const int count = static_cast<int>(std::lround((axis.hi - axis.lo) / axis.step));
  for (int i = 0; i <= count; ++i) {
    double v = axis.lo + i * axis.step;
    if (std::fabs(v) < axis.step * 1e-9) v = 0.0;
    axis.ticks.push_back(v);
  }
  return axis;
}

std::string trim_decimals(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

/// 500, 1k, 1.5k, 2M, 1.25G.
std::string format_frames(double v) {
  const double a = std::fabs(v);
  const char* suffix = "";
  double scaled = v;
  if (a >= 1e9) {
    scaled = v / 1e9;
    suffix = "G";
  } else if (a >= 1e6) {
    scaled = v / 1e6;
    suffix = "M";
  } else if (a >= 1e3) {
    scaled = v / 1e3;
    suffix = "k";
  }
  return trim_decimals(printf_string("%.3f", scaled)) + suffix;
}

/// A return tick with as many decimals as the step needs.
std::string format_tick(double v, double step) {
  int decimals =
      step >= 1.0 ? 0 : std::min(9, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  char format[16];
  std::snprintf(format, sizeof(format), "%%.%df", decimals);
  std::string s = printf_string(format, v);
  if (s.find_first_not_of("-0.") == std::string::npos) s = "0";
  return s;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string coord(double v) { return printf_string("%.2f", v); }

// ---- progress ----

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "n/a";
  auto total = static_cast<int64_t>(std::llround(seconds));
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  return buf;
}

std::string format_return(double r) {
  if (!std::isfinite(r)) return std::isnan(r) ? "n/a" : (r > 0 ? "inf" : "-inf");
  if (std::fabs(r) >= 10.0) return printf_string("%.1f", r);
  return printf_string("%.3g", r);
}

// ---- checkpoints ----

constexpr const char* kCkptPrefix = "ckpt-";
constexpr const char* kTmpPrefix = "tmp-";
constexpr const char* kOldPrefix = "old-";
constexpr const char* kLatestFile = "latest";

std::string ckpt_name(int64_t frames) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "ckpt-%012lld", static_cast<long long>(frames));
  return buf;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::optional<int64_t> parse_ckpt_name(const std::string& name) {
  if (!starts_with(name, kCkptPrefix)) return std::nullopt;
  const std::string digits = name.substr(std::string(kCkptPrefix).size());
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  int64_t frames = 0;
  auto result = std::from_chars(digits.data(), digits.data() + digits.size(), frames);
  if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) return std::nullopt;
  return frames;
}

/// fsyncs every file and folder under `root`, then `root`.
void sync_tree(const fs::path& root) {
  const std::string op = "CheckpointStore::write";
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    std::error_code ec;
    if (entry.is_symlink(ec)) continue;
    if (entry.is_regular_file(ec)) {
      fsync_path(entry.path(), false, op);
    } else if (entry.is_directory(ec)) {
      fsync_path(entry.path(), true, op);
    }
  }
  fsync_path(root, true, op);
}

/// Removes the leftovers of an interrupted write: `tmp-*` and `old-*` folders, temporary
/// `latest` files.
void remove_stale(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (starts_with(name, kTmpPrefix) || starts_with(name, kOldPrefix) ||
        starts_with(name, std::string(".") + kLatestFile + ".tmp-")) {
      stale.push_back(it->path());
    }
  }
  for (const auto& path : stale) fs::remove_all(path, ec);
}

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_stop_installed{false};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be lock-free");

void stop_signal_handler(int signal_number) { g_stop_signal.store(signal_number); }

}  // namespace

// ---------------------------------------------------------------- RunDir

RunDir RunDir::create(const std::string& parent, const std::string& name) {
  std::string clean = name;
  for (char& c : clean) {
    if (c == '/' || c == '\\' || std::isspace(static_cast<unsigned char>(c))) c = '_';
  }
  if (clean.empty()) clean = "run";

  std::error_code ec;
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw std::runtime_error("RunDir::create: cannot create the parent folder " +
                               in_quotes(parent) + ": " + ec.message());
    }
  }
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  const std::string base = clean + "-" + stamp;

  for (int attempt = 1; attempt <= 10000; ++attempt) {
    std::string folder = attempt == 1 ? base : base + "-" + std::to_string(attempt);
    fs::path path = parent.empty() ? fs::path(folder) : fs::path(parent) / folder;
    if (::mkdir(path.c_str(), 0755) == 0) return RunDir(path.string());
    if (errno != EEXIST) {
      throw std::runtime_error("RunDir::create: cannot create the run folder " +
                               in_quotes(path.string()) + ": " + errno_text(errno));
    }
  }
  throw std::runtime_error("RunDir::create: every folder name " + in_quotes(base) +
                           "[-N] up to -10000 is taken in " + in_quotes(parent) +
                           "; clean the folder or pick another run name");
}

RunDir RunDir::open(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    throw std::runtime_error("RunDir::open: " + in_quotes(path) +
                             " is not a run folder: no such folder");
  }
  if (!fs::is_regular_file(fs::path(path) / "config.yaml", ec)) {
    throw std::runtime_error("RunDir::open: " + in_quotes(path) +
                             " is not a run folder: no config.yaml (pass the folder that "
                             "tdrl-train created, e.g. runs/<name>-<date>-<time>)");
  }
  return RunDir(path);
}

std::string RunDir::file(const std::string& name) const {
  return (fs::path(path_) / name).string();
}

// ---------------------------------------------------------------- write_file_atomically

void write_file_atomically(const std::string& path, const std::string& content) {
  static std::atomic<uint64_t> counter{0};
  const fs::path target(path);
  const fs::path dir = parent_of(target);
  const fs::path tmp = dir / ("." + target.filename().string() + ".tmp-" +
                              std::to_string(::getpid()) + "-" + std::to_string(counter++));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("write_file_atomically: cannot create a temporary file next to " +
                             in_quotes(path) + ": " + errno_text(errno));
  }
  std::string failed;
  try {
    write_all(fd, content);
  } catch (const std::system_error& e) {
    failed = std::string("write failed: ") + e.code().message();
  }
  if (failed.empty() && ::fsync(fd) != 0) failed = "fsync failed: " + errno_text(errno);
  if (::close(fd) != 0 && failed.empty()) failed = "close failed: " + errno_text(errno);
  if (failed.empty() && ::rename(tmp.c_str(), target.c_str()) != 0) {
    failed = "rename failed: " + errno_text(errno);
  }
  if (!failed.empty()) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("write_file_atomically: cannot write " + in_quotes(path) + ": " +
                             failed + " (the old file is unchanged)");
  }
  fsync_dir(dir);
}

// ---------------------------------------------------------------- MetricsWriter

MetricsWriter::MetricsWriter(const std::string& path, std::vector<std::string> columns)
    : path_(path), columns_(std::move(columns)) {
  if (columns_.empty()) {
    throw tensordict::ValueError("MetricsWriter: no columns for " + in_quotes(path_) +
                                 "; pass the column names, e.g. {\"frames\", \"return\"}");
  }
  for (size_t i = 0; i < columns_.size(); ++i) {
    const std::string& c = columns_[i];
    if (c.find_first_of(",\"\r\n") != std::string::npos) {
      throw tensordict::ValueError("MetricsWriter: column name " + in_quotes(c) +
                                   " holds ',', '\"' or a line break; rename it");
    }
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
    if (std::find(columns_.begin(), columns_.end(), entry.first) == columns_.end()) {
      throw tensordict::ValueError("MetricsWriter::write: " + in_quotes(entry.first) +
                                   " is not a column of " + in_quotes(path_) +
                                   "; the columns are " + list_names(columns_));
    }
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

// ---------------------------------------------------------------- learning curve

void write_learning_curve_svg(
    const std::string& path, const std::string& title,
    const std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>>& series) {
  static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                        "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  constexpr double kWidth = 800, kHeight = 480;
  constexpr double kLeft = 80, kRight = 640, kTop = 48, kBottom = 410;

  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  bool any = false;
  for (const auto& s : series) {
    for (const auto& point : s.second) {
      if (!std::isfinite(point.first) || !std::isfinite(point.second)) continue;
      if (!any) {
        x_min = x_max = point.first;
        y_min = y_max = point.second;
        any = true;
      }
      x_min = std::min(x_min, point.first);
      x_max = std::max(x_max, point.first);
      y_min = std::min(y_min, point.second);
      y_max = std::max(y_max, point.second);
    }
  }
  if (!any) {
    x_max = 1.0;
    y_max = 1.0;
  }
  const Axis xa = nice_axis(x_min, x_max, 6);
  const Axis ya = nice_axis(y_min, y_max, 5);
  auto sx = [&](double x) { return kLeft + (x - xa.lo) / (xa.hi - xa.lo) * (kRight - kLeft); };
  auto sy = [&](double y) { return kBottom - (y - ya.lo) / (ya.hi - ya.lo) * (kBottom - kTop); };

  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << " " << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<title>" << xml_escape(title) << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << coord((kLeft + kRight) / 2) << "\" y=\"28\" text-anchor=\"middle\" "
      << "font-size=\"16\">" << xml_escape(title) << "</text>\n";

  svg << "<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n";
  for (double t : xa.ticks) {
    svg << "<line x1=\"" << coord(sx(t)) << "\" y1=\"" << coord(kTop) << "\" x2=\"" << coord(sx(t))
        << "\" y2=\"" << coord(kBottom) << "\"/>\n";
  }
  for (double t : ya.ticks) {
    svg << "<line x1=\"" << coord(kLeft) << "\" y1=\"" << coord(sy(t)) << "\" x2=\""
        << coord(kRight) << "\" y2=\"" << coord(sy(t)) << "\"/>\n";
  }
  svg << "</g>\n";
  svg << "<rect x=\"" << coord(kLeft) << "\" y=\"" << coord(kTop) << "\" width=\""
      << coord(kRight - kLeft) << "\" height=\"" << coord(kBottom - kTop)
      << "\" fill=\"none\" stroke=\"#333333\"/>\n";

  svg << "<g fill=\"#333333\">\n";
  for (double t : xa.ticks) {
    svg << "<text x=\"" << coord(sx(t)) << "\" y=\"" << coord(kBottom + 18)
        << "\" text-anchor=\"middle\">" << format_frames(t) << "</text>\n";
  }
  for (double t : ya.ticks) {
    svg << "<text x=\"" << coord(kLeft - 8) << "\" y=\"" << coord(sy(t) + 4)
        << "\" text-anchor=\"end\">" << format_tick(t, ya.step) << "</text>\n";
  }
  svg << "<text x=\"" << coord((kLeft + kRight) / 2) << "\" y=\"" << coord(kBottom + 44)
      << "\" text-anchor=\"middle\">frames</text>\n";
  svg << "<text x=\"20\" y=\"" << coord((kTop + kBottom) / 2)
      << "\" text-anchor=\"middle\" transform=\"rotate(-90 20 " << coord((kTop + kBottom) / 2)
      << ")\">return</text>\n";
  svg << "</g>\n";

  size_t drawn = 0;
  for (const auto& s : series) {
    std::string points;
    size_t count = 0;
    double last_x = 0, last_y = 0;
    for (const auto& point : s.second) {
      if (!std::isfinite(point.first) || !std::isfinite(point.second)) continue;
      last_x = sx(point.first);
      last_y = sy(point.second);
      if (count++ > 0) points += ' ';
      points += coord(last_x) + "," + coord(last_y);
    }
    if (count == 0) continue;
    const char* color = kColors[drawn % (sizeof(kColors) / sizeof(kColors[0]))];
    svg << "<polyline fill=\"none\" stroke=\"" << color
        << "\" stroke-width=\"1.5\" stroke-linejoin=\"round\" points=\"" << points << "\"/>\n";
    if (count == 1) {
      svg << "<circle cx=\"" << coord(last_x) << "\" cy=\"" << coord(last_y) << "\" r=\"3\" fill=\""
          << color << "\"/>\n";
    }
    const double ly = kTop + 10 + 20.0 * static_cast<double>(drawn);
    svg << "<line x1=\"" << coord(kRight + 16) << "\" y1=\"" << coord(ly) << "\" x2=\""
        << coord(kRight + 40) << "\" y2=\"" << coord(ly) << "\" stroke=\"" << color
        << "\" stroke-width=\"2\"/>\n"
        << "<text x=\"" << coord(kRight + 46) << "\" y=\"" << coord(ly + 4) << "\">"
        << xml_escape(s.first) << "</text>\n";
    ++drawn;
  }
  svg << "</svg>\n";
  write_file_atomically(path, svg.str());
}

// ---------------------------------------------------------------- ProgressDisplay

ProgressDisplay::ProgressDisplay(const std::string& mode, int64_t total_frames,
                                 std::chrono::duration<double> interval)
    : total_frames_(total_frames), interval_(interval) {
  if (mode == "auto") {
    bar_ = ::isatty(STDOUT_FILENO) == 1;
  } else if (mode == "bar") {
    bar_ = true;
  } else if (mode == "none") {
    none_ = true;
  } else if (mode != "lines") {
    throw tensordict::ValueError("ProgressDisplay: unknown mode " + in_quotes(mode) +
                                 "; valid modes are ['auto', 'bar', 'lines', 'none']");
  }
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
    std::cout << '\r' << line << std::flush;
  } else {
    std::string line = frames_text;
    if (known_total) line += " (" + std::to_string(percent) + "%)";
    line += " | " + fps_text + " | " + return_text + " | elapsed " + format_duration(elapsed_s) +
            eta_text;
    std::cout << line << '\n' << std::flush;
  }
}

void ProgressDisplay::finish() {
  if (!bar_ || !line_open_) return;
  std::cout << '\n' << std::flush;
  line_open_ = false;
  last_length_ = 0;
}

// ---------------------------------------------------------------- CheckpointStore

CheckpointStore::CheckpointStore(std::string dir, int keep) : dir_(std::move(dir)), keep_(keep) {
  if (keep_ < 1) {
    throw tensordict::ValueError(
        "CheckpointStore: keep must be >= 1 (the newest checkpoint is "
        "always kept), got " +
        std::to_string(keep_));
  }
}

std::string CheckpointStore::write(int64_t frames,
                                   const std::function<void(const std::string&)>& fill) {
  if (frames < 0) {
    throw tensordict::ValueError("CheckpointStore::write: frames must be >= 0, got " +
                                 std::to_string(frames));
  }
  const fs::path dir(dir_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error("CheckpointStore::write: cannot create " + in_quotes(dir_) + ": " +
                             ec.message());
  }
  remove_stale(dir);

  const std::string name = ckpt_name(frames);
  const std::string pid = std::to_string(::getpid());
  const fs::path final_path = dir / name;
  const fs::path tmp = dir / (kTmpPrefix + name + "-" + pid);
  if (!fs::create_directory(tmp, ec) || ec) {
    throw std::runtime_error("CheckpointStore::write: cannot create the temporary folder " +
                             in_quotes(tmp.string()) + ": " + ec.message());
  }
  try {
    fill(tmp.string());
    sync_tree(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }

  // Commit. The folder `latest` may name is replaced atomically when it already exists.
  fs::path leftover;
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    int error = errno;
    bool committed = false;
    if (error == ENOTEMPTY || error == EEXIST || error == EISDIR || error == ENOTDIR) {
#ifdef __linux__
      if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_path.c_str(), RENAME_EXCHANGE) == 0) {
        leftover = tmp;
        committed = true;
      }
#endif
      if (!committed) {
        const fs::path old = dir / (kOldPrefix + name + "-" + pid);
        if (::rename(final_path.c_str(), old.c_str()) == 0) {
          if (::rename(tmp.c_str(), final_path.c_str()) == 0) {
            leftover = old;
            committed = true;
          } else {
            error = errno;
            ::rename(old.c_str(), final_path.c_str());
          }
        } else {
          error = errno;
        }
      }
    }
    if (!committed) {
      fs::remove_all(tmp, ec);
      throw std::runtime_error("CheckpointStore::write: cannot rename " + in_quotes(tmp.string()) +
                               " to " + in_quotes(final_path.string()) + ": " + errno_text(error));
    }
  }
  fsync_dir(dir);
  write_file_atomically((dir / kLatestFile).string(), name + "\n");
  if (!leftover.empty()) fs::remove_all(leftover, ec);

  // Keep the newest `keep` checkpoints, counting the one just written.
  std::vector<std::pair<int64_t, fs::path>> others;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    if (entry == name) continue;
    std::optional<int64_t> f = parse_ckpt_name(entry);
    if (f) others.emplace_back(*f, it->path());
  }
  std::sort(others.begin(), others.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = static_cast<size_t>(keep_ - 1); i < others.size(); ++i) {
    fs::remove_all(others[i].second, ec);
  }
  return final_path.string();
}

std::optional<std::string> CheckpointStore::latest() const {
  std::ifstream in(fs::path(dir_) / kLatestFile);
  if (!in) return std::nullopt;
  std::string name;
  std::getline(in, name);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return std::nullopt;
  }
  const fs::path path = fs::path(dir_) / name;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return std::nullopt;
  return path.string();
}

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
