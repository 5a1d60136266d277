#include <tensordict/nn/tanh_normal.h>

#include <cmath>
#include <limits>

#include "detail/checks.h"

namespace tensordict::nn {

TanhNormal::TanhNormal(torch::Tensor loc, torch::Tensor scale, TanhNormalOptions options)
    : Distribution("TanhNormal") {
  const std::string where = "TanhNormal::TanhNormal";
  detail::check_floating(where, "loc", loc);
  detail::check_floating(where, "scale", scale);
  const auto shape = detail::broadcast_shape(where, "loc", loc, "scale", scale);
  const int64_t dims = static_cast<int64_t>(shape.size());
  event_dims_ = options.event_dims().value_or(std::min<int64_t>(1, dims));
  detail::check_event_dims(where, event_dims_, shape);
  detail::check_positive(where, "scale", scale);
  loc_ = loc.expand(shape);
  scale_ = scale.expand(shape);
  detail::check_floating(where, "low", options.low());
  detail::check_floating(where, "high", options.high());
  std::tie(low_, high_) = detail::bounds(where, options.low(), options.high(), loc_);
  set_shapes_from(shape, event_dims_);
}

torch::Tensor TanhNormal::from_unit(const torch::Tensor& y) const {
  return (high_ + low_) * 0.5 + (high_ - low_) * 0.5 * y;
}

torch::Tensor TanhNormal::sample_impl(c10::IntArrayRef sample_shape) const {
  const auto eps = torch::randn(extended_shape(sample_shape), loc_.options());
  return from_unit(torch::tanh(loc_ + scale_ * eps));
}

torch::Tensor TanhNormal::log_prob_impl(const torch::Tensor& value) const {
  const double eps = value.scalar_type() == torch::kDouble && loc_.scalar_type() == torch::kDouble
                         ? std::numeric_limits<double>::epsilon()
                         : std::numeric_limits<float>::epsilon();
  const auto half_width = (high_ - low_) * 0.5;
  // Pre-image in (-1, 1), kept off the bounds so that atanh stays finite.
  const auto y = ((value - (high_ + low_) * 0.5) / half_width).clamp(-1 + eps, 1 - eps);
  const auto x = torch::atanh(y);
  // log|dz/dx| = log(half_width) + log(1 - tanh(x)^2), the latter in its stable form.
  const auto log_jacobian =
      half_width.log() + 2.0 * (std::log(2.0) - x - torch::softplus(-2.0 * x));
  return detail::sum_rightmost(detail::normal_log_density(x, loc_, scale_) - log_jacobian,
                               event_dims_);
}

torch::Tensor TanhNormal::deterministic_sample_impl() const { return from_unit(torch::tanh(loc_)); }

std::vector<std::pair<std::string, torch::Tensor>> TanhNormal::printed_params() const {
  return {{"loc", loc_}, {"scale", scale_}, {"low", low_}, {"high", high_}};
}

}  // namespace tensordict::nn
