#pragma once

// The drawing of the run's plots: the learning curve lays itself out once as a Drawing (a list
// of shapes in logical units, y pointing down), and cairo renders it, through one painting
// routine, to an SVG document and to a PNG image. The Drawing is what tests read for the layout
// (which shapes, which labels); the files are cairo's.

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <tdrl/apps/learning_curve.h>

namespace tdrl::apps::detail {

using Point = std::pair<double, double>;

/// Where a text's x coordinate sits: at its start, middle or end.
enum class Anchor { kStart, kMiddle, kEnd };

// The shapes. Colours are "#rrggbb"; widths and sizes are in logical units.
struct Line {
  double x1, y1, x2, y2;
  std::string color;
  double width;
};
/// An open path; `opacity` applies to the whole line (where it crosses itself it is not
/// darker).
struct Polyline {
  std::vector<Point> points;
  std::string color;
  double width;
  double opacity;
  bool dashed = false;
};
/// A filled polygon (even-odd), e.g. a band.
struct Polygon {
  std::vector<Point> points;
  std::string color;
  double opacity;
};
struct Circle {
  double cx, cy, r;
  std::string color;
};
struct RectOutline {
  double x, y, width, height;
  std::string color;
};
/// `y` is the baseline. `vertical`: rotated a quarter turn counter-clockwise about (x, y),
/// reading upwards.
struct Text {
  double x, y;
  std::string text;
  double size;
  Anchor anchor;
  std::string color;
  bool vertical = false;
};
using Shape = std::variant<Line, Polyline, Polygon, Circle, RectOutline, Text>;

/// A picture of width x height logical units on white, its shapes painted in order.
struct Drawing {
  double width = 0;
  double height = 0;
  std::string title;
  std::vector<Shape> shapes;
};

/// An SVG document of the drawing's size in pixels (text as glyph outlines, so it shows the same
/// without the fonts). Throws tensordict::ValueError for a colour that is not "#rrggbb",
/// std::runtime_error when cairo fails (naming its status) or the build has no cairo
/// (learning_curves_available() false).
std::string to_svg(const Drawing& drawing);
/// An 8-bit RGB PNG of the drawing at `scale` pixels per unit. Throws as to_svg.
std::string to_png(const Drawing& drawing, double scale);

/// The learning curve of write_learning_curve_svg/png, laid out on 800 x 480 units. Throws
/// tensordict::ValueError when a band does not have one (low, high) per point.
Drawing learning_curve_drawing(const std::string& title, const std::vector<CurveSeries>& series,
                               const std::string& y_label);

}  // namespace tdrl::apps::detail
