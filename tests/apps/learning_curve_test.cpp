// The learning curve: its layout (the Drawing the renderer paints: which lines, markers, bands
// and labels) and the SVG and PNG files cairo renders from it (read back with cairo).

#include <tdrl/apps/learning_curve.h>
#include <tdrl/apps/main.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#ifdef TDRL_WITH_CAIRO
#include <cairo.h>
#endif

#include "run/drawing.h"
#include "support/temp_dir.h"

namespace tdrl::apps {
namespace {

using detail::Drawing;
using tensordict::testing::read_file_bytes;
using tensordict::testing::TempDir;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using Series = std::vector<CurveSeries>;

// ---- the layout ------------------------------------------------------------------------------

template <typename Shape>
std::vector<Shape> shapes_of(const Drawing& drawing) {
  std::vector<Shape> out;
  for (const auto& shape : drawing.shapes)
    if (const auto* s = std::get_if<Shape>(&shape)) out.push_back(*s);
  return out;
}

std::vector<std::string> texts_of(const Drawing& drawing) {
  std::vector<std::string> out;
  for (const auto& t : shapes_of<detail::Text>(drawing)) out.push_back(t.text);
  return out;
}

// The plotted lines: the polylines inside the frame (the legend's swatches are right of it).
std::vector<detail::Polyline> data_lines(const Drawing& drawing) {
  std::vector<detail::Polyline> out;
  for (const auto& l : shapes_of<detail::Polyline>(drawing))
    if (l.points.front().first <= 640) out.push_back(l);
  return out;
}

Drawing layout(const std::string& title, const Series& series,
               const std::string& y_label = "return") {
  return detail::learning_curve_drawing(title, series, y_label);
}

TEST(LearningCurveTest, DrawsOnePolylinePerNonEmptySeriesWithTitleAndLegend) {
  const Drawing d = layout("PPO on CartPole", {{"train", {{0, 10}, {1000, 20}, {2000, 35}}},
                                               {"eval", {{1000, 15}, {2000, 30}}},
                                               {"empty", {}}});
  EXPECT_EQ(d.width, 800);
  EXPECT_EQ(d.height, 480);
  const auto lines = data_lines(d);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].color, "#1f77b4");
  EXPECT_EQ(lines[0].points.size(), 3u);
  EXPECT_EQ(lines[1].color, "#ff7f0e");
  const auto texts = texts_of(d);
  for (const char* t : {"PPO on CartPole", "train", "eval", "frames", "return"})
    EXPECT_THAT(texts, Contains(t));
  EXPECT_THAT(texts, Not(Contains("empty")));
  // A legend swatch per drawn series, in its colour (two points, at the right of the frame).
  size_t swatches = 0;
  for (const auto& l : shapes_of<detail::Polyline>(d))
    if (l.points.size() == 2 && l.points[0].first > 640) ++swatches;
  EXPECT_EQ(swatches, 2u);
}

TEST(LearningCurveTest, FrameTicksUseOneTwoFiveStepsWithSuffixes) {
  const auto texts = texts_of(layout("t", {{"train", {{0, 0}, {2.5e6, 100}}}}));
  for (const char* label : {"0", "500k", "1M", "1.5M", "2M", "2.5M"})
    EXPECT_THAT(texts, Contains(label));
  // Returns 0..100, padded by 5 on each side: ticks in steps of 50 around it.
  for (const char* label : {"-50", "50", "100", "150"}) EXPECT_THAT(texts, Contains(label));
  EXPECT_THAT(texts, Not(Contains("3M")));
}

TEST(LearningCurveTest, SmallReturnsGetDecimalTicks) {
  const auto texts = texts_of(layout("t", {{"train", {{0, 0.0}, {1500, 1.0}}}}));
  for (const char* label : {"-0.5", "0.5", "1.0", "1.5", "500", "1.5k"})
    EXPECT_THAT(texts, Contains(label));
}

TEST(LearningCurveTest, EmptyPlotStillHasAxes) {
  const Drawing d = layout("nothing yet", {});
  EXPECT_TRUE(data_lines(d).empty());
  const auto frame = shapes_of<detail::RectOutline>(d);
  ASSERT_EQ(frame.size(), 1u);
  EXPECT_EQ(frame[0].color, "#333333");
  const auto texts = texts_of(d);
  for (const char* t : {"nothing yet", "frames", "return"}) EXPECT_THAT(texts, Contains(t));
}

