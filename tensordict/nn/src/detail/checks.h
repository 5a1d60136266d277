#pragma once

// Private helpers shared by the distributions: argument checks that throw tensordict errors,
// and small pieces of math. Never installed.

#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

namespace tensordict::nn::detail {

/// Throws TypeError unless `t` is a defined floating-point tensor.
void check_floating(const std::string& where, const std::string& param, const torch::Tensor& t);

/// Throws ValueError unless every element of `t` is > 0, showing the minimum found.
void check_positive(const std::string& where, const std::string& param, const torch::Tensor& t);

/// The broadcast shape of `a` and `b`; throws ShapeError naming both parameters and shapes.
std::vector<int64_t> broadcast_shape(const std::string& where, const std::string& name_a,
                                     const torch::Tensor& a, const std::string& name_b,
                                     const torch::Tensor& b);

/// Throws ValueError unless 0 <= event_dims <= `shape.size()`.
void check_event_dims(const std::string& where, int64_t event_dims, c10::IntArrayRef shape);

/// Sums the last `n` dims of `t`.
torch::Tensor sum_rightmost(const torch::Tensor& t, int64_t n);

/// Elementwise log-density of N(loc, scale) at `x`.
torch::Tensor normal_log_density(const torch::Tensor& x, const torch::Tensor& loc,
                                 const torch::Tensor& scale);

/// Elementwise entropy of N(loc, scale).
torch::Tensor normal_entropy(const torch::Tensor& scale);

/// Bounds `low`, `high` as tensors of `like`'s dtype and device, checked low < high
/// elementwise (ValueError) and broadcastable with `like` (ShapeError).
std::pair<torch::Tensor, torch::Tensor> bounds(const std::string& where, const torch::Tensor& low,
                                               const torch::Tensor& high,
                                               const torch::Tensor& like);

/// `[*batch, *event]` split of `shape` with the last `event_dims` dims as the event.
std::pair<std::vector<int64_t>, std::vector<int64_t>> split_shape(c10::IntArrayRef shape,
                                                                  int64_t event_dims);

}  // namespace tensordict::nn::detail
