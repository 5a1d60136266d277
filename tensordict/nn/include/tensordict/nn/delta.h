#pragma once

/// Deterministic distributions: `Delta` (a point mass at param) and `TanhDelta` (a point mass
/// at param squashed by tanh onto [low, high]), TorchRL's Delta and TanhDelta, used to give
/// deterministic policies (DDPG, TD3) the Distribution interface.

#include <torch/arg.h>

#include <optional>

#include <tensordict/nn/distribution.h>

namespace tensordict::nn {

/// Options of Delta.
/// Example: `DeltaOptions().atol(1e-5)`
struct DeltaOptions {
  /// Absolute tolerance of log_prob's equality test. Default 1e-6.
  TORCH_ARG(double, atol) = 1e-6;
  /// Relative tolerance of log_prob's equality test (times |point|). Default 1e-6.
  TORCH_ARG(double, rtol) = 1e-6;
  /// Trailing dims forming one event. Default: 1, or 0 when param is a scalar.
  TORCH_ARG(std::optional<int64_t>, event_dims);
};

/// A point mass at `param` `[*batch, *event]`. sample/rsample return param expanded to
/// `[*sample, *batch, *event]` (rsample keeps param's gradient); log_prob is 0 where every
/// element of the event is within atol + rtol * |param| of param and -inf elsewhere;
/// mean, mode and deterministic_sample are param. No entropy (entropy() throws TypeError).
/// Throws TypeError for a non-floating param, ValueError for event_dims outside
/// [0, param.dim()] or negative tolerances.
/// Example: `Delta dist(action);`
class Delta : public Distribution {
 public:
  explicit Delta(torch::Tensor param, DeltaOptions options = {});

  /// The support point `[*batch, *event]`.
  const torch::Tensor& value() const { return value_; }

  bool has_rsample() const override { return true; }
  bool has_entropy() const override { return false; }

 protected:
  Delta(std::string name, torch::Tensor value, const DeltaOptions& options);

  torch::Tensor sample_impl(c10::IntArrayRef sample_shape) const override;
  torch::Tensor log_prob_impl(const torch::Tensor& value) const override;
  std::optional<torch::Tensor> entropy_impl() const override { return std::nullopt; }
  std::optional<torch::Tensor> mean_impl() const override { return value_; }
  std::optional<torch::Tensor> mode_impl() const override { return value_; }
  torch::Tensor deterministic_sample_impl() const override { return value_; }
  std::vector<std::pair<std::string, torch::Tensor>> printed_params() const override;

 private:
  torch::Tensor value_;
  double atol_;
  double rtol_;
  int64_t event_dims_;
};

/// Options of TanhDelta.
/// Example: `TanhDeltaOptions().low(-2).high(2)`
struct TanhDeltaOptions {
  /// Lower bound, scalar or tensor broadcastable with param. Default -1.
  TanhDeltaOptions& low(double v) { return low(torch::tensor(v)); }
  TORCH_ARG(torch::Tensor, low) = torch::tensor(-1.0);

 public:
  /// Upper bound, scalar or tensor broadcastable with param; must exceed low. Default 1.
  TanhDeltaOptions& high(double v) { return high(torch::tensor(v)); }
  TORCH_ARG(torch::Tensor, high) = torch::tensor(1.0);
  /// Tolerances and event dims, as for Delta.
  TORCH_ARG(DeltaOptions, delta);
};

/// A point mass at `low + (high - low) * (tanh(param) + 1) / 2`, a Delta in every other respect
/// (rsample differentiates through tanh). Throws as Delta, plus ShapeError when low/high do not
/// broadcast with param and ValueError unless low < high everywhere.
/// Example: `TanhDelta dist(net_output, TanhDeltaOptions().low(-2).high(2));`
class TanhDelta : public Delta {
 public:
  explicit TanhDelta(torch::Tensor param, TanhDeltaOptions options = {});

 protected:
  std::vector<std::pair<std::string, torch::Tensor>> printed_params() const override;

 private:
  torch::Tensor param_;
  torch::Tensor low_;
  torch::Tensor high_;
};

}  // namespace tensordict::nn
