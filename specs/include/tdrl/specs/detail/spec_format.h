#pragma once

// Not part of the API: formatting and checking helpers shared by the spec sources and the envs
// transforms (defined in tensor_spec.cpp); installed because envs includes it.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

namespace tdrl::specs::detail {

/// `torch.Size([3, 4])`.
std::string size_repr(c10::IntArrayRef shape);
/// `text` with every non-empty line prefixed by `n` spaces.
std::string indent(const std::string& text, int n);
/// Throws ValueError naming `op` when a size is negative.
void check_sizes(const std::string& op, const std::vector<int64_t>& shape);
/// True when `shape` ends with `suffix`.
bool ends_with(c10::IntArrayRef shape, c10::IntArrayRef suffix);
/// True when `shape` starts with `prefix`.
bool starts_with(c10::IntArrayRef shape, c10::IntArrayRef prefix);

}  // namespace tdrl::specs::detail