TEST(LearningCurveTest, SinglePointSeriesGetsMarkerAndNonFinitePointsAreLeftOut) {
  const double nan = std::nan("");
  const Drawing d = layout("t", {{"eval", {{500, 3}}}, {"train", {{0, 1}, {100, nan}, {200, 2}}}});
  EXPECT_EQ(shapes_of<detail::Circle>(d).size(), 1u);
  const auto lines = data_lines(d);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].color, "#ff7f0e");
  EXPECT_EQ(lines[1].points.size(), 2u);
  for (const auto& line : lines)
    for (const auto& [x, y] : line.points) EXPECT_TRUE(std::isfinite(x) && std::isfinite(y));
}

TEST(LearningCurveTest, EvaluationsGetMarkersAndABandTrainReturnsASmoothedLine) {
  Series series = {{"train", {{0, 10}, {100, 30}, {200, 20}, {300, 40}}, {}, false, 3},
                   {"eval +- std", {{100, 500}, {300, 480}}, {{500, 500}, {460, 500}}, true, 0}};
  const Drawing d = layout("t", series, "return (env units)");
  EXPECT_EQ(shapes_of<detail::Circle>(d).size(), 2u);  // one per evaluation
  const auto bands = shapes_of<detail::Polygon>(d);
  ASSERT_EQ(bands.size(), 1u);
  EXPECT_EQ(bands[0].color, "#ff7f0e");
  EXPECT_EQ(bands[0].points.size(), 4u);  // two points, each at its low and its high
  const auto lines = data_lines(d);
  ASSERT_EQ(lines.size(), 3u);  // raw train (faint), its mean, eval
  EXPECT_DOUBLE_EQ(lines[0].opacity, 0.3);
  const auto texts = texts_of(d);
  for (const char* t : {"train (mean of 3)", "eval +- std", "return (env units)"})
    EXPECT_THAT(texts, Contains(t));
  // The best evaluation is not on the frame's top edge: a tick above it.
  EXPECT_THAT(texts, Contains("600"));
  EXPECT_THAT(
      [&] {
        layout("t", {{"eval", {{1, 2}, {3, 4}}, {{1, 3}}}});
      },
      ::testing::ThrowsMessage<tensordict::ValueError>(
          HasSubstr("series 'eval' has 1 band values for 2 points")));
}

TEST(LearningCurveTest, UnnamedSeriesHaveNoLegendAndOwnColoursLeaveThePaletteAlone) {
  const Drawing d =
      layout("t", {{"", {{0, 1}, {10, 2}}, {}, false, 0, "#999999", 1.0},
                   {"median", {{0, 1.5}, {10, 2.5}}},
                   {"target 3", {{0, 3}, {10, 3}}, {}, false, 0, "#d62728", 1.5, true}});
  const auto lines = data_lines(d);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].color, "#999999");
  EXPECT_DOUBLE_EQ(lines[0].width, 1.0);
  EXPECT_EQ(lines[1].color, "#1f77b4");  // the palette's first: the grey one took none
  EXPECT_TRUE(lines[2].dashed);
  const auto texts = texts_of(d);
  EXPECT_THAT(texts, Contains("median"));
  EXPECT_THAT(texts, Contains("target 3"));
  EXPECT_EQ(shapes_of<detail::Polyline>(d).size(), 5u);  // two legend swatches, not three
}

// ---- the files -------------------------------------------------------------------------------

#ifdef TDRL_WITH_CAIRO

// A PNG read back with cairo: its size and RGB pixels.
struct DecodedPng {
  int width = 0, height = 0;
  std::vector<std::array<int, 3>> pixels;
  // Pixels within 1 of `rgb` in each channel (anti-aliasing and blending round either way).
  size_t count(std::array<int, 3> rgb) const {
    return static_cast<size_t>(std::count_if(pixels.begin(), pixels.end(), [&](const auto& p) {
      for (int c = 0; c < 3; ++c)
        if (std::abs(p[c] - rgb[c]) > 1) return false;
      return true;
    }));
  }
};

