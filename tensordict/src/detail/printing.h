#pragma once

// Pieces of TensorDict's printed form (Python tensordict's repr) that other printers reuse:
// the tensorclass repr prints its fields exactly as a TensorDict prints its entries.

#include <optional>
#include <string>

#include <tensordict/tensor_dict.h>

namespace tensordict::detail {

/// Prefixes every non-blank line of `text` with `n` spaces (Python's textwrap.indent).
std::string indent(const std::string& text, int n);
/// `torch.Size([3, 4])`.
std::string size_repr(c10::IntArrayRef shape);
/// `cpu`, `cuda:0`, or `None` when no device is required.
std::string device_repr(const std::optional<torch::Device>& device);
/// The printed value of the top-level entry `key` of `td`, as in `key: <value>` of
/// TensorDict's repr: `Tensor(shape=..., ...)`, a nested TensorDict's repr, or non-tensor
/// data. A lazy stack's tensors are described without stacking them (`-1` where members'
/// shapes differ). `key` must exist.
std::string entry_repr(const TensorDict& td, const std::string& key);

}  // namespace tensordict::detail
