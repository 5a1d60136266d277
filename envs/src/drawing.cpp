// Drawings (see drawing.h): one painting routine over a cairo context, on cairo's SVG surface
// and on an image surface written as PNG or copied into a frame tensor.

#include "tdrl/envs/drawing.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>

#include <tensordict/errors.h>

#ifdef TDRL_WITH_CAIRO
#include <cairo-svg.h>
#include <cairo.h>
#endif

namespace tdrl::envs::drawing {

bool available() {
#ifdef TDRL_WITH_CAIRO
  return true;
#else
  return false;
#endif
}

#ifdef TDRL_WITH_CAIRO

namespace {

struct Rgb {
  double r, g, b;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Rgb parse_color(const std::string& color) {
  int v[6] = {};
  bool ok = color.size() == 7 && color[0] == '#';
  for (size_t i = 0; ok && i < 6; ++i) ok = (v[i] = hex_digit(color[i + 1])) >= 0;
  TDRL_CHECK(ok, tensordict::ValueError, "drawing: the colour '", color,
             "' is not of the form #rrggbb");
  return {(v[0] * 16 + v[1]) / 255.0, (v[2] * 16 + v[3]) / 255.0, (v[4] * 16 + v[5]) / 255.0};
}

void set_color(cairo_t* cr, const std::string& color, double opacity = 1.0) {
  const Rgb c = parse_color(color);
  cairo_set_source_rgba(cr, c.r, c.g, c.b, opacity);
}

// `text` with every byte that does not start or continue a valid UTF-8 sequence replaced by '?':
// cairo refuses invalid UTF-8 by putting the whole context into an error state.
std::string valid_utf8(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
    bool ok = n > 0 && i + n <= text.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (ok) {
      out.append(text, i, n);
      i += n;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

void path_of(cairo_t* cr, const std::vector<Point>& points) {
  for (size_t i = 0; i < points.size(); ++i) {
    if (i == 0)
      cairo_move_to(cr, points[i].first, points[i].second);
    else
      cairo_line_to(cr, points[i].first, points[i].second);
  }
}

// Paints each kind of shape.
struct Painter {
  cairo_t* cr;
  void operator()(const Line& l) const {
    cairo_move_to(cr, l.x1, l.y1);
    cairo_line_to(cr, l.x2, l.y2);
    set_color(cr, l.color);
    cairo_set_line_width(cr, l.width);
    cairo_stroke(cr);
  }
  void operator()(const Polyline& p) const {
    // One path stroked once: where the line crosses itself it is not darker.
    path_of(cr, p.points);
    set_color(cr, p.color, p.opacity);
    cairo_set_line_width(cr, p.width);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    const double dash[] = {6.0, 4.0};
    cairo_set_dash(cr, dash, p.dashed ? 2 : 0, 0);
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
  }
  void operator()(const Polygon& p) const {
    path_of(cr, p.points);
    cairo_close_path(cr);
    set_color(cr, p.color, p.opacity);
    cairo_set_fill_rule(cr, CAIRO_FILL_RULE_EVEN_ODD);
    cairo_fill(cr);
  }
  void operator()(const Circle& c) const {
    cairo_new_sub_path(cr);
    cairo_arc(cr, c.cx, c.cy, c.r, 0, 2 * M_PI);
    set_color(cr, c.color);
    cairo_fill(cr);
  }
  void operator()(const RectOutline& r) const {
    cairo_rectangle(cr, r.x, r.y, r.width, r.height);
    set_color(cr, r.color);
    cairo_set_line_width(cr, 1.0);
    cairo_stroke(cr);
  }
  void operator()(const Text& t) const {
    const std::string text = valid_utf8(t.text);
    cairo_set_font_size(cr, t.size);
    cairo_text_extents_t extents;
    cairo_text_extents(cr, text.c_str(), &extents);
    const double shift = t.anchor == Anchor::kMiddle ? extents.x_advance / 2
                         : t.anchor == Anchor::kEnd  ? extents.x_advance
                                                     : 0.0;
    cairo_save(cr);
    cairo_translate(cr, t.x, t.y);
    if (t.vertical) cairo_rotate(cr, -M_PI / 2);
    cairo_move_to(cr, -shift, 0);
    set_color(cr, t.color);
    cairo_show_text(cr, text.c_str());
    cairo_restore(cr);
  }
};

void check(cairo_status_t status, const char* what) {
  if (status != CAIRO_STATUS_SUCCESS)
    throw std::runtime_error(std::string("drawing: cairo failed to ") + what + ": " +
                             cairo_status_to_string(status));
}

// Paints the drawing on `surface` at `sx` x `sy` pixels per unit, on its background.
void paint(cairo_surface_t* surface, const Drawing& drawing, double sx, double sy) {
  // The colours first: a bad one throws before cairo holds anything to release.
  for (const auto& shape : drawing.shapes)
    std::visit([](const auto& s) { parse_color(s.color); }, shape);
  parse_color(drawing.background);
  cairo_t* cr = cairo_create(surface);
  cairo_scale(cr, sx, sy);
  set_color(cr, drawing.background);
  cairo_paint(cr);
  // The font only for drawings with text (a frame has none; looking it up costs a frame's time).
  const bool has_text = std::any_of(drawing.shapes.begin(), drawing.shapes.end(),
                                    [](const auto& s) { return std::holds_alternative<Text>(s); });
  if (has_text)
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  const Painter painter{cr};
  for (const auto& shape : drawing.shapes) std::visit(painter, shape);
  const cairo_status_t status = cairo_status(cr);
  cairo_destroy(cr);
  check(status, "draw");
}

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

// Releases a surface on every path out.
struct Surface {
  cairo_surface_t* s;
  ~Surface() { cairo_surface_destroy(s); }
};

}  // namespace

std::string to_svg(const Drawing& drawing) {
  std::string out;
  Surface surface{cairo_svg_surface_create_for_stream(append, &out, drawing.width, drawing.height)};
  check(cairo_surface_status(surface.s), "create an SVG surface");
  cairo_svg_surface_set_document_unit(surface.s, CAIRO_SVG_UNIT_PX);
  paint(surface.s, drawing, 1.0, 1.0);
  cairo_surface_finish(surface.s);  // writes the document's end
  check(cairo_surface_status(surface.s), "write the SVG document");
  // cairo numbers its surfaces process-wide (`<g id="surface182">`, referenced nowhere): one
  // fixed id makes the same drawing the same bytes, in any process.
  const std::string prefix = "<g id=\"surface";
  const auto at = out.find(prefix);
  if (at != std::string::npos) {
    const auto end = out.find('"', at + prefix.size());
    if (end != std::string::npos) out.replace(at, end + 1 - at, "<g id=\"plot\"");
  }
  return out;
}

std::string to_png(const Drawing& drawing, double scale) {
  const auto w = static_cast<int>(std::lround(drawing.width * scale));
  const auto h = static_cast<int>(std::lround(drawing.height * scale));
  Surface surface{cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h)};
  check(cairo_surface_status(surface.s), "create an image");
  paint(surface.s, drawing, scale, scale);
  std::string out;
  check(cairo_surface_write_to_png_stream(surface.s, append, &out), "encode the PNG");
  return out;
}

void to_rgb(const Drawing& drawing, int64_t width, int64_t height, uint8_t* out) {
  TDRL_CHECK(width >= 1 && height >= 1 && width <= 16384 && height <= 16384, tensordict::ValueError,
             "drawing: a frame of ", width, " x ", height,
             " pixels was asked; width and height must be in [1, 16384]");
  Surface surface{cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(width),
                                             static_cast<int>(height))};
  check(cairo_surface_status(surface.s), "create an image");
  paint(surface.s, drawing, static_cast<double>(width) / drawing.width,
        static_cast<double>(height) / drawing.height);
  cairo_surface_flush(surface.s);
  // cairo's RGB24 pixels are native-endian 32-bit words 0x00RRGGBB, rows `stride` bytes apart.
  const unsigned char* data = cairo_image_surface_get_data(surface.s);
  const int stride = cairo_image_surface_get_stride(surface.s);
  for (int64_t y = 0; y < height; ++y) {
    const auto* row = reinterpret_cast<const uint32_t*>(data + y * stride);
    for (int64_t x = 0; x < width; ++x, out += 3) {
      const uint32_t p = row[x];
      out[0] = static_cast<uint8_t>(p >> 16);
      out[1] = static_cast<uint8_t>(p >> 8);
      out[2] = static_cast<uint8_t>(p);
    }
  }
}

torch::Tensor to_rgb(const Drawing& drawing, int64_t width, int64_t height) {
  auto frame =
      torch::empty({std::max<int64_t>(height, 0), std::max<int64_t>(width, 0), 3}, torch::kUInt8);
  to_rgb(drawing, width, height, frame.data_ptr<uint8_t>());
  return frame;
}

#else  // no cairo in this build

namespace {
[[noreturn]] void no_cairo() {
  throw std::runtime_error(
      "drawing: this build of tdrl draws no pictures (configured with TDRL_WITH_CAIRO=OFF or "
      "without cairo); install libcairo2-dev and configure again");
}
}  // namespace

std::string to_svg(const Drawing&) { no_cairo(); }
std::string to_png(const Drawing&, double) { no_cairo(); }
torch::Tensor to_rgb(const Drawing&, int64_t, int64_t) { no_cairo(); }
void to_rgb(const Drawing&, int64_t, int64_t, uint8_t*) { no_cairo(); }

#endif

}  // namespace tdrl::envs::drawing