DecodedPng decode_png(const std::string& path) {
  DecodedPng png;
  cairo_surface_t* s = cairo_image_surface_create_from_png(path.c_str());
  EXPECT_EQ(cairo_surface_status(s), CAIRO_STATUS_SUCCESS) << path;
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    png.width = cairo_image_surface_get_width(s);
    png.height = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    const unsigned char* data = cairo_image_surface_get_data(s);
    for (int y = 0; y < png.height; ++y) {
      for (int x = 0; x < png.width; ++x) {
        // Native-endian 0xAARRGGBB words (RGB24 and ARGB32 alike).
        uint32_t v;
        std::memcpy(&v, data + y * stride + 4 * x, 4);
        png.pixels.push_back({static_cast<int>((v >> 16) & 0xff), static_cast<int>((v >> 8) & 0xff),
                              static_cast<int>(v & 0xff)});
      }
    }
  }
  cairo_surface_destroy(s);
  return png;
}

TEST(LearningCurveTest, PngIsTheLayoutAtTwiceTheSizeInTheSeriesColours) {
  TempDir tmp;
  Series series = {{"train", {{0, 10}, {100, 30}, {200, 20}, {300, 40}}, {}, false, 3},
                   {"eval +- std", {{100, 500}, {300, 480}}, {{500, 500}, {460, 500}}, true, 0}};
  write_learning_curve_png(tmp / "c.png", "ppo on Pendulum-v1", series, "return (env units)");
  EXPECT_EQ(read_file_bytes(tmp / "c.png").substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
  const DecodedPng png = decode_png(tmp / "c.png");
  ASSERT_EQ(png.width, 1600);
  ASSERT_EQ(png.height, 960);
  // A white background, the series' colours where they are opaque (the smoothed train line,
  // the eval markers), the eval band blended at 15% over white, and text in the ink colour.
  EXPECT_EQ(png.pixels.front(), (std::array<int, 3>{255, 255, 255}));
  EXPECT_EQ(png.pixels.back(), (std::array<int, 3>{255, 255, 255}));
  EXPECT_GT(png.count({0x1f, 0x77, 0xb4}), 500u);
  EXPECT_GT(png.count({0xff, 0x7f, 0x0e}), 100u);
  EXPECT_GT(png.count({255, 236, 219}), 1000u);
  EXPECT_GT(png.count({0x33, 0x33, 0x33}), 2000u);
  // Same inputs, same bytes.
  write_learning_curve_png(tmp / "d.png", "ppo on Pendulum-v1", series, "return (env units)");
  EXPECT_EQ(read_file_bytes(tmp / "c.png"), read_file_bytes(tmp / "d.png"));
}

TEST(LearningCurveTest, TextIsDrawnWithAFontAndInvalidUtf8DoesNotStopTheDrawing) {
  TempDir tmp;
  // The same plot with and without a title: the title's glyphs add ink.
  write_learning_curve_png(tmp / "a.png", "", {});
  write_learning_curve_png(tmp / "b.png", "return \u00b1 std", {});
  const size_t untitled = decode_png(tmp / "a.png").count({0x33, 0x33, 0x33});
  const size_t titled = decode_png(tmp / "b.png").count({0x33, 0x33, 0x33});
  EXPECT_GT(titled, untitled + 50) << "no font drawn the title; install fonts-dejavu-core";
  // A stray byte (not UTF-8) is drawn as '?', and the rest of the plot as usual.
  write_learning_curve_png(tmp / "c.png",
                           "a\xff"
                           "b",
                           {});
  write_learning_curve_png(tmp / "d.png", "a?b", {});
  EXPECT_EQ(read_file_bytes(tmp / "c.png"), read_file_bytes(tmp / "d.png"));
}

TEST(LearningCurveTest, PngOfAnEmptyPlotHasItsFrameAndNoSeriesColour) {
  TempDir tmp;
  write_learning_curve_png(tmp / "c.png", "nothing yet", {});
  const DecodedPng png = decode_png(tmp / "c.png");
  EXPECT_GT(png.count({0x33, 0x33, 0x33}), 2 * (1120u + 724u));  // the frame, at least
  EXPECT_EQ(png.count({0x1f, 0x77, 0xb4}), 0u);
  EXPECT_THAT(
      [&] {
        write_learning_curve_png(tmp / "d.png", "t", {{"eval", {{1, 2}, {3, 4}}, {{1, 3}}}});
      },
      ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("1 band values for 2 points")));
  EXPECT_FALSE(std::filesystem::exists(tmp / "d.png"));
}

