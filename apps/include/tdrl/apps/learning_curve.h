#pragma once

/// The learning-curve images of a run (SVG and PNG), drawn with cairo.
///
/// Errors: file-system failures throw std::runtime_error naming the path and the system's
/// reason; invalid arguments throw tensordict::ValueError (also a std::runtime_error); in a build
/// without cairo (learning_curves_available() false) both writers throw std::runtime_error saying
/// so.

#include <string>
#include <utility>
#include <vector>

namespace tdrl::apps {

/// One series of a learning curve: points (frames, value), sorted by frames.
struct CurveSeries {
  /// Its legend entry; empty: none (e.g. one thin line per seed).
  std::string name;
  std::vector<std::pair<double, double>> points;
  /// When not empty (one (low, high) per point): a shaded band, e.g. value +- the standard
  /// deviation over an evaluation's episodes, or the interquartile range over seeds.
  std::vector<std::pair<double, double>> band = {};
  /// A dot at every point (evaluations are few and each is a measurement).
  bool markers = false;
  /// When > 1: the line is the moving average over this many points (trailing), drawn over
  /// the raw points in a faint line; for noisy per-batch returns.
  int smooth = 0;
  /// "#rrggbb"; empty: the next colour of the palette.
  std::string color = {};
  /// The line's width in pixels of the SVG.
  double width = 1.5;
  /// A dashed line (a target, a reference).
  bool dashed = false;
};

/// Whether this build draws learning curves: it was configured with cairo (TDRL_WITH_CAIRO, on
/// by default; scripts/setup.sh installs it).
bool learning_curves_available();

/// Writes an SVG learning curve: `y_label` against frames, one line per series, with axes,
/// ticks, labels, a legend and `title`; written atomically.
///
/// The image is 800 x 480 pixels, self-contained (no scripts or external references; text is
/// drawn as glyph outlines, so it looks the same without the font). The value axis is padded by
/// 5% of the data's range on each side before its ticks are chosen, so no line runs along the
/// frame. Axis ticks are at 1-2-5 steps; frame ticks read "500", "1k", "2.5M". Non-finite points
/// are left out; series without a point are skipped (a one-point series gets a dot); an all-empty
/// plot still gets axes. Each series without a colour of its own takes the next of a fixed
/// palette (cycled); each named series gets a legend entry. Text that is not valid UTF-8 has its
/// invalid bytes drawn as '?'. The output depends only on the arguments (and the installed font).
/// Throws tensordict::ValueError when a band does not have one (low, high) per point or a colour is
/// not "#rrggbb", std::runtime_error when the file cannot be written.
void write_learning_curve_svg(const std::string& path, const std::string& title,
                              const std::vector<CurveSeries>& series,
                              const std::string& y_label = "return");

/// The same learning curve as an 8-bit RGB PNG of 1600 x 960 pixels (the SVG at twice its size),
/// for viewers that do not show SVG; written atomically. Throws as write_learning_curve_svg.
void write_learning_curve_png(const std::string& path, const std::string& title,
                              const std::vector<CurveSeries>& series,
                              const std::string& y_label = "return");

}  // namespace tdrl::apps
