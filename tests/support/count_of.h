// count_of(text, part): how often a string occurs in a text, for tests of generated documents.

#pragma once

#include <cstddef>
#include <string>

namespace tdrl::testing {

/// The number of non-overlapping occurrences of `part` (not empty) in `text`.
inline size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t i = text.find(part); i != std::string::npos; i = text.find(part, i + part.size()))
    ++n;
  return n;
}

}  // namespace tdrl::testing
