#include "tdrl/apps/learning_curve.h"

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

#include "run/drawing.h"
#include "run/file_util.h"

namespace tdrl::apps {

namespace fs = std::filesystem;
using detail::in_quotes;

namespace {

using detail::printf_string;

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

}  // namespace

// ---------------------------------------------------------------- learning curve

namespace detail {

Drawing learning_curve_drawing(const std::string& title, const std::vector<CurveSeries>& series,
                               const std::string& y_label) {
  constexpr double kWidth = 800, kHeight = 480;
  detail::Drawing drawing{kWidth, kHeight, title, {}};
  auto& shapes = drawing.shapes;
  static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                        "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  constexpr double kLeft = 80, kRight = 640, kTop = 48, kBottom = 410;
  const std::string ink = "#333333";
  for (const auto& s : series)
    TDRL_CHECK(s.band.empty() || s.band.size() == s.points.size(), tensordict::ValueError,
               "write_learning_curve: series ", in_quotes(s.name), " has ",
               std::to_string(s.band.size()), " band values for ", std::to_string(s.points.size()),
               " points; give one (low, high) per point or none");

  // The data range over every finite point and band edge (a unit box when there is none),
  // padded by 5% so that no line runs along the frame, rounded out to tick values.
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  bool any = false;
  auto include = [&](double x, double y) {
    if (!std::isfinite(x) || !std::isfinite(y)) return;
    if (!any) {
      x_min = x_max = x;
      y_min = y_max = y;
      any = true;
    }
    x_min = std::min(x_min, x);
    x_max = std::max(x_max, x);
    y_min = std::min(y_min, y);
    y_max = std::max(y_max, y);
  };
  for (const auto& s : series) {
    for (size_t i = 0; i < s.points.size(); ++i) {
      const auto& [x, y] = s.points[i];
      include(x, y);
      if (!s.band.empty()) {
        include(x, s.band[i].first);
        include(x, s.band[i].second);
      }
    }
  }
  if (!any) {
    x_max = 1.0;
    y_max = 1.0;
  }
  const double pad = 0.05 * (y_max > y_min ? y_max - y_min : std::max(std::fabs(y_max), 1.0));
  const Axis xa = nice_axis(x_min, x_max, 6);
  const Axis ya = nice_axis(y_min - pad, y_max + pad, 5);
  auto sx = [&](double x) { return kLeft + (x - xa.lo) / (xa.hi - xa.lo) * (kRight - kLeft); };
  auto sy = [&](double y) { return kBottom - (y - ya.lo) / (ya.hi - ya.lo) * (kBottom - kTop); };
  auto scaled = [&](const std::vector<std::pair<double, double>>& pts) {
    std::vector<detail::Point> out;
    for (const auto& [x, y] : pts) out.emplace_back(sx(x), sy(y));
    return out;
  };

  // The title, grid lines at the ticks, then the frame.
  shapes.push_back(Text{(kLeft + kRight) / 2, 28, title, 16, Anchor::kMiddle, ink});
  for (double t : xa.ticks) shapes.push_back(Line{sx(t), kTop, sx(t), kBottom, "#e5e5e5", 1});
  for (double t : ya.ticks) shapes.push_back(Line{kLeft, sy(t), kRight, sy(t), "#e5e5e5", 1});
  shapes.push_back(RectOutline{kLeft, kTop, kRight - kLeft, kBottom - kTop, ink});

  // Tick labels and axis titles.
  for (double t : xa.ticks)
    shapes.push_back(Text{sx(t), kBottom + 18, format_frames(t), 12, Anchor::kMiddle, ink});
  for (double t : ya.ticks)
    shapes.push_back(Text{kLeft - 8, sy(t) + 4, format_tick(t, ya.step), 12, Anchor::kEnd, ink});
  shapes.push_back(Text{(kLeft + kRight) / 2, kBottom + 44, "frames", 12, Anchor::kMiddle, ink});
  shapes.push_back(
      Text{20, (kTop + kBottom) / 2, y_label, 12, Anchor::kMiddle, ink, /*vertical=*/true});

  // Each series: its band, its raw line (faint when smoothed), the smoothed line, the markers,
  // and its legend entry.
  size_t palette = 0;
  size_t legend = 0;
  for (const auto& s : series) {
    std::vector<std::pair<double, double>> pts;
    std::vector<std::pair<double, double>> band;
    for (size_t i = 0; i < s.points.size(); ++i) {
      if (!std::isfinite(s.points[i].first) || !std::isfinite(s.points[i].second)) continue;
      pts.push_back(s.points[i]);
      if (s.band.empty()) continue;
      // A non-finite edge of the band shrinks to the line there.
      const auto [lo, hi] = s.band[i];
      band.emplace_back(std::isfinite(lo) ? lo : s.points[i].second,
                        std::isfinite(hi) ? hi : s.points[i].second);
    }
    if (pts.empty()) continue;
    const std::string color =
        s.color.empty() ? kColors[palette++ % (sizeof(kColors) / sizeof(kColors[0]))] : s.color;
    if (!band.empty() && pts.size() > 1) {
      std::vector<detail::Point> outline;
      for (size_t i = 0; i < pts.size(); ++i)
        outline.emplace_back(sx(pts[i].first), sy(band[i].second));
      for (size_t i = pts.size(); i-- > 0;)
        outline.emplace_back(sx(pts[i].first), sy(band[i].first));
      shapes.push_back(Polygon{outline, color, 0.15});
    }
    if (s.smooth > 1 && pts.size() > 1) {
      shapes.push_back(Polyline{scaled(pts), color, s.width * 2 / 3, 0.3});
      std::vector<std::pair<double, double>> avg;
      double sum = 0;
      for (size_t i = 0; i < pts.size(); ++i) {
        sum += pts[i].second;
        if (i >= static_cast<size_t>(s.smooth)) sum -= pts[i - s.smooth].second;
        const size_t n = std::min(i + 1, static_cast<size_t>(s.smooth));
        avg.emplace_back(pts[i].first, sum / static_cast<double>(n));
      }
      shapes.push_back(Polyline{scaled(avg), color, s.width * 4 / 3, 1.0, s.dashed});
    } else {
      shapes.push_back(Polyline{scaled(pts), color, s.width, 1.0, s.dashed});
    }
    if (s.markers || pts.size() == 1) {
      for (const auto& [x, y] : pts) shapes.push_back(Circle{sx(x), sy(y), 3, color});
    }
    if (s.name.empty()) continue;
    std::string label = s.name;
    if (s.smooth > 1) label += " (mean of " + std::to_string(s.smooth) + ")";
    const double ly = kTop + 10 + 20.0 * static_cast<double>(legend++);
    shapes.push_back(Polyline{{{kRight + 16, ly}, {kRight + 40, ly}}, color, 2, 1.0, s.dashed});
    shapes.push_back(Text{kRight + 46, ly + 4, label, 12, Anchor::kStart, ink});
  }
  return drawing;
}

}  // namespace detail

bool learning_curves_available() { return envs::drawing::available(); }

void write_learning_curve_svg(const std::string& path, const std::string& title,
                              const std::vector<CurveSeries>& series, const std::string& y_label) {
  write_file_atomically(path,
                        detail::to_svg(detail::learning_curve_drawing(title, series, y_label)));
}

void write_learning_curve_png(const std::string& path, const std::string& title,
                              const std::vector<CurveSeries>& series, const std::string& y_label) {
  write_file_atomically(
      path, detail::to_png(detail::learning_curve_drawing(title, series, y_label), 2.0));
}

}  // namespace tdrl::apps
