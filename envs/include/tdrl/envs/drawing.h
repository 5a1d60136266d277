#pragma once

/// Drawings: pictures as lists of shapes, painted by cairo (Debian's libcairo2) through one
/// routine to an SVG document, a PNG image or an RGB frame tensor. The classic-control envs
/// draw their frames with it (render()), and the apps their learning curves: one maintained
/// drawing library for every picture tdrl makes.

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/types.h>

namespace tdrl::envs::drawing {

using Point = std::pair<double, double>;

/// Where a text's x coordinate sits: at its start, middle or end.
enum class Anchor { kStart, kMiddle, kEnd };

// The shapes, in logical units with y pointing down. Colours are "#rrggbb"; widths and sizes
// are in logical units.
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
/// A filled polygon (even-odd), e.g. a band, a cart, a pole.
struct Polygon {
  std::vector<Point> points;
  std::string color;
  double opacity;
};
/// A filled disc.
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

/// A picture of width x height logical units on `background`, its shapes painted in order.
struct Drawing {
  double width = 0;
  double height = 0;
  std::string title;
  std::vector<Shape> shapes;
  std::string background = "#ffffff";
};

/// Whether this build draws (it was configured with cairo); when false every function below
/// throws std::runtime_error saying so.
bool available();

/// An SVG document of the drawing's size in pixels (text as glyph outlines, so it shows the same
/// without the fonts). Throws tensordict::ValueError for a colour that is not "#rrggbb",
/// std::runtime_error when cairo fails (naming its status) or the build has no cairo.
std::string to_svg(const Drawing& drawing);
/// An 8-bit RGB PNG of the drawing at `scale` pixels per unit. Throws as to_svg.
std::string to_png(const Drawing& drawing, double scale);
/// The drawing as an RGB frame: uint8 `[height, width, 3]` on the CPU, the drawing's
/// width x height units stretched over width x height pixels (anti-aliased). Throws as to_svg,
/// and tensordict::ValueError for a size below 1 pixel.
torch::Tensor to_rgb(const Drawing& drawing, int64_t width, int64_t height);
/// The same frame written into `out` (height * width * 3 bytes, row-major RGB): for callers
/// filling a batch of frames in place. Throws as to_rgb.
void to_rgb(const Drawing& drawing, int64_t width, int64_t height, uint8_t* out);

}  // namespace tdrl::envs::drawing
