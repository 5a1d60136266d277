// printed(x): what `os << x` writes, for the golden-string tests of the printable types.

#pragma once

#include <sstream>
#include <string>

namespace tensordict::testing {

/// `value` as `operator<<` prints it.
template <class T>
std::string printed(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

}  // namespace tensordict::testing
