#pragma once

// Helpers shared by the actor sources (actors.cpp, q_value.cpp).

#include <sstream>
#include <string>

#include <c10/util/ArrayRef.h>

namespace tdrl::modules::detail {

inline std::string shape_repr(c10::IntArrayRef shape) {
  std::ostringstream os;
  os << shape;
  return os.str();
}

}  // namespace tdrl::modules::detail
