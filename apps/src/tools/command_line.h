#pragma once
// What the tools' mains (tdrl-train, tdrl-eval, tdrl-envs, tdrl-plot) share about their command
// lines.

#include <optional>

#include <CLI/CLI.hpp>

namespace tdrl::apps::detail {

/// Parses the command line; a code to exit with when it is done (--help: 0) or wrong (2, the
/// usage-error code of main.h, instead of CLI11's own 100+ codes).
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace tdrl::apps::detail
