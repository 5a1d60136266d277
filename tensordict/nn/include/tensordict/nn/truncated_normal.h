#pragma once

/// TruncatedNormal: a Gaussian restricted to [low, high] and renormalised (TorchRL's
/// TruncatedNormal), for bounded continuous actions without tanh's distortion.

#include <optional>

#include <tensordict/nn/bounded_normal.h>

namespace tensordict::nn {

/// Options of TruncatedNormal.
/// Example: `TruncatedNormalOptions().low(-2).high(2)`
struct TruncatedNormalOptions : BoundedOptions<TruncatedNormalOptions> {};

/// N(loc, scale) conditioned on [low, high], the last `event_dims` dims forming one event.
/// With a = (low - loc) / scale, b = (high - loc) / scale and Z = Phi(b) - Phi(a):
/// log_prob(x) = log phi((x - loc) / scale) - log scale - log Z inside [low, high] and -inf
/// outside; mean = loc + scale * (phi(a) - phi(b)) / Z; mode = clamp(loc, low, high) (also the
/// deterministic_sample); entropy = log(sqrt(2 pi e) scale Z) + (a phi(a) - b phi(b)) / (2 Z).
/// Samples by inverse CDF, u ~ U(0, 1) mapped to Phi^-1(Phi(a) + u Z); this is differentiable
/// in loc and scale, so rsample exists. Precision degrades when [low, high] lies far (> ~5
/// scales) in one tail, where Phi(a) and Phi(b) round to the same value.
/// Throws like TanhNormal (TypeError, ShapeError, ValueError).
/// Example: `TruncatedNormal dist(loc, scale, TruncatedNormalOptions().low(0).high(1));`
class TruncatedNormal : public BoundedNormal {
 public:
  TruncatedNormal(torch::Tensor loc, torch::Tensor scale, TruncatedNormalOptions options = {});

  bool has_rsample() const override { return true; }
  bool has_entropy() const override { return true; }

 protected:
  torch::Tensor sample_impl(c10::IntArrayRef sample_shape) const override;
  torch::Tensor log_prob_impl(const torch::Tensor& value) const override;
  std::optional<torch::Tensor> entropy_impl() const override;
  std::optional<torch::Tensor> mean_impl() const override;
  std::optional<torch::Tensor> mode_impl() const override;
  torch::Tensor deterministic_sample_impl() const override;

 private:
  torch::Tensor alpha() const { return (low_ - loc_) / scale_; }
  torch::Tensor beta() const { return (high_ - loc_) / scale_; }
  torch::Tensor log_z() const;
};

}  // namespace tensordict::nn
