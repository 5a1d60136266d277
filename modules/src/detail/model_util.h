#pragma once

// Helpers shared by the model sources (mlp.cpp, convnet.cpp).

#include <cstdint>
#include <string>
#include <vector>

#include "names.h"

namespace tdrl::modules::detail {

inline std::string ints_repr(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

inline void check_positive(const std::string& where, const std::string& option, int64_t value) {
  TDRL_CHECK(!(value <= 0), ValueError, where, ": ", option, " is ", std::to_string(value),
             "; it must be positive");
}

}  // namespace tdrl::modules::detail
