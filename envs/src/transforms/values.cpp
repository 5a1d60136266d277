// Value transforms: DoubleToFloat, ClipTransform, UnsqueezeTransform, ActionScaling.

#include <tdrl/envs/transforms/values.h>

#include <cfloat>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/types.h>

#include <tdrl/specs/detail/spec_format.h>
#include <tensordict/dtype.h>
#include <tensordict/errors.h>

#include "../detail/transform_util.h"

namespace tdrl::envs {

using tensordict::TypeError;
using tensordict::ValueError;

// ---- DoubleToFloat ---------------------------------------------------------------------------

DoubleToFloat::DoubleToFloat(DoubleToFloatOptions options) : options_(std::move(options)) {
  TDRL_CHECK(options_.out_keys().empty() && options_.out_keys_inv().empty(), ValueError,
             "DoubleToFloat: out_keys is ", detail::keys_repr(options_.out_keys()),
             " and out_keys_inv is ", detail::keys_repr(options_.out_keys_inv()),
             ", but DoubleToFloat casts in place; leave them empty");
}

std::string DoubleToFloat::to_string() const {
  auto keys = [](const std::vector<NestedKey>& k) {
    return k.empty() ? std::string("all float64") : detail::keys_repr(k);
  };
  return "DoubleToFloat(in_keys=" + keys(options_.in_keys()) +
         ", in_keys_inv=" + keys(options_.in_keys_inv()) + ")";
}

TensorDict DoubleToFloat::call(TensorDict td) {
  if (!options_.in_keys().empty()) {
    for (const auto& key : options_.in_keys()) {
      const auto value = td.find(key);
      if (value && value->scalar_type() == torch::kFloat64) td.set(key, value->to(torch::kFloat));
    }
    return td;
  }
  for (const auto& [key, value] : td.items(/*include_nested=*/true, /*leaves_only=*/true)) {
    const auto* tensor = std::get_if<torch::Tensor>(&value);
    if (tensor && tensor->scalar_type() == torch::kFloat64) td.set(key, tensor->to(torch::kFloat));
  }
  return td;
}

TensorDict DoubleToFloat::inv(TensorDict td) {
  for (const auto& key : inv_keys_) {
    const auto value = td.find(key);
    if (value && value->scalar_type() != torch::kFloat64) {
      td.set(key, value->to(torch::kFloat64));
    }
  }
  return td;
}

namespace {

// The keys of `input_spec` to cast: `explicit_keys` held by it (checked float64), or every
// float64 leaf of it.
std::vector<NestedKey> keys_to_cast(const specs::CompositePtr& input_spec,
                                    const std::vector<NestedKey>& explicit_keys,
                                    const std::string& where) {
  std::vector<NestedKey> keys;
  if (explicit_keys.empty()) {
    for (const auto& [key, value] : input_spec->items(true, true)) {
      if (std::get<specs::TensorSpecPtr>(value)->dtype() == torch::kFloat64) keys.push_back(key);
    }
    return keys;
  }
  for (const auto& key : explicit_keys) {
    const auto value = input_spec->find_value(key);
    if (!value || !std::holds_alternative<specs::TensorSpecPtr>(*value)) continue;
    const auto& leaf = std::get<specs::TensorSpecPtr>(*value);
    TDRL_CHECK(leaf->dtype() == torch::kFloat64, TypeError, where, ": ", key.to_string(),
               " has dtype ", tensordict::dtype_name(leaf->dtype()), ", not torch.float64");
    keys.push_back(key);
  }
  return keys;
}

}  // namespace

EnvSpecs DoubleToFloat::transform_specs(const EnvSpecs& input) {
  const std::string where = "DoubleToFloat";
  detail::require_outputs(where, options_.in_keys(), input);
  detail::require_inputs(where, options_.in_keys_inv(), input);
  EnvSpecs out = input.clone();
  // Casts the keys to cast of `input_spec` in its clone `spec`; returns them.
  auto cast = [&](const specs::CompositePtr& spec, const specs::CompositePtr& input_spec,
                  const std::vector<NestedKey>& keys) {
    auto cast_keys = keys_to_cast(input_spec, keys, where);
    for (const auto& key : cast_keys)
      spec->set(key, detail::with_dtype(*input_spec->get(key), torch::kFloat, where, key));
    return cast_keys;
  };
  cast(out.observation, input.observation, options_.in_keys());
  cast(out.reward, input.reward, options_.in_keys());
  auto inv_keys = cast(out.action, input.action, options_.in_keys_inv());
  for (auto& key : cast(out.state, input.state, options_.in_keys_inv()))
    inv_keys.push_back(std::move(key));
  inv_keys_ = std::move(inv_keys);
  return out;
}

// ---- ClipTransform ---------------------------------------------------------------------------

namespace {

// The largest finite value of a floating dtype.
double dtype_max(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kHalf:
      return 65504.0;
    case torch::kBFloat16:
      return 3.3895313892515355e38;
    case torch::kFloat:
      return FLT_MAX;
    default:
      return DBL_MAX;
  }
}

}  // namespace

