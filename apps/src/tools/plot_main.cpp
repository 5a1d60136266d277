// tdrl-plot as a library function (plot_main, tdrl/apps/main.h): the evaluation returns of several
// runs of one config (seeds) in one picture, drawn as the runs' own learning curves are.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <tdrl/apps/learning_curve.h>
#include <tdrl/apps/main.h>
#include <tdrl/apps/metrics.h>

#include "tools/command_line.h"

namespace tdrl::apps {

// Named, not anonymous: this file shares a unity batch with the library's other sources.
namespace runs_plot {

namespace fs = std::filesystem;

// The metrics.csv of a run folder, or of the newest run folder inside `dir` (a seed's logger.dir,
// as scripts/learning_suite.sh lays them out); empty when there is none.
std::string metrics_of(const fs::path& dir) {
  if (fs::is_regular_file(dir / "metrics.csv")) return (dir / "metrics.csv").string();
  std::string newest;
  fs::file_time_type newest_time{};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto file = entry.path() / "metrics.csv";
    if (!fs::is_regular_file(file)) continue;
    const auto time = fs::last_write_time(file);
    if (newest.empty() || time > newest_time) {
      newest = file.string();
      newest_time = time;
    }
  }
  return newest;
}

// The q-quantile of `xs` with linear interpolation (numpy's default).
double quantile(std::vector<double> xs, double q) {
  std::sort(xs.begin(), xs.end());
  const double pos = static_cast<double>(xs.size() - 1) * q;
  const auto lo = static_cast<size_t>(std::floor(pos));
  const auto hi = static_cast<size_t>(std::ceil(pos));
  return xs[lo] + (xs[hi] - xs[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace runs_plot

int plot_main(int argc, char** argv) {
  using namespace runs_plot;
  CLI::App app{
      "tdrl-plot: the evaluation returns of several runs (e.g. one config's seeds) in one picture: "
      "each run thin, their median and interquartile band at the evaluations they share"};
  std::vector<std::string> runs;
  std::string out, title;
  double target = std::nan("");
  app.add_option("runs", runs, "Run folders (or folders holding run folders: the newest is taken)")
      ->required();
  app.add_option("--out", out, "The picture to write: a .svg or .png file")->required();
  app.add_option("--title", title, "The title (default: 'evaluation return, <N> runs')");
  app.add_option("--target", target, "A target return, drawn as a dashed line");
  if (const auto code = detail::parse_command_line(app, argc, argv)) return *code;
  const auto ext = fs::path(out).extension().string();
  if (ext != ".svg" && ext != ".png") {
    std::cerr << "tdrl-plot: --out " << out << ": the file must end in .svg or .png\n";
    return 2;
  }
  if (!learning_curves_available()) {
    std::cerr << "tdrl-plot: this build of tdrl draws no pictures (configured without cairo); "
                 "install libcairo2-dev and build again\n";
    return 1;
  }
  try {
    // Each run's evaluations, in frames order.
    std::vector<CurveSeries> series;
    std::map<double, std::vector<double>> at_frames;
    for (const auto& run : runs) {
      const std::string metrics = metrics_of(run);
      if (metrics.empty()) {
        std::cerr << "tdrl-plot: " << run
                  << ": no metrics.csv there nor in a run folder inside; pass run folders (or "
                     "the logger.dir that holds them)\n";
        return 1;
      }
      CurveSeries curve{"", {}, {}, false, 0, "#999999", 1.0};
      for (const auto& row : read_metrics(metrics)) {
        const auto frames = row.find("frames");
        const auto value = row.find("eval_return");
        if (frames == row.end() || value == row.end() || !std::isfinite(value->second)) continue;
        curve.points.emplace_back(frames->second, value->second);
        at_frames[frames->second].push_back(value->second);
      }
      if (curve.points.empty()) {
        std::cerr << "tdrl-plot: " << metrics << " has no eval_return yet\n";
        return 1;
      }
      series.push_back(std::move(curve));
    }
    series.front().name = runs.size() > 1 ? "each run" : "the run";
    // The median and quartiles where every run was evaluated.
    CurveSeries median{"median, IQR band", {}, {}, true, 0, "#1f77b4", 2.5};
    for (const auto& [frames, values] : at_frames) {
      if (values.size() != runs.size()) continue;
      median.points.emplace_back(frames, quantile(values, 0.5));
      median.band.emplace_back(quantile(values, 0.25), quantile(values, 0.75));
    }
    if (runs.size() > 1 && !median.points.empty()) series.push_back(std::move(median));
    if (std::isfinite(target)) {
      char label[64];
      std::snprintf(label, sizeof(label), "target %g", target);
      series.push_back({label,
                        {{0.0, target}, {at_frames.rbegin()->first, target}},
                        {},
                        false,
                        0,
                        "#d62728",
                        1.5,
                        /*dashed=*/true});
    }
    if (title.empty()) title = "evaluation return, " + std::to_string(runs.size()) + " runs";
    if (ext == ".svg")
      write_learning_curve_svg(out, title, series, "return (env units)");
    else
      write_learning_curve_png(out, title, series, "return (env units)");
    std::cout << "tdrl-plot: wrote " << out << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tdrl-plot: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tdrl::apps
