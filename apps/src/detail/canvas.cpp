// The plot renderers (see canvas.h): SVG elements, and an anti-aliased RGB raster written as
// PNG.

#include "detail/canvas.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <variant>

#include <tensordict/errors.h>

#include "detail/file_util.h"

namespace tdrl::apps::detail {

namespace {

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

const char* anchor_name(Anchor anchor) {
  switch (anchor) {
    case Anchor::kMiddle:
      return "middle";
    case Anchor::kEnd:
      return "end";
    default:
      return "start";
  }
}

std::string points_attribute(const std::vector<Point>& points) {
  std::string out;
  for (const auto& [x, y] : points) out += (out.empty() ? "" : " ") + coord(x) + "," + coord(y);
  return out;
}

// A 5x7 bitmap font for the printable ASCII characters (32-126): seven rows per glyph, the
// leftmost of the five columns in bit 4. The rows sit on the baseline; other characters are
// drawn as '?'.
constexpr int kGlyphWidth = 5;
constexpr int kGlyphHeight = 7;
constexpr std::array<std::array<uint8_t, kGlyphHeight>, 95> kGlyphs = {{
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // ' '
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04},  // '!'
    {0x0A, 0x0A, 0x0A, 0x00, 0x00, 0x00, 0x00},  // '"'
    {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A},  // '#'
    {0x04, 0x0F, 0x14, 0x0E, 0x05, 0x1E, 0x04},  // '$'
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03},  // '%'
    {0x0C, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0D},  // '&'
    {0x0C, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00},  // '\''
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02},  // '('
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08},  // ')'
    {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00},  // '*'
    {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00},  // '+'
    {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08},  // ','
    {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00},  // '-'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C},  // '.'
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00},  // '/'
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E},  // '0'
    {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E},  // '1'
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F},  // '2'
    {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E},  // '3'
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02},  // '4'
    {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E},  // '5'
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E},  // '6'
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},  // '7'
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E},  // '8'
    {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C},  // '9'
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00},  // ':'
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x04, 0x08},  // ';'
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02},  // '<'
    {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00},  // '='
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08},  // '>'
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04},  // '?'
    {0x0E, 0x11, 0x01, 0x0D, 0x15, 0x15, 0x0E},  // '@'
    {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11},  // 'A'
    {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E},  // 'B'
    {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E},  // 'C'
    {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C},  // 'D'
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F},  // 'E'
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10},  // 'F'
    {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F},  // 'G'
    {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11},  // 'H'
    {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E},  // 'I'
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C},  // 'J'
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11},  // 'K'
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F},  // 'L'
    {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11},  // 'M'
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11},  // 'N'
    {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E},  // 'O'
    {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10},  // 'P'
    {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D},  // 'Q'
    {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11},  // 'R'
    {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E},  // 'S'
    {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},  // 'T'
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E},  // 'U'
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04},  // 'V'
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A},  // 'W'
    {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11},  // 'X'
    {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04},  // 'Y'
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F},  // 'Z'
    {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E},  // '['
    {0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00},  // '\\'
    {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E},  // ']'
    {0x04, 0x0A, 0x11, 0x00, 0x00, 0x00, 0x00},  // '^'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F},  // '_'
    {0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00},  // '`'
    {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F},  // 'a'
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E},  // 'b'
    {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E},  // 'c'
    {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F},  // 'd'
    {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E},  // 'e'
    {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08},  // 'f'
    {0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // 'g'
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11},  // 'h'
    {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E},  // 'i'
    {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0C},  // 'j'
    {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12},  // 'k'
    {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E},  // 'l'
    {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11},  // 'm'
    {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11},  // 'n'
    {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E},  // 'o'
    {0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10},  // 'p'
    {0x00, 0x00, 0x0D, 0x13, 0x0F, 0x01, 0x01},  // 'q'
    {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10},  // 'r'
    {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E},  // 's'
    {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06},  // 't'
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D},  // 'u'
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04},  // 'v'
    {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A},  // 'w'
    {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11},  // 'x'
    {0x00, 0x00, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // 'y'
    {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F},  // 'z'
    {0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02},  // '{'
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},  // '|'
    {0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08},  // '}'
    {0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00},  // '~'
}};

