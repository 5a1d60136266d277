#include <tensordict/nn/tanh_normal.h>

#include <cmath>
#include <limits>

#include "detail/checks.h"

namespace tensordict::nn {

TanhNormal::TanhNormal(torch::Tensor loc, torch::Tensor scale, TanhNormalOptions options)
    : BoundedNormal("TanhNormal", loc, scale, options) {}

torch::Tensor TanhNormal::from_unit(const torch::Tensor& y) const {
  return (high_ + low_) * 0.5 + (high_ - low_) * 0.5 * y;
}

torch::Tensor TanhNormal::sample_impl(c10::IntArrayRef sample_shape) const {
  const auto eps = torch::randn(extended_shape(sample_shape), loc_.options());
  last_pre_tanh_ = loc_ + scale_ * eps;
  last_sample_ = from_unit(torch::tanh(last_pre_tanh_));
  return last_sample_;
}

torch::Tensor TanhNormal::log_prob_impl(const torch::Tensor& value) const {
  const double eps = value.scalar_type() == torch::kDouble && loc_.scalar_type() == torch::kDouble
                         ? std::numeric_limits<double>::epsilon()
                         : std::numeric_limits<float>::epsilon();
  const auto half_width = (high_ - low_) * 0.5;
  torch::Tensor x;
  if (last_sample_.defined() && value.is_same(last_sample_)) {
    x = last_pre_tanh_;
  } else {
    // Pre-image in (-1, 1), kept off the bounds so that atanh stays finite.
    const auto y = ((value - (high_ + low_) * 0.5) / half_width).clamp(-1 + eps, 1 - eps);
    x = torch::atanh(y);
  }
  // log|dz/dx| = log(half_width) + log(1 - tanh(x)^2), the latter in its stable form.
  const auto log_jacobian =
      half_width.log() + 2.0 * (std::log(2.0) - x - torch::softplus(-2.0 * x));
  return detail::sum_rightmost(detail::normal_log_density(x, loc_, scale_) - log_jacobian,
                               event_dims_);
}

torch::Tensor TanhNormal::deterministic_sample_impl() const { return from_unit(torch::tanh(loc_)); }

}  // namespace tensordict::nn
