#include <tensordict/nn/bounded_normal.h>

#include <algorithm>
#include <tuple>

#include "detail/checks.h"

namespace tensordict::nn {

BoundedNormal::BoundedNormal(const std::string& name, const torch::Tensor& loc,
                             const torch::Tensor& scale, const torch::Tensor& low,
                             const torch::Tensor& high, std::optional<int64_t> event_dims)
    : Distribution(name) {
  const std::string where = name + "::" + name;
  detail::check_floating(where, "loc", loc);
  detail::check_floating(where, "scale", scale);
  const auto shape = detail::broadcast_shape(where, "loc", loc, "scale", scale);
  event_dims_ = event_dims.value_or(std::min<int64_t>(1, static_cast<int64_t>(shape.size())));
  detail::check_event_dims(where, event_dims_, shape);
  detail::check_positive(where, "scale", scale);
  loc_ = loc.expand(shape);
  scale_ = scale.expand(shape);
  detail::check_floating(where, "low", low);
  detail::check_floating(where, "high", high);
  std::tie(low_, high_) = detail::bounds(where, low, high, loc_);
  set_shapes_from(shape, event_dims_);
}

std::vector<std::pair<std::string, torch::Tensor>> BoundedNormal::printed_params() const {
  return {{"loc", loc_}, {"scale", scale_}, {"low", low_}, {"high", high_}};
}

}  // namespace tensordict::nn
