#pragma once

/// TanhNormal: a Gaussian squashed by tanh and mapped affinely onto [low, high] (TorchRL's
/// TanhNormal), the usual policy distribution for bounded continuous actions.

#include <optional>

#include <tensordict/nn/bounded_normal.h>

namespace tensordict::nn {

/// Options of TanhNormal.
/// Example: `TanhNormalOptions().low(-2).high(2)`
struct TanhNormalOptions : BoundedOptions<TanhNormalOptions> {};

/// The law of `low + (high - low) * (tanh(x) + 1) / 2` with x ~ N(loc, scale), each of the
/// last `event_dims` dims being one event: for loc `[*batch, d]`, batch_shape is `[*batch]`,
/// event_shape `[d]`.
///
/// Supports rsample. No closed-form entropy, mean or mode (entropy(), mean() and mode() throw
/// TypeError); deterministic_sample is the image of loc, `low + (high - low) *
/// (tanh(loc) + 1) / 2`, as in TorchRL.
///
/// Numerics of log_prob: the value is mapped back to y in [-1, 1] and clamped to
/// [-1 + eps, 1 - eps] (eps the dtype's machine epsilon) before atanh, so values exactly at low
/// or high give a finite log-density and finite gradients; the Jacobian term uses
/// log(1 - tanh(x)^2) = 2 * (log 2 - x - softplus(-2x)), which does not cancel for large |x|.
/// The log-density of the tensor the latest sample()/rsample() returned (the same tensor, not an
/// equal one) is computed from its pre-tanh value instead (torch's TanhTransform with
/// cache_size=1): a saturated sample, which rounds to a bound in float32, keeps its exact
/// log-density (through atanh it would be off by orders of magnitude, which derails SAC's
/// entropy term once the policy saturates).
///
/// Throws like Normal for loc/scale (TypeError, ShapeError, ValueError), ShapeError when
/// low/high do not broadcast with loc, ValueError unless low < high everywhere or when
/// event_dims is outside [0, loc.dim()].
/// Example: `TanhNormal dist(loc, scale, TanhNormalOptions().low(-2).high(2));`
class TanhNormal : public BoundedNormal {
 public:
  TanhNormal(torch::Tensor loc, torch::Tensor scale, TanhNormalOptions options = {});

  bool has_rsample() const override { return true; }
  bool has_entropy() const override { return false; }

 protected:
  torch::Tensor sample_impl(c10::IntArrayRef sample_shape) const override;
  torch::Tensor log_prob_impl(const torch::Tensor& value) const override;
  std::optional<torch::Tensor> entropy_impl() const override { return std::nullopt; }
  std::optional<torch::Tensor> mean_impl() const override { return std::nullopt; }
  std::optional<torch::Tensor> mode_impl() const override { return std::nullopt; }
  torch::Tensor deterministic_sample_impl() const override;

 private:
  // Maps y in [-1, 1] onto [low, high].
  torch::Tensor from_unit(const torch::Tensor& y) const;

  // The latest sample and its pre-tanh value (see the class comment).
  mutable torch::Tensor last_sample_;
  mutable torch::Tensor last_pre_tanh_;
};

}  // namespace tensordict::nn
