#pragma once

// Helpers shared by the policy-gradient losses (a2c.cpp, reinforce.cpp, ppo.cpp).

#include <optional>
#include <sstream>
#include <string>

namespace tdrl::losses::detail {

inline std::string optional_repr(const std::optional<double>& v) {
  if (!v) return "None";
  std::ostringstream os;
  os << *v;
  return os.str();
}

}  // namespace tdrl::losses::detail
