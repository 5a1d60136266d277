#pragma once

// Private printing helper shared by the modules' repr. Never installed.

#include <string>

namespace tensordict::nn::detail {

/// `text` with every line after the first indented by `indent`, for a nested module's repr
/// printed after a label on the parent's line.
inline std::string indent_rest(const std::string& text, const std::string& indent) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += indent;
  }
  return out;
}

}  // namespace tensordict::nn::detail
