// Reward transforms: RewardScaling, RewardClipping, RewardSum.

#include <tdrl/envs/transforms/reward.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "../detail/transform_util.h"

namespace tdrl::envs {

using tensordict::ValueError;

using detail::bool_repr;

namespace {

void check_finite(const std::string& where, const char* what, double v) {
  TDRL_CHECK(std::isfinite(v), ValueError, where, ": ", what, " is ", detail::number_repr(v),
             "; it must be finite");
}

}  // namespace

// ---- RewardScaling ---------------------------------------------------------------------------

RewardScaling::RewardScaling(RewardScalingOptions options)
    : KeyedTransform("RewardScaling", options, Inverse::kNone), options_(std::move(options)) {
  check_finite("RewardScaling", "loc", options_.loc());
  check_finite("RewardScaling", "scale", options_.scale());
  TDRL_CHECK(options_.scale() != 0, ValueError, "RewardScaling: scale is 0; it must be non-zero");
}

std::string RewardScaling::to_string() const {
  return "RewardScaling(" + keys_to_string() + ", loc=" + detail::number_repr(options_.loc()) +
         ", scale=" + detail::number_repr(options_.scale()) +
         ", standard_normal=" + bool_repr(options_.standard_normal()) + ")";
}

torch::Tensor RewardScaling::apply_transform(const torch::Tensor& value, const NestedKey&) {
  return options_.standard_normal() ? (value - options_.loc()) / options_.scale()
                                    : value * options_.scale() + options_.loc();
}

specs::TensorSpecPtr RewardScaling::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                          const NestedKey& in_key,
                                                          const EnvSpecs&) {
  detail::require_floating(*spec, "RewardScaling", in_key);
  return detail::unbounded_like(*spec);
}

// ---- RewardClipping --------------------------------------------------------------------------

RewardClipping::RewardClipping(RewardClippingOptions options)
    : KeyedTransform("RewardClipping", options, Inverse::kNone), options_(std::move(options)) {
  detail::check_clip_bounds("RewardClipping", "clamp_min", options_.clamp_min(), "clamp_max",
                            options_.clamp_max());
}

std::string RewardClipping::to_string() const {
  return "RewardClipping(" + keys_to_string() +
         ", clamp_min=" + detail::bound_repr(options_.clamp_min()) +
         ", clamp_max=" + detail::bound_repr(options_.clamp_max()) + ")";
}

torch::Tensor RewardClipping::apply_transform(const torch::Tensor& value, const NestedKey&) {
  return detail::clamp(value, options_.clamp_min(), options_.clamp_max());
}

specs::TensorSpecPtr RewardClipping::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                           const NestedKey& in_key,
                                                           const EnvSpecs&) {
  detail::require_floating(*spec, "RewardClipping", in_key);
  if (!options_.clamp_min() || !options_.clamp_max()) return detail::unbounded_like(*spec);
  return detail::bounded(torch::tensor(*options_.clamp_min()), torch::tensor(*options_.clamp_max()),
                         spec->shape(), spec->dtype(), spec->device());
}

// ---- RewardSum -------------------------------------------------------------------------------

RewardSum::RewardSum(RewardSumOptions options) : options_(std::move(options)) {
  TDRL_CHECK(!options_.in_keys().empty(), ValueError, "RewardSum: in_keys is empty");
  detail::reject_inverse_keys("RewardSum", options_);
  TDRL_CHECK(options_.out_keys().size() == options_.in_keys().size(), ValueError,
             "RewardSum: ", std::to_string(options_.out_keys().size()), " out_keys ",
             detail::keys_repr(options_.out_keys()), " for ",
             std::to_string(options_.in_keys().size()), " in_keys ",
             detail::keys_repr(options_.in_keys()), "; give one out_key per in_key");
  feature_shapes_.assign(options_.in_keys().size(), std::vector<int64_t>{1});
  dtypes_.assign(options_.in_keys().size(), torch::kFloat32);
}

std::string RewardSum::to_string() const {
  return "RewardSum(in_keys=" + detail::keys_repr(options_.in_keys()) +
         ", out_keys=" + detail::keys_repr(options_.out_keys()) + ")";
}

TensorDict RewardSum::reset(const TensorDict& input, TensorDict output) {
  const auto mask = input.get_or(specs::kReset, torch::Tensor());
  for (size_t i = 0; i < options_.out_keys().size(); ++i) {
    const auto& key = options_.out_keys()[i];
    auto shape = output.batch_size();
    shape.insert(shape.end(), feature_shapes_[i].begin(), feature_shapes_[i].end());
    auto value = torch::zeros(
        shape, torch::TensorOptions().dtype(dtypes_[i]).device(detail::device_of(output)));
    const auto previous = input.find(key);
    if (mask.defined() && previous) {
      value = torch::where(mask, value, previous->to(dtypes_[i]));
    }
    output.set(key, value);
  }
  return output;
}

TensorDict RewardSum::step(const TensorDict& root, TensorDict next) {
  for (size_t i = 0; i < options_.out_keys().size(); ++i) {
    const auto reward = next.find(options_.in_keys()[i]);
    if (!reward) continue;
    const auto previous = root.find(options_.out_keys()[i]);
    next.set(options_.out_keys()[i], previous ? *previous + *reward : reward->clone());
  }
  return next;
}

specs::CompositePtr RewardSum::transform_observation_spec(specs::CompositePtr spec,
                                                          const EnvSpecs& input) {
  detail::require_outputs("RewardSum", options_.in_keys(), input);
  const auto batch_dims = static_cast<int64_t>(input.batch_size.size());
  for (size_t i = 0; i < options_.in_keys().size(); ++i) {
    const auto reward = input.find_output(options_.in_keys()[i]);
    detail::require_floating(*reward, "RewardSum", options_.in_keys()[i]);
    feature_shapes_[i].assign(reward->shape().begin() + batch_dims, reward->shape().end());
    dtypes_[i] = reward->dtype();
    spec->set(options_.out_keys()[i], detail::unbounded_like(*reward));
  }
  return spec;
}

}  // namespace tdrl::envs
