#pragma once

// Argument checks and checkpoint field readers shared by the replay sources.

#include <cstdint>
#include <string>

#include <torch/types.h>

#include <tensordict/errors.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::replay::detail {

using tensordict::NestedKey;
using tensordict::TensorDict;

/// `index` as a contiguous CPU int64 tensor `[n]`. Throws TypeError for a non-integer dtype,
/// ShapeError for a tensor that is not 1-D; `what` names the argument in the message.
torch::Tensor as_index(const torch::Tensor& index, const std::string& op, const char* what);

/// Throws IndexError naming the first value of `index` (contiguous int64) outside
/// `[0, limit)`, with `what` ("row", "index") and `limit_name` ("max_rows", "size").
void check_index_range(const torch::Tensor& index, int64_t limit, const std::string& op,
                       const char* what, const char* limit_name);

/// The integer entry `key` of a checkpoint state (ValueError naming the key when missing or
/// not an integer).
int64_t read_int(const TensorDict& state, const char* key, const std::string& op);
/// The floating entry `key` of a checkpoint state.
double read_double(const TensorDict& state, const char* key, const std::string& op);
/// The string entry `key` of a checkpoint state.
std::string read_string(const TensorDict& state, const char* key, const std::string& op);
/// The tensor entry `key` of a checkpoint state.
torch::Tensor read_tensor(const TensorDict& state, const char* key, const std::string& op);

/// Throws ValueError unless `state["kind"]` is `expected` (a checkpoint of another kind of
/// component).
void check_type(const TensorDict& state, const std::string& expected, const std::string& op);

/// `[1, 2]` for a tensor's sizes.
std::string sizes_str(const torch::Tensor& t);

/// `t` on `device`; a CPU tensor bound for a GPU goes through pinned memory without blocking, so
/// that sampling from a GPU buffer never waits for the GPU's queue (a pageable copy would).
torch::Tensor to_device_async(const torch::Tensor& t, torch::Device device);

/// The top-level and nested leaf keys of `td`, formatted `['a', ('next', 'b')]`.
std::string keys_str(const TensorDict& td);

}  // namespace tdrl::replay::detail