const std::array<uint8_t, kGlyphHeight>& glyph(char c) {
  const auto code = static_cast<unsigned char>(c);
  return kGlyphs[code >= 32 && code <= 126 ? code - 32 : '?' - 32];
}

double distance_to_segment(double px, double py, double x1, double y1, double x2, double y2) {
  const double dx = x2 - x1, dy = y2 - y1;
  const double length2 = dx * dx + dy * dy;
  const double t =
      length2 > 0 ? std::clamp(((px - x1) * dx + (py - y1) * dy) / length2, 0.0, 1.0) : 0.0;
  return std::hypot(px - (x1 + t * dx), py - (y1 + t * dy));
}

void append_chunk(std::string& png, const char* type, const std::string& data) {
  const auto put32 = [&png](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) png += static_cast<char>((v >> shift) & 0xff);
  };
  put32(static_cast<uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  png += body;
  put32(static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

// ---- SVG ----------------------------------------------------------------------------------------

struct SvgWriter {
  std::ostringstream& svg;

  void operator()(const Line& l) const {
    svg << "<line x1=\"" << coord(l.x1) << "\" y1=\"" << coord(l.y1) << "\" x2=\"" << coord(l.x2)
        << "\" y2=\"" << coord(l.y2) << "\" stroke=\"" << l.color << "\" stroke-width=\"" << l.width
        << "\"/>\n";
  }
  void operator()(const Polyline& p) const {
    svg << "<polyline fill=\"none\" stroke=\"" << p.color << "\" stroke-width=\"" << p.width
        << "\" stroke-opacity=\"" << p.opacity << "\" stroke-linejoin=\"round\" points=\""
        << points_attribute(p.points) << "\"/>\n";
  }
  void operator()(const Polygon& p) const {
    svg << "<polygon fill=\"" << p.color << "\" fill-opacity=\"" << p.opacity
        << "\" stroke=\"none\" points=\"" << points_attribute(p.points) << "\"/>\n";
  }
  void operator()(const Circle& c) const {
    svg << "<circle cx=\"" << coord(c.cx) << "\" cy=\"" << coord(c.cy) << "\" r=\"" << c.r
        << "\" fill=\"" << c.color << "\"/>\n";
  }
  void operator()(const RectOutline& r) const {
    svg << "<rect x=\"" << coord(r.x) << "\" y=\"" << coord(r.y) << "\" width=\"" << coord(r.width)
        << "\" height=\"" << coord(r.height) << "\" fill=\"none\" stroke=\"" << r.color << "\"/>\n";
  }
  void operator()(const Text& t) const {
    svg << "<text x=\"" << coord(t.x) << "\" y=\"" << coord(t.y) << "\"";
    if (t.anchor != Anchor::kStart) svg << " text-anchor=\"" << anchor_name(t.anchor) << "\"";
    if (t.size != 12) svg << " font-size=\"" << t.size << "\"";
    svg << " fill=\"" << t.color << "\"";
    if (t.vertical) svg << " transform=\"rotate(-90 " << coord(t.x) << " " << coord(t.y) << ")\"";
    svg << ">" << xml_escape(t.text) << "</text>\n";
  }
};

// ---- Raster -------------------------------------------------------------------------------------

// RGB pixels of (width x height) units times `scale`, white at first; each shape blended over
// them with anti-aliased coverage.
class Raster {
 public:
  Raster(double width, double height, double scale)
      : width_(static_cast<int64_t>(std::lround(width * scale))),
        height_(static_cast<int64_t>(std::lround(height * scale))),
        scale_(scale),
        pixels_(static_cast<size_t>(width_ * height_ * 3), 1.0) {}

  void operator()(const Line& l) {
    (*this)(Polyline{{{l.x1, l.y1}, {l.x2, l.y2}}, l.color, l.width, 1.0});
  }

  void operator()(const Polyline& shape) {
    const auto& points = shape.points;
    const double width = shape.width, opacity = shape.opacity;
    if (points.empty()) return;
    const Rgb rgb = parse_color(shape.color);
    std::vector<Point> p;
    for (const auto& [x, y] : points) p.emplace_back(x * scale_, y * scale_);
    const double half = std::max(width * scale_, 1.0) / 2;
    double lo_x = p[0].first, hi_x = lo_x, lo_y = p[0].second, hi_y = lo_y;
    for (const auto& [x, y] : p) {
      lo_x = std::min(lo_x, x);
      hi_x = std::max(hi_x, x);
      lo_y = std::min(lo_y, y);
      hi_y = std::max(hi_y, y);
    }
    // Each segment is painted only over its own box; the coverage of the whole path at a pixel
    // is its best segment's, so that joints are not painted twice.
    const auto x0 = static_cast<int64_t>(std::floor(lo_x - half - 1));
    const auto y0 = static_cast<int64_t>(std::floor(lo_y - half - 1));
    const auto x1 = static_cast<int64_t>(std::ceil(hi_x + half + 1));
    const auto y1 = static_cast<int64_t>(std::ceil(hi_y + half + 1));
    const int64_t w = std::max<int64_t>(x1 - x0, 0), h = std::max<int64_t>(y1 - y0, 0);
    std::vector<float> mask(static_cast<size_t>(w * h), 0.0f);
    const size_t segments = p.size() == 1 ? 1 : p.size() - 1;
    for (size_t s = 0; s < segments; ++s) {
      const auto& a = p[s];
      const auto& b = p[std::min(s + 1, p.size() - 1)];
      const auto sx0 =
          std::max(static_cast<int64_t>(std::floor(std::min(a.first, b.first) - half - 1)), x0);
      const auto sx1 =
          std::min(static_cast<int64_t>(std::ceil(std::max(a.first, b.first) + half + 1)), x1);
      const auto sy0 =
          std::max(static_cast<int64_t>(std::floor(std::min(a.second, b.second) - half - 1)), y0);
      const auto sy1 =
          std::min(static_cast<int64_t>(std::ceil(std::max(a.second, b.second) + half + 1)), y1);
      for (int64_t y = sy0; y < sy1; ++y) {
        for (int64_t x = sx0; x < sx1; ++x) {
          const double d =
              distance_to_segment(static_cast<double>(x) + 0.5, static_cast<double>(y) + 0.5,
                                  a.first, a.second, b.first, b.second);
          float& m = mask[static_cast<size_t>((y - y0) * w + (x - x0))];
          m = std::max(m, static_cast<float>(std::clamp(half + 0.5 - d, 0.0, 1.0)));
        }
      }
    }
    paint(x0, y0, x1, y1, rgb, opacity, [&](double px, double py) {
      const auto x = static_cast<int64_t>(px) - x0, y = static_cast<int64_t>(py) - y0;
      return static_cast<double>(mask[static_cast<size_t>(y * w + x)]);
    });
  }

  void operator()(const Polygon& shape) {
    const auto& points = shape.points;
    const double opacity = shape.opacity;
    if (points.size() < 3) return;
    const Rgb rgb = parse_color(shape.color);
    std::vector<Point> p;
    for (const auto& [x, y] : points) p.emplace_back(x * scale_, y * scale_);
    double lo_y = p[0].second, hi_y = lo_y;
    for (const auto& point : p) {
      lo_y = std::min(lo_y, point.second);
      hi_y = std::max(hi_y, point.second);
    }
    // Scanlines: four sub-rows per pixel row, each crossing the edges at sorted x; the spans
    // between crossings (even-odd) add their exact horizontal overlap with each pixel.
    constexpr int kSubRows = 4;
    const auto y_first = std::max<int64_t>(static_cast<int64_t>(std::floor(lo_y)), 0);
    const auto y_last = std::min<int64_t>(static_cast<int64_t>(std::ceil(hi_y)), height_);
    std::vector<double> row(static_cast<size_t>(width_));
    std::vector<double> crossings;
    for (int64_t y = y_first; y < y_last; ++y) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int s = 0; s < kSubRows; ++s) {
        const double sy = static_cast<double>(y) + (s + 0.5) / kSubRows;
        crossings.clear();
        for (size_t i = 0; i < p.size(); ++i) {
          const auto& a = p[i];
          const auto& b = p[(i + 1) % p.size()];
          if ((a.second <= sy) == (b.second <= sy)) continue;
          crossings.push_back(a.first +
                              (sy - a.second) / (b.second - a.second) * (b.first - a.first));
        }
        std::sort(crossings.begin(), crossings.end());
        for (size_t i = 0; i + 1 < crossings.size(); i += 2) {
          const double from = std::max(crossings[i], 0.0);
          const double to = std::min(crossings[i + 1], static_cast<double>(width_));
          for (auto x = static_cast<int64_t>(std::floor(from)); static_cast<double>(x) < to; ++x) {
            const double overlap =
                std::min(to, static_cast<double>(x + 1)) - std::max(from, static_cast<double>(x));
            if (overlap > 0) row[static_cast<size_t>(x)] += overlap / kSubRows;
          }
        }
      }
      paint(0, y, width_, y + 1, rgb, opacity,
            [&](double px, double) { return row[static_cast<size_t>(px)]; });
    }
  }

  void operator()(const Circle& shape) {
    double cx = shape.cx, cy = shape.cy, r = shape.r;
    const Rgb rgb = parse_color(shape.color);
    cx *= scale_;
    cy *= scale_;
    r *= scale_;
    paint(static_cast<int64_t>(std::floor(cx - r - 1)),
          static_cast<int64_t>(std::floor(cy - r - 1)), static_cast<int64_t>(std::ceil(cx + r + 1)),
          static_cast<int64_t>(std::ceil(cy + r + 1)), rgb, 1.0,
          [&](double px, double py) { return r + 0.5 - std::hypot(px - cx, py - cy); });
  }

  void operator()(const RectOutline& r) {
    (*this)(Polyline{{{r.x, r.y},
                      {r.x + r.width, r.y},
                      {r.x + r.width, r.y + r.height},
                      {r.x, r.y + r.height},
                      {r.x, r.y}},
                     r.color,
                     1.0,
                     1.0});
  }

  void operator()(const Text& shape) {
    const double x = shape.x, y = shape.y, size = shape.size;
    const std::string& text = shape.text;
    const Anchor anchor = shape.anchor;
    const bool vertical = shape.vertical;
    // One font pixel is a square of `k` image pixels, so that capitals are about 0.6 of the font
    // size tall, as in a sans-serif font.
    const Rgb rgb = parse_color(shape.color);
    const double k = std::max(1.0, std::round(0.6 * size * scale_ / kGlyphHeight));
    // One glyph per character: a UTF-8 sequence (outside the font) is one '?', not one per byte.
    std::string glyphs;
    for (char c : text)
      if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) glyphs += c;
    const double advance = (kGlyphWidth + 1) * k;
    const double length = glyphs.empty() ? 0.0 : static_cast<double>(glyphs.size()) * advance - k;
    const double start = anchor == Anchor::kStart    ? 0.0
                         : anchor == Anchor::kMiddle ? -length / 2
                                                     : -length;
    const double ax = x * scale_, ay = y * scale_;
    for (size_t i = 0; i < glyphs.size(); ++i) {
      const auto& rows = glyph(glyphs[i]);
      for (int r = 0; r < kGlyphHeight; ++r) {
        for (int c = 0; c < kGlyphWidth; ++c) {
          if (!((rows[static_cast<size_t>(r)] >> (kGlyphWidth - 1 - c)) & 1)) continue;
          // The block's offset from the anchor along the text and up from the baseline.
          const double along = start + static_cast<double>(i) * advance + c * k;
          const double up = (kGlyphHeight - r) * k;
          if (vertical) {
            fill_block(ax - up, ay - along - k, k, rgb);
          } else {
            fill_block(ax + along, ay - up, k, rgb);
          }
        }
      }
    }
  }

  // The image as a PNG file.
  std::string png() const {
    // The scanlines, each behind filter byte 0 (none), deflated by zlib into one IDAT chunk.
    std::string raw;
    raw.reserve(static_cast<size_t>(height_ * (1 + width_ * 3)));
    for (int64_t y = 0; y < height_; ++y) {
      raw += '\0';
      for (int64_t x = 0; x < width_ * 3; ++x)
        raw +=
            static_cast<char>(std::lround(pixels_[static_cast<size_t>(y * width_ * 3 + x)] * 255));
    }
    uLongf size = compressBound(static_cast<uLong>(raw.size()));
    std::string deflated(size, '\0');
    const int status = compress2(reinterpret_cast<Bytef*>(deflated.data()), &size,
                                 reinterpret_cast<const Bytef*>(raw.data()),
                                 static_cast<uLong>(raw.size()), Z_DEFAULT_COMPRESSION);
    if (status != Z_OK)
      throw std::runtime_error("to_png: zlib failed with status " + std::to_string(status));
    deflated.resize(size);

    std::string png = "\x89PNG\r\n\x1a\n";
    std::string header;
    for (const int64_t v : {width_, height_})
      for (int shift = 24; shift >= 0; shift -= 8) header += static_cast<char>((v >> shift) & 0xff);
    header +=
        std::string("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, filter 0, no interlace
    append_chunk(png, "IHDR", header);
    append_chunk(png, "IDAT", deflated);
    append_chunk(png, "IEND", "");
    return png;
  }

 private:
  struct Rgb {
    double r, g, b;
  };

  static Rgb parse_color(const std::string& color) {
    TDRL_CHECK(color.size() == 7 && color[0] == '#' &&
                   color.find_first_not_of("0123456789abcdefABCDEF", 1) == std::string::npos,
               tensordict::ValueError, "to_png: colour '", color, "' is not of the form #rrggbb");
    const auto channel = [&](int i) {
      return static_cast<double>(
                 std::stoi(color.substr(static_cast<size_t>(1 + 2 * i), 2), nullptr, 16)) /
             255.0;
    };
    return {channel(0), channel(1), channel(2)};
  }

  // Blends `color` over the pixels of the box [x0, x1) x [y0, y1) with alpha
  // coverage(x, y) * opacity, coverage in [0, 1] from the pixel centre.
  template <class Coverage>
  void paint(int64_t x0, int64_t y0, int64_t x1, int64_t y1, const Rgb& color, double opacity,
             Coverage coverage) {
    x0 = std::max<int64_t>(x0, 0);
    y0 = std::max<int64_t>(y0, 0);
    x1 = std::min(x1, width_);
    y1 = std::min(y1, height_);
    for (int64_t y = y0; y < y1; ++y) {
      for (int64_t x = x0; x < x1; ++x) {
        const double a =
            std::clamp(coverage(static_cast<double>(x) + 0.5, static_cast<double>(y) + 0.5), 0.0,
                       1.0) *
            opacity;
        if (a <= 0) continue;
        double* p = &pixels_[static_cast<size_t>((y * width_ + x) * 3)];
        p[0] += (color.r - p[0]) * a;
        p[1] += (color.g - p[1]) * a;
        p[2] += (color.b - p[2]) * a;
      }
    }
  }

  void fill_block(double x, double y, double size, const Rgb& color) {
    const auto x0 = static_cast<int64_t>(std::lround(x)), y0 = static_cast<int64_t>(std::lround(y));
    const auto n = static_cast<int64_t>(std::lround(size));
    paint(x0, y0, x0 + n, y0 + n, color, 1.0, [](double, double) { return 1.0; });
  }

  int64_t width_;
  int64_t height_;
  double scale_;
  std::vector<double> pixels_;  // RGB in [0, 1], row-major
};

}  // namespace

std::string to_svg(const Drawing& drawing) {
  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << drawing.width << "\" height=\""
      << drawing.height << "\" viewBox=\"0 0 " << drawing.width << " " << drawing.height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<title>" << xml_escape(drawing.title) << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  SvgWriter writer{svg};
  for (const auto& shape : drawing.shapes) std::visit(writer, shape);
  svg << "</svg>\n";
  return svg.str();
}

std::string to_png(const Drawing& drawing, double scale) {
  Raster raster(drawing.width, drawing.height, scale);
  for (const auto& shape : drawing.shapes) std::visit(raster, shape);
  return raster.png();
}

}  // namespace tdrl::apps::detail
