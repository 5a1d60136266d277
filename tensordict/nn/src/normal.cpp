#include <tensordict/nn/normal.h>

#include <tensordict/errors.h>

#include "detail/checks.h"

namespace tensordict::nn {

Normal::Normal(torch::Tensor loc, torch::Tensor scale)
    : Normal("Normal", std::move(loc), std::move(scale), 0) {}

Normal::Normal(std::string name, torch::Tensor loc, torch::Tensor scale, int64_t event_dims)
    : Distribution(name), event_dims_(event_dims) {
  const std::string where = name + "::" + name;
  detail::check_floating(where, "loc", loc);
  detail::check_floating(where, "scale", scale);
  const auto shape = detail::broadcast_shape(where, "loc", loc, "scale", scale);
  detail::check_event_dims(where, event_dims, shape);
  detail::check_positive(where, "scale", scale);
  loc_ = loc.expand(shape);
  scale_ = scale.expand(shape);
  set_shapes_from(shape, event_dims);
}

torch::Tensor Normal::sample_impl(c10::IntArrayRef sample_shape) const {
  const auto eps = torch::randn(extended_shape(sample_shape), loc_.options());
  return loc_ + scale_ * eps;
}

torch::Tensor Normal::log_prob_impl(const torch::Tensor& value) const {
  return detail::sum_rightmost(detail::normal_log_density(value, loc_, scale_), event_dims_);
}

std::optional<torch::Tensor> Normal::entropy_impl() const {
  return detail::sum_rightmost(detail::normal_entropy(scale_), event_dims_);
}

std::vector<std::pair<std::string, torch::Tensor>> Normal::printed_params() const {
  return {{"loc", loc_}, {"scale", scale_}};
}

IndependentNormal::IndependentNormal(torch::Tensor loc, torch::Tensor scale,
                                     IndependentNormalOptions options)
    : Normal("IndependentNormal", std::move(loc), std::move(scale), options.event_dims()) {}

}  // namespace tensordict::nn
