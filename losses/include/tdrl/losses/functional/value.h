#pragma once

/// Value estimation as pure tensor functions (TorchRL's torchrl.objectives.value.functional):
/// TD(0), TD(1), TD(lambda) returns and generalized advantage estimation.
///
/// Conventions shared by every function:
/// - All tensors have the same shape `[*B, T, *F]` (typically `[B, T, 1]`), time along
///   `time_dim` (default -2, TorchRL's). Flags may be bool or numeric (nonzero = true).
///   Mismatched shapes throw ShapeError (no broadcasting: a `[B, T]` reward against a
///   `[B, T, 1]` value is an error, not a `[B, T, T]` surprise).
/// - `terminated[t]`: the episode ended in a terminal state at step t, so nothing is
///   bootstrapped from `next_state_value[t]`. `done[t]` (terminated or truncated): the
///   trajectory ends at t, so recursions restart there; a truncated step still bootstraps
///   from `next_state_value[t]`. Several trajectories may follow each other in one row.
/// - The last step of each row bootstraps from `next_state_value` (unless terminated).
/// - Results are detached: they are regression targets and advantages, which the standard
///   algorithms never differentiate (TorchRL's `differentiable=False` default).
///
/// Speed: on CPU with contiguous float/double data the recursions run as plain loops over
/// the raw data (one pass over T per row); other devices use a tensor formulation.

#include <cstdint>
#include <utility>

#include <torch/types.h>

namespace tdrl::losses::functional {

/// One-step return `r[t] + gamma * (1 - terminated[t]) * next_state_value[t]`.
torch::Tensor td0_return_estimate(double gamma, const torch::Tensor& next_state_value,
                                  const torch::Tensor& reward, const torch::Tensor& terminated);

/// TD(0) advantage: td0_return_estimate - state_value.
torch::Tensor td0_advantage_estimate(double gamma, const torch::Tensor& state_value,
                                     const torch::Tensor& next_state_value,
                                     const torch::Tensor& reward, const torch::Tensor& terminated);

/// Monte-Carlo return bootstrapped at trajectory ends:
/// `G[t] = r[t] + gamma * (1 - terminated[t]) * (done[t] ? next_state_value[t] : G[t+1])`,
/// with G[T] read as next_state_value[T-1].
torch::Tensor td1_return_estimate(double gamma, const torch::Tensor& next_state_value,
                                  const torch::Tensor& reward, const torch::Tensor& done,
                                  const torch::Tensor& terminated, int64_t time_dim = -2);

/// TD(lambda) return:
/// `G[t] = r[t] + gamma * (1 - terminated[t]) * ((1 - lmbda) * V'[t] + lmbda * (done[t] ? V'[t]
/// : G[t+1]))`, V' = next_state_value, the last step bootstrapping from V'.
/// Throws ValueError for lmbda outside [0, 1] or gamma outside [0, 1].
torch::Tensor td_lambda_return_estimate(double gamma, double lmbda,
                                        const torch::Tensor& next_state_value,
                                        const torch::Tensor& reward, const torch::Tensor& done,
                                        const torch::Tensor& terminated, int64_t time_dim = -2);

/// Generalized advantage estimation: `delta[t] = r[t] + gamma * (1 - terminated[t]) * V'[t] -
/// V[t]`, `A[t] = delta[t] + gamma * lmbda * (1 - done[t]) * A[t+1]`; returns
/// `{advantage, value_target = advantage + state_value}`.
std::pair<torch::Tensor, torch::Tensor> generalized_advantage_estimate(
    double gamma, double lmbda, const torch::Tensor& state_value,
    const torch::Tensor& next_state_value, const torch::Tensor& reward, const torch::Tensor& done,
    const torch::Tensor& terminated, int64_t time_dim = -2);

}  // namespace tdrl::losses::functional