ClipTransform::ClipTransform(ClipTransformOptions options)
    : KeyedTransform("ClipTransform", options, Inverse::kNone), options_(std::move(options)) {
  detail::check_clip_bounds("ClipTransform", "low", options_.low(), "high", options_.high());
}

std::string ClipTransform::to_string() const {
  return "ClipTransform(" + keys_to_string() + ", low=" + detail::bound_repr(options_.low()) +
         ", high=" + detail::bound_repr(options_.high()) + ")";
}

torch::Tensor ClipTransform::apply_transform(const torch::Tensor& value, const NestedKey&) {
  return detail::clamp(value, options_.low(), options_.high());
}

specs::TensorSpecPtr ClipTransform::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                          const NestedKey& in_key,
                                                          const EnvSpecs&) {
  detail::require_floating(*spec, "ClipTransform", in_key);
  const double extreme = dtype_max(spec->dtype());
  const auto low = torch::tensor(options_.low().value_or(-extreme), torch::kFloat64);
  const auto high = torch::tensor(options_.high().value_or(extreme), torch::kFloat64);
  return detail::bounded(low, high, spec->shape(), spec->dtype(), spec->device());
}

// ---- UnsqueezeTransform ----------------------------------------------------------------------

UnsqueezeTransform::UnsqueezeTransform(int64_t dim, UnsqueezeTransformOptions options)
    : KeyedTransform("UnsqueezeTransform", options, Inverse::kSupported),
      dim_(dim),
      options_(std::move(options)) {
  TDRL_CHECK(!(dim_ >= 0), ValueError, "UnsqueezeTransform: dim is ", std::to_string(dim_),
             "; it must be negative (counted from the last dim, away from batch dims)");
}

std::string UnsqueezeTransform::to_string() const {
  // out_keys are always shown, as TorchRL prints them.
  std::string out = "UnsqueezeTransform(dim=" + std::to_string(dim_) +
                    ", in_keys=" + detail::keys_repr(in_keys()) +
                    ", out_keys=" + detail::keys_repr(out_keys());
  if (!in_keys_inv().empty()) out += ", in_keys_inv=" + detail::keys_repr(in_keys_inv());
  if (out_keys_inv() != in_keys_inv()) {
    out += ", out_keys_inv=" + detail::keys_repr(out_keys_inv());
  }
  return out + ")";
}

torch::Tensor UnsqueezeTransform::apply_transform(const torch::Tensor& value, const NestedKey&) {
  return value.unsqueeze(dim_);
}

torch::Tensor UnsqueezeTransform::apply_inverse(const torch::Tensor& value, const NestedKey&) {
  return value.squeeze(dim_);
}

