#pragma once

// The drawing of the run's plots: the learning curve lays itself out once as a Drawing (a list
// of shapes in logical units, y pointing down), painted by the envs' drawing routine (cairo) to
// an SVG document and to a PNG image, as env frames are. The Drawing is what tests read for the
// layout (which shapes, which labels); the files are cairo's.

#include <string>
#include <vector>

#include <tdrl/apps/learning_curve.h>
#include <tdrl/envs/drawing.h>

namespace tdrl::apps::detail {

using envs::drawing::Anchor;
using envs::drawing::Circle;
using envs::drawing::Drawing;
using envs::drawing::Line;
using envs::drawing::Point;
using envs::drawing::Polygon;
using envs::drawing::Polyline;
using envs::drawing::RectOutline;
using envs::drawing::Shape;
using envs::drawing::Text;
using envs::drawing::to_png;
using envs::drawing::to_svg;

/// The learning curve of write_learning_curve_svg/png, laid out on 800 x 480 units. Throws
/// tensordict::ValueError when a band does not have one (low, high) per point.
Drawing learning_curve_drawing(const std::string& title, const std::vector<CurveSeries>& series,
                               const std::string& y_label);

}  // namespace tdrl::apps::detail
