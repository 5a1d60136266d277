#include <tensordict/nn/delta.h>

#include <limits>
#include <sstream>

#include <tensordict/errors.h>

#include "detail/checks.h"

namespace tensordict::nn {

namespace {

torch::Tensor squashed(const std::string& where, const torch::Tensor& param,
                       const TanhDeltaOptions& options) {
  detail::check_floating(where, "param", param);
  detail::check_floating(where, "low", options.low());
  detail::check_floating(where, "high", options.high());
  auto [low, high] = detail::bounds(where, options.low(), options.high(), param);
  return (high + low) * 0.5 + (high - low) * 0.5 * torch::tanh(param);
}

}  // namespace

Delta::Delta(torch::Tensor param, DeltaOptions options)
    : Delta("Delta", std::move(param), options) {}

Delta::Delta(std::string name, torch::Tensor value, const DeltaOptions& options)
    : Distribution(name), atol_(options.atol()), rtol_(options.rtol()) {
  const std::string where = name + "::" + name;
  detail::check_floating(where, "param", value);
  if (!(atol_ >= 0 && rtol_ >= 0)) {
    std::ostringstream os;
    os << where << ": atol and rtol must be >= 0, got atol " << atol_ << " and rtol " << rtol_;
    throw ValueError(os.str());
  }
  event_dims_ = options.event_dims().value_or(std::min<int64_t>(1, value.dim()));
  detail::check_event_dims(where, event_dims_, value.sizes());
  value_ = std::move(value);
  set_shapes_from(value_.sizes(), event_dims_);
}

torch::Tensor Delta::sample_impl(c10::IntArrayRef sample_shape) const {
  return value_.expand(extended_shape(sample_shape));
}

torch::Tensor Delta::log_prob_impl(const torch::Tensor& value) const {
  const auto close = (value - value_).abs() <= atol_ + rtol_ * value_.abs();
  auto inside = close;
  for (int64_t i = 0; i < event_dims_; ++i) inside = inside.all(-1);
  return torch::zeros(inside.sizes(), value_.options())
      .masked_fill(inside.logical_not(), -std::numeric_limits<double>::infinity());
}

std::vector<std::pair<std::string, torch::Tensor>> Delta::printed_params() const {
  return {{"param", value_}};
}

TanhDelta::TanhDelta(torch::Tensor param, TanhDeltaOptions options)
    : Delta("TanhDelta", squashed("TanhDelta::TanhDelta", param, options), options.delta()),
      param_(param),
      low_(options.low()),
      high_(options.high()) {}

std::vector<std::pair<std::string, torch::Tensor>> TanhDelta::printed_params() const {
  return {{"param", param_}, {"low", low_}, {"high", high_}};
}

}  // namespace tensordict::nn