specs::TensorSpecPtr UnsqueezeTransform::unsqueezed(const specs::TensorSpec& spec,
                                                    const NestedKey& key,
                                                    const EnvSpecs& input) const {
  const std::string where = "UnsqueezeTransform";
  const int64_t position = spec.ndim() + 1 + dim_;
  const auto batch_dims = static_cast<int64_t>(input.batch_size.size());
  TDRL_CHECK(!(position < batch_dims), ValueError, where, ": dim ", std::to_string(dim_),
             " would insert a dim among the ", "batch dims ",
             tensordict::shape_str(input.batch_size), " of ", key.to_string(), " (shape ",
             tensordict::shape_str(spec.shape()), "); use a dim in [-",
             std::to_string(spec.ndim() - batch_dims + 1), ", -1]");
  auto shape = spec.shape();
  shape.insert(shape.begin() + position, 1);
  if (dynamic_cast<const specs::Unbounded*>(&spec)) {
    return std::make_shared<specs::Unbounded>(
        shape, specs::UnboundedOptions().dtype(spec.dtype()).device(spec.device()));
  }
  if (const auto* b = dynamic_cast<const specs::Bounded*>(&spec)) {
    return detail::bounded(b->low().unsqueeze(dim_), b->high().unsqueeze(dim_), shape, spec.dtype(),
                           spec.device());
  }
  if (const auto* c = dynamic_cast<const specs::Categorical*>(&spec)) {
    return std::make_shared<specs::Categorical>(
        c->n(), specs::CategoricalOptions().shape(shape).dtype(spec.dtype()).device(spec.device()));
  }
  if (dynamic_cast<const specs::Binary*>(&spec)) {
    return std::make_shared<specs::Binary>(
        specs::BinaryOptions().shape(shape).dtype(spec.dtype()).device(spec.device()));
  }
  throw TypeError(where + ": the spec of " + key.to_string() + " is " + spec.type_name() +
                  "; only Unbounded, Bounded, Categorical and Binary specs can be unsqueezed");
}

specs::TensorSpecPtr UnsqueezeTransform::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                               const NestedKey& in_key,
                                                               const EnvSpecs& input) {
  return unsqueezed(*spec, in_key, input);
}

specs::TensorSpecPtr UnsqueezeTransform::transform_input_leaf(const specs::TensorSpecPtr& spec,
                                                              const NestedKey& in_key_inv,
                                                              const EnvSpecs& input) {
  return unsqueezed(*spec, in_key_inv, input);
}

// ---- ActionScaling ---------------------------------------------------------------------------

ActionScaling::ActionScaling(ActionScalingOptions options) : options_(std::move(options)) {}

std::string ActionScaling::to_string() const {
  const auto key = options_.action_key() ? options_.action_key() : key_;
  return "ActionScaling(action_key=" + (key ? key->to_string() : std::string("None")) + ")";
}

TensorDict ActionScaling::inv(TensorDict td) {
  TDRL_CHECK(key_, tensordict::Error,
             "ActionScaling: the transform has not seen an env's action spec; "
             "use it inside a TransformedEnv");
  const auto action = td.find(*key_);
  if (!action) return td;
  const auto options = action->options();
  // low + (a + 1) / 2 * (high - low) == mid + a * half_range, clamped against rounding.
  const auto scaled = torch::addcmul(mid_.to(options), *action, half_range_.to(options));
  td.set(*key_, torch::clamp(scaled, low_.to(options), high_.to(options)));
  return td;
}

specs::CompositePtr ActionScaling::transform_action_spec(specs::CompositePtr spec,
                                                         const EnvSpecs& input) {
  const std::string where = "ActionScaling";
  const auto key = options_.action_key() ? options_.action_key() : input.action_key();
  TDRL_CHECK(key, ValueError, where, ": the env has no action spec; there is nothing to scale");
  const auto value = input.action->find_value(*key);
  if (!value || !std::holds_alternative<specs::TensorSpecPtr>(*value)) {
    detail::throw_missing(where, "action_key", *key, detail::leaf_keys(*input.action), "action");
  }
  const auto& leaf = std::get<specs::TensorSpecPtr>(*value);
  const auto* bounded = dynamic_cast<const specs::Bounded*>(leaf.get());
  TDRL_CHECK(bounded && leaf->is_continuous(), TypeError, where, ": the action ", key->to_string(),
             " has a ", leaf->type_name(),
             " spec; ActionScaling needs a floating Bounded action spec");
  key_ = key;
  low_ = bounded->low();
  high_ = bounded->high();
  mid_ = (low_ + high_) / 2;
  half_range_ = (high_ - low_) / 2;
  spec->set(*key, detail::bounded(torch::tensor(-1.0), torch::tensor(1.0), leaf->shape(),
                                  leaf->dtype(), leaf->device()));
  return spec;
}

}  // namespace tdrl::envs