TEST(LearningCurveTest, SvgIsASelfContainedDocumentOfThePlotsSize) {
  TempDir tmp;
  Series series = {{"train", {{0, -5.5}, {3000, 7.25}, {7000, 3}}},
                   {"eval", {{3000, 1}, {7000, 2}}, {{0.5, 1.5}, {1.5, 2.5}}, true, 0}};
  write_learning_curve_svg(tmp / "a.svg", "a < b & \"c\"", series);
  const std::string svg = read_file_bytes(tmp / "a.svg");
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\"", 0), 0u);
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("width=\"800px\""));
  EXPECT_THAT(svg, HasSubstr("height=\"480px\""));
  EXPECT_THAT(svg, HasSubstr("viewBox=\"0 0 800 480\""));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  // The series' colours as cairo writes them (percentages), the text as glyph outlines.
  EXPECT_THAT(svg, HasSubstr("rgb(12.156863%,46.666667%,70.588235%)"));  // #1f77b4
  EXPECT_THAT(svg, HasSubstr("<symbol"));
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("href=\"http"), std::string::npos);  // no external references
  // Same inputs, same bytes (cairo's process-wide surface numbers are not in the file).
  write_learning_curve_svg(tmp / "b.svg", "a < b & \"c\"", series);
  EXPECT_THAT(svg, HasSubstr("<g id=\"plot\">"));
  EXPECT_EQ(svg, read_file_bytes(tmp / "b.svg"));
}

// tdrl-plot over three seeds' folders laid out as the learning suite's (seedN/<run>/metrics.csv).
int plot(std::vector<std::string> args) {
  args.insert(args.begin(), "tdrl-plot");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return plot_main(static_cast<int>(argv.size()), argv.data());
}

TEST(PlotToolTest, DrawsEverySeedTheirMedianAndTheTargetAndNamesWhatIsMissing) {
  TempDir tmp;
  const char* const curves[] = {"frames,eval_return\n64,10\n128,30\n192,50\n",
                                "frames,eval_return\n64,20\n128,40\n192,60\n",
                                "frames,eval_return\n64,30\n128,\n192,70\n"};
  std::vector<std::string> seeds;
  for (int i = 0; i < 3; ++i) {
    const auto run = tmp.path() / ("seed" + std::to_string(i)) / "run-1";
    std::filesystem::create_directories(run);
    tensordict::testing::write_file_bytes(run / "metrics.csv", curves[i]);
    seeds.push_back((tmp.path() / ("seed" + std::to_string(i))).string());
  }
  auto args = seeds;
  for (const char* a : {"--out", "", "--target", "55", "--title", "ppo_cartpole"})
    args.push_back(a);
  args[seeds.size() + 1] = (tmp.path() / "plot.png").string();
  ASSERT_EQ(plot(args), 0);
  const DecodedPng png = decode_png(tmp.path() / "plot.png");
  EXPECT_EQ(png.width, 1600);
  EXPECT_GT(png.count({0x99, 0x99, 0x99}), 200u);  // each seed, thin and grey
  EXPECT_GT(png.count({0x1f, 0x77, 0xb4}), 300u);  // the median
  EXPECT_GT(png.count({0xd6, 0x27, 0x28}), 100u);  // the target, dashed
  args[seeds.size() + 1] = (tmp.path() / "plot.svg").string();
  ASSERT_EQ(plot(args), 0);
  EXPECT_THAT(read_file_bytes(tmp.path() / "plot.svg"), HasSubstr("<svg"));

  // A folder without a run, a run without an evaluation, an unknown picture format.
  EXPECT_EQ(plot({(tmp.path() / "nothing").string(), "--out", (tmp.path() / "x.svg").string()}), 1);
  const auto empty = tmp.path() / "empty";
  std::filesystem::create_directories(empty);
  tensordict::testing::write_file_bytes(empty / "metrics.csv", "frames,train_return\n64,1\n");
  EXPECT_EQ(plot({empty.string(), "--out", (tmp.path() / "x.svg").string()}), 1);
  EXPECT_EQ(plot({seeds[0], "--out", (tmp.path() / "x.pdf").string()}), 2);
  EXPECT_EQ(plot({seeds[0]}), 2);  // --out is required
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "x.svg"));
}

#else

TEST(LearningCurveTest, ABuildWithoutCairoSaysSoWhenAskedForAPicture) {
  TempDir tmp;
  EXPECT_FALSE(learning_curves_available());
  EXPECT_THAT([&] { write_learning_curve_svg(tmp / "c.svg", "t", {}); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("TDRL_WITH_CAIRO=OFF")));
  EXPECT_FALSE(std::filesystem::exists(tmp / "c.svg"));
}

#endif

}  // namespace
}  // namespace tdrl::apps
