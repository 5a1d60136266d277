#pragma once

// The drawing surface of the run's plots: the learning curve lays itself out once on a Canvas,
// and each output format is a Canvas. SvgCanvas writes SVG elements; RasterCanvas paints
// anti-aliased pixels (and text from a built-in 5x7 bitmap font) and encodes them as PNG.
// Coordinates are in the plot's logical units (pixels of the SVG's viewBox), y pointing down.

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tdrl::apps::detail {

using Point = std::pair<double, double>;

/// Where a text's x coordinate sits: at its start, middle or end.
enum class Anchor { kStart, kMiddle, kEnd };

/// Colours are "#rrggbb".
class Canvas {
 public:
  virtual ~Canvas() = default;
  virtual void line(double x1, double y1, double x2, double y2, const std::string& color,
                    double width) = 0;
  /// An open path; `opacity` applies to the whole line (where it crosses itself it is not
  /// darker).
  virtual void polyline(const std::vector<Point>& points, const std::string& color, double width,
                        double opacity) = 0;
  /// A filled polygon (even-odd), e.g. a band.
  virtual void polygon(const std::vector<Point>& points, const std::string& color,
                       double opacity) = 0;
  virtual void circle(double cx, double cy, double r, const std::string& color) = 0;
  virtual void rect_outline(double x, double y, double width, double height,
                            const std::string& color) = 0;
  /// `y` is the baseline. `vertical`: rotated a quarter turn counter-clockwise about (x, y),
  /// reading upwards.
  virtual void text(double x, double y, const std::string& text, double size, Anchor anchor,
                    const std::string& color, bool vertical = false) = 0;
};

/// SVG text with a viewBox of width x height, a <title> and a white background.
class SvgCanvas : public Canvas {
 public:
  SvgCanvas(double width, double height, const std::string& title);
  void line(double x1, double y1, double x2, double y2, const std::string& color,
            double width) override;
  void polyline(const std::vector<Point>& points, const std::string& color, double width,
                double opacity) override;
  void polygon(const std::vector<Point>& points, const std::string& color, double opacity) override;
  void circle(double cx, double cy, double r, const std::string& color) override;
  void rect_outline(double x, double y, double width, double height,
                    const std::string& color) override;
  void text(double x, double y, const std::string& text, double size, Anchor anchor,
            const std::string& color, bool vertical) override;
  /// The document, closed.
  std::string str() const;

 private:
  std::ostringstream svg_;
};

/// RGB pixels of (width x height) logical units times `scale`, white at first.
class RasterCanvas : public Canvas {
 public:
  RasterCanvas(double width, double height, double scale);
  void line(double x1, double y1, double x2, double y2, const std::string& color,
            double width) override;
  void polyline(const std::vector<Point>& points, const std::string& color, double width,
                double opacity) override;
  void polygon(const std::vector<Point>& points, const std::string& color, double opacity) override;
  void circle(double cx, double cy, double r, const std::string& color) override;
  void rect_outline(double x, double y, double width, double height,
                    const std::string& color) override;
  void text(double x, double y, const std::string& text, double size, Anchor anchor,
            const std::string& color, bool vertical) override;

  /// The image as a PNG file (8-bit RGB, zlib-compressed).
  std::string png() const;

 private:
  struct Rgb {
    double r, g, b;
  };
  static Rgb parse_color(const std::string& color);
  // Blends `color` over the pixels of the box [x0, x1) x [y0, y1) with alpha
  // coverage(x, y) * opacity, coverage in [0, 1] from the pixel centre.
  template <class Coverage>
  void paint(int64_t x0, int64_t y0, int64_t x1, int64_t y1, const Rgb& color, double opacity,
             Coverage coverage);
  void fill_block(double x, double y, double size, const Rgb& color);

  int64_t width_;
  int64_t height_;
  double scale_;
  std::vector<double> pixels_;  // RGB in [0, 1], row-major
};

}  // namespace tdrl::apps::detail
