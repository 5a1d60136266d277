#pragma once

/// The learning-curve image of a run.
///
/// Errors: file-system failures throw std::runtime_error naming the path and the system's
/// reason; invalid arguments throw tensordict::ValueError (also a std::runtime_error).

#include <string>
#include <utility>
#include <vector>

namespace tdrl::apps {

/// Writes an SVG learning curve: return against frames, one polyline per series (e.g.
/// "train" and "eval"), with axes, ticks, labels, a legend and `title`; written atomically.
///
/// The image is self-contained (no scripts, fonts or external references) with a viewBox,
/// so it scales. Axis ticks are at 1-2-5 steps; frame ticks read "500", "1k", "2.5M".
/// Points are drawn in the order given (pass them sorted by frames); non-finite points are
/// left out. Series with fewer than one point are skipped (a one-point series also gets a dot
/// marker); an all-empty plot still gets axes. Each series has its own colour (a fixed
/// palette, cycled) and a legend entry. The output depends only on the arguments.
/// Throws std::runtime_error when the file cannot be written.
void write_learning_curve_svg(
    const std::string& path, const std::string& title,
    const std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>>& series);

}  // namespace tdrl::apps
