// Key and value transforms: CatTensors, RenameTransform, ExcludeTransform, SelectTransform,
// DoubleToFloat, ClipTransform, UnsqueezeTransform, ActionScaling.

#include <algorithm>
#include <cfloat>
#include <cmath>

#include <torch/torch.h>

#include <tdrl/envs/transforms/keys.h>
#include <tdrl/envs/transforms/values.h>
#include <tensordict/errors.h>

#include <tdrl/specs/detail/spec_format.h>
#include "detail/transform_util.h"

namespace tdrl::envs {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::Value;
using tensordict::ValueError;

namespace {

std::string bool_repr(bool v) { return v ? "true" : "false"; }

void require_keys(const std::string& where, const char* what, const std::vector<NestedKey>& keys) {
  if (keys.empty()) throw ValueError(where + ": " + what + " is empty; give at least one key");
}

// The leaf spec at `key` of the observation spec of `input`; KeyError naming `where` otherwise.
specs::TensorSpecPtr observation_leaf(const std::string& where, const EnvSpecs& input,
                                      const NestedKey& key) {
  const auto value = input.observation->find_value(key);
  if (!value || !std::holds_alternative<specs::TensorSpecPtr>(*value)) {
    detail::throw_missing(where, "in_key", key, detail::leaf_keys(*input.observation),
                          "observation");
  }
  return std::get<specs::TensorSpecPtr>(*value);
}

}  // namespace

// ---- CatTensors ------------------------------------------------------------------------------

CatTensors::CatTensors(std::vector<NestedKey> in_keys, CatTensorsOptions options)
    : in_keys_(std::move(in_keys)), options_(std::move(options)) {
  require_keys("CatTensors", "in_keys", in_keys_);
  if (options_.dim() >= 0) {
    throw ValueError("CatTensors: dim is " + std::to_string(options_.dim()) +
                     "; it must be negative (counted from the last dim, away from batch dims)");
  }
  if (options_.sort()) std::sort(in_keys_.begin(), in_keys_.end());
  for (size_t i = 0; i < in_keys_.size(); ++i) {
    for (size_t j = i + 1; j < in_keys_.size(); ++j) {
      if (in_keys_[i] == in_keys_[j]) {
        throw ValueError("CatTensors: in_key " + in_keys_[i].repr() + " is given twice");
      }
    }
  }
}

std::string CatTensors::to_string() const {
  return "CatTensors(in_keys=" + detail::keys_repr(in_keys_) +
         ", out_key=" + options_.out_key().repr() + ", dim=" + std::to_string(options_.dim()) +
         ", del_keys=" + bool_repr(options_.del_keys()) + ")";
}

TensorDict CatTensors::call(TensorDict td) {
  std::vector<torch::Tensor> values;
  std::vector<NestedKey> missing;
  for (const auto& key : in_keys_) {
    if (auto value = td.find(key)) {
      values.push_back(*value);
    } else {
      missing.push_back(key);
    }
  }
  if (values.empty()) return td;
  if (!missing.empty()) {
    throw KeyError(
        "CatTensors: the TensorDict lacks " + detail::keys_repr(missing) + " of the in_keys " +
        detail::keys_repr(in_keys_) +
        "; it must hold all of them or none; keys: " + detail::keys_repr(td.keys(true, true)));
  }
  const auto out = torch::cat(values, options_.dim());
  if (options_.del_keys()) {
    for (const auto& key : in_keys_) td.del_(key);
  }
  td.set(options_.out_key(), out);
  return td;
}

specs::CompositePtr CatTensors::transform_observation_spec(specs::CompositePtr spec,
                                                           const EnvSpecs& input) {
  const std::string where = "CatTensors";
  std::vector<specs::TensorSpecPtr> leaves;
  for (const auto& key : in_keys_) leaves.push_back(observation_leaf(where, input, key));
  const auto& first = *leaves.front();
  const int64_t ndim = first.ndim();
  const int64_t batch_dims = static_cast<int64_t>(input.batch_size.size());
  const int64_t dim = ndim + options_.dim();
  if (dim < batch_dims) {
    throw ValueError(where + ": dim " + std::to_string(options_.dim()) + " of " +
                     in_keys_.front().repr() + " (shape " + tensordict::shape_str(first.shape()) +
                     ") falls in the batch dims " + tensordict::shape_str(input.batch_size));
  }
  auto shape = first.shape();
  bool all_bounded = true;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const auto& leaf = *leaves[i];
    if (leaf.dtype() != first.dtype()) {
      throw TypeError(where + ": " + in_keys_[i].repr() + " has dtype " +
                      specs::detail::dtype_repr(leaf.dtype()) + " but " + in_keys_.front().repr() +
                      " has " + specs::detail::dtype_repr(first.dtype()) +
                      "; concatenated entries need one dtype (cast them first)");
    }
    bool same = leaf.ndim() == ndim;
    for (int64_t d = 0; same && d < ndim; ++d) {
      if (d != dim && leaf.shape()[d] != first.shape()[d]) same = false;
    }
    if (!same) {
      throw ShapeError(where + ": " + in_keys_[i].repr() + " has shape " +
                       tensordict::shape_str(leaf.shape()) + " and " + in_keys_.front().repr() +
                       " has " + tensordict::shape_str(first.shape()) +
                       "; they must be equal but along dim " + std::to_string(options_.dim()));
    }
    if (i > 0) shape[dim] += leaf.shape()[dim];
    all_bounded = all_bounded && dynamic_cast<const specs::Bounded*>(&leaf);
  }
  specs::TensorSpecPtr out;
  if (all_bounded) {
    std::vector<torch::Tensor> lows, highs;
    for (const auto& leaf : leaves) {
      lows.push_back(static_cast<const specs::Bounded&>(*leaf).low());
      highs.push_back(static_cast<const specs::Bounded&>(*leaf).high());
    }
    out = detail::bounded(torch::cat(lows, options_.dim()), torch::cat(highs, options_.dim()),
                          shape, first.dtype(), first.device());
  } else {
    out = std::make_shared<specs::Unbounded>(
        shape, specs::UnboundedOptions().dtype(first.dtype()).device(first.device()));
  }
  if (options_.del_keys()) {
    for (const auto& key : in_keys_) spec->del_(key);
  }
  spec->set(options_.out_key(), out);
  return spec;
}

// ---- RenameTransform -------------------------------------------------------------------------

RenameTransform::RenameTransform(RenameTransformOptions options) : options_(std::move(options)) {
  const std::string where = "RenameTransform";
  if (options_.in_keys().size() != options_.out_keys().size()) {
    throw ValueError(where + ": " + std::to_string(options_.in_keys().size()) + " in_keys " +
                     detail::keys_repr(options_.in_keys()) + " but " +
                     std::to_string(options_.out_keys().size()) + " out_keys " +
                     detail::keys_repr(options_.out_keys()) + "; give one out_key per in_key");
  }
  if (options_.in_keys_inv().size() != options_.out_keys_inv().size()) {
    throw ValueError(where + ": " + std::to_string(options_.in_keys_inv().size()) +
                     " in_keys_inv " + detail::keys_repr(options_.in_keys_inv()) + " but " +
                     std::to_string(options_.out_keys_inv().size()) + " out_keys_inv " +
                     detail::keys_repr(options_.out_keys_inv()) +
                     "; give one out_key_inv per in_key_inv");
  }
  if (options_.in_keys().empty() && options_.in_keys_inv().empty()) {
    throw ValueError(where +
                     ": no keys to rename; give in_keys/out_keys or "
                     "in_keys_inv/out_keys_inv");
  }
  for (const auto* keys : {&options_.in_keys(), &options_.out_keys(), &options_.in_keys_inv(),
                           &options_.out_keys_inv()}) {
    for (const auto& key : *keys) detail::reject_flag_key(where, key);
  }
}

std::string RenameTransform::to_string() const {
  std::string out = "RenameTransform(in_keys=" + detail::keys_repr(options_.in_keys()) +
                    ", out_keys=" + detail::keys_repr(options_.out_keys());
  if (!options_.in_keys_inv().empty()) {
    out += ", in_keys_inv=" + detail::keys_repr(options_.in_keys_inv()) +
           ", out_keys_inv=" + detail::keys_repr(options_.out_keys_inv());
  }
  return out + ", create_copy=" + bool_repr(options_.create_copy()) + ")";
}

namespace {

// Moves (or copies) the entries of `td` at `from` to `to`; all reads before any write, so
// swaps work. Missing entries are skipped.
void rename_entries(const TensorDict& td, const std::vector<NestedKey>& from,
                    const std::vector<NestedKey>& to, bool copy) {
  std::vector<std::pair<NestedKey, Value>> moved;
  for (size_t i = 0; i < from.size(); ++i) {
    if (auto value = td.find_value(from[i])) moved.emplace_back(to[i], *value);
  }
  if (!copy) {
    for (const auto& key : from) {
      if (td.contains(key)) td.del_(key);
    }
  }
  for (const auto& [key, value] : moved) td.set(key, value);
}

}  // namespace

TensorDict RenameTransform::call(TensorDict td) {
  rename_entries(td, options_.in_keys(), options_.out_keys(), options_.create_copy());
  return td;
}

TensorDict RenameTransform::inv(TensorDict td) {
  rename_entries(td, options_.out_keys_inv(), options_.in_keys_inv(), options_.create_copy());
  return td;
}

specs::CompositePtr RenameTransform::rename_spec(specs::CompositePtr spec,
                                                 const specs::CompositePtr& input_spec,
                                                 const std::vector<NestedKey>& from,
                                                 const std::vector<NestedKey>& to) const {
  std::vector<std::pair<NestedKey, specs::SpecValue>> moved;
  for (size_t i = 0; i < from.size(); ++i) {
    const auto value = input_spec->find_value(from[i]);
    if (value && std::holds_alternative<specs::TensorSpecPtr>(*value)) {
      moved.emplace_back(to[i], *value);
      if (!options_.create_copy()) spec->del_(from[i]);
    }
  }
  for (const auto& [key, value] : moved) spec->set(key, value);
  return spec;
}

specs::CompositePtr RenameTransform::transform_observation_spec(specs::CompositePtr spec,
                                                                const EnvSpecs& input) {
  detail::require_outputs("RenameTransform", options_.in_keys(), input);
  return rename_spec(std::move(spec), input.observation, options_.in_keys(), options_.out_keys());
}

specs::CompositePtr RenameTransform::transform_reward_spec(specs::CompositePtr spec,
                                                           const EnvSpecs& input) {
  return rename_spec(std::move(spec), input.reward, options_.in_keys(), options_.out_keys());
}

specs::CompositePtr RenameTransform::transform_action_spec(specs::CompositePtr spec,
                                                           const EnvSpecs& input) {
  detail::require_inputs("RenameTransform", options_.in_keys_inv(), input);
  return rename_spec(std::move(spec), input.action, options_.in_keys_inv(),
                     options_.out_keys_inv());
}

specs::CompositePtr RenameTransform::transform_state_spec(specs::CompositePtr spec,
                                                          const EnvSpecs& input) {
  return rename_spec(std::move(spec), input.state, options_.in_keys_inv(), options_.out_keys_inv());
}

// ---- ExcludeTransform ------------------------------------------------------------------------

ExcludeTransform::ExcludeTransform(std::vector<NestedKey> excluded_keys)
    : excluded_keys_(std::move(excluded_keys)) {
  require_keys("ExcludeTransform", "excluded_keys", excluded_keys_);
}

std::string ExcludeTransform::to_string() const {
  return "ExcludeTransform(excluded_keys=" + detail::keys_repr(excluded_keys_) + ")";
}

TensorDict ExcludeTransform::call(TensorDict td) {
  for (const auto& key : excluded_keys_) {
    if (td.contains(key)) td.del_(key);
  }
  return td;
}

specs::CompositePtr ExcludeTransform::transform_observation_spec(specs::CompositePtr spec,
                                                                 const EnvSpecs& input) {
  const std::string where = "ExcludeTransform";
  const auto reward_key = input.reward_key();
  for (const auto& key : excluded_keys_) {
    detail::reject_flag_key(where, key);
    if (key == reward_key) {
      throw ValueError(where + ": cannot exclude the reward " + key.repr() +
                       "; every step returns it");
    }
    if (!input.observation->contains(key)) {
      detail::throw_missing(where, "excluded key", key, detail::leaf_keys(*input.observation),
                            "observation");
    }
    spec->del_(key);
  }
  return spec;
}

// ---- SelectTransform -------------------------------------------------------------------------

SelectTransform::SelectTransform(std::vector<NestedKey> selected_keys)
    : selected_keys_(std::move(selected_keys)) {
  require_keys("SelectTransform", "selected_keys", selected_keys_);
  kept_ = selected_keys_;
  for (const char* key : {specs::kReward, specs::kDone, specs::kTerminated, specs::kTruncated})
    kept_.emplace_back(key);
}

std::string SelectTransform::to_string() const {
  return "SelectTransform(selected_keys=" + detail::keys_repr(selected_keys_) + ")";
}

TensorDict SelectTransform::call(TensorDict td) { return td.select(kept_, /*strict=*/false); }

specs::CompositePtr SelectTransform::transform_observation_spec(specs::CompositePtr spec,
                                                                const EnvSpecs& input) {
  auto selected = specs::Composite::make({}, spec->shape(), spec->device());
  for (const auto& key : selected_keys_) {
    if (!spec->contains(key)) {
      detail::throw_missing("SelectTransform", "selected key", key,
                            detail::leaf_keys(*input.observation), "observation");
    }
    selected->set(key, spec->get_value(key));
  }
  return selected;
}

specs::CompositePtr SelectTransform::transform_reward_spec(specs::CompositePtr spec,
                                                           const EnvSpecs& input) {
  kept_ = selected_keys_;
  kept_.push_back(input.reward_key());
  for (const char* key : {specs::kDone, specs::kTerminated, specs::kTruncated})
    kept_.emplace_back(key);
  return spec;
}

// ---- DoubleToFloat ---------------------------------------------------------------------------

DoubleToFloat::DoubleToFloat(DoubleToFloatOptions options) : options_(std::move(options)) {}

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
    if (leaf->dtype() != torch::kFloat64) {
      throw TypeError(where + ": " + key.repr() + " has dtype " +
                      specs::detail::dtype_repr(leaf->dtype()) + ", not torch.float64");
    }
    keys.push_back(key);
  }
  return keys;
}

}  // namespace

specs::CompositePtr DoubleToFloat::cast_outputs(specs::CompositePtr spec,
                                                const specs::CompositePtr& input_spec,
                                                const EnvSpecs& input) {
  for (const auto& key : keys_to_cast(input_spec, options_.in_keys(), "DoubleToFloat")) {
    spec->set(key, detail::with_dtype(*input_spec->get(key), torch::kFloat, "DoubleToFloat", key));
  }
  return spec;
}

specs::CompositePtr DoubleToFloat::cast_inputs(specs::CompositePtr spec,
                                               const specs::CompositePtr& input_spec,
                                               const EnvSpecs& input) {
  for (const auto& key : keys_to_cast(input_spec, options_.in_keys_inv(), "DoubleToFloat")) {
    spec->set(key, detail::with_dtype(*input_spec->get(key), torch::kFloat, "DoubleToFloat", key));
    inv_keys_.push_back(key);
  }
  return spec;
}

specs::CompositePtr DoubleToFloat::transform_observation_spec(specs::CompositePtr spec,
                                                              const EnvSpecs& input) {
  detail::require_outputs("DoubleToFloat", options_.in_keys(), input);
  return cast_outputs(std::move(spec), input.observation, input);
}

specs::CompositePtr DoubleToFloat::transform_reward_spec(specs::CompositePtr spec,
                                                         const EnvSpecs& input) {
  return cast_outputs(std::move(spec), input.reward, input);
}

specs::CompositePtr DoubleToFloat::transform_action_spec(specs::CompositePtr spec,
                                                         const EnvSpecs& input) {
  // The action hook runs before the state hook (Transform::transform_specs): the input keys
  // found here and there make up inv_keys_.
  detail::require_inputs("DoubleToFloat", options_.in_keys_inv(), input);
  inv_keys_.clear();
  return cast_inputs(std::move(spec), input.action, input);
}

specs::CompositePtr DoubleToFloat::transform_state_spec(specs::CompositePtr spec,
                                                        const EnvSpecs& input) {
  return cast_inputs(std::move(spec), input.state, input);
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

ClipTransform::ClipTransform(ClipTransformOptions options) : options_(std::move(options)) {
  const std::string where = "ClipTransform";
  require_keys(where, "in_keys", options_.in_keys());
  if (!options_.low() && !options_.high()) {
    throw ValueError(where + ": neither low nor high is given; give at least one");
  }
  for (const auto& [name, bound] :
       {std::make_pair("low", options_.low()), std::make_pair("high", options_.high())}) {
    if (bound && !std::isfinite(*bound)) {
      throw ValueError(where + ": " + name + " is " + detail::number_repr(*bound) +
                       "; it must be finite (leave it out for no bound)");
    }
  }
  if (options_.low() && options_.high() && *options_.low() > *options_.high()) {
    throw ValueError(where + ": low " + detail::number_repr(*options_.low()) + " > high " +
                     detail::number_repr(*options_.high()));
  }
}

std::string ClipTransform::to_string() const {
  auto bound = [](const std::optional<double>& v) {
    return v ? detail::number_repr(*v) : std::string("None");
  };
  return "ClipTransform(in_keys=" + detail::keys_repr(options_.in_keys()) +
         ", low=" + bound(options_.low()) + ", high=" + bound(options_.high()) + ")";
}

TensorDict ClipTransform::call(TensorDict td) {
  c10::optional<c10::Scalar> low, high;
  if (options_.low()) low = *options_.low();
  if (options_.high()) high = *options_.high();
  for (const auto& key : options_.in_keys()) {
    const auto value = td.find(key);
    if (value) td.set(key, torch::clamp(*value, low, high));
  }
  return td;
}

specs::CompositePtr ClipTransform::clip_specs(specs::CompositePtr spec,
                                              const specs::CompositePtr& input_spec,
                                              const EnvSpecs& input) const {
  for (const auto& key : options_.in_keys()) {
    if (detail::output_holding(input, key) != input_spec) continue;
    const auto leaf = input_spec->get(key);
    detail::require_floating(*leaf, "ClipTransform", key);
    const double extreme = dtype_max(leaf->dtype());
    const auto low = torch::tensor(options_.low().value_or(-extreme), torch::kFloat64);
    const auto high = torch::tensor(options_.high().value_or(extreme), torch::kFloat64);
    spec->set(key, detail::bounded(low, high, leaf->shape(), leaf->dtype(), leaf->device()));
  }
  return spec;
}

specs::CompositePtr ClipTransform::transform_observation_spec(specs::CompositePtr spec,
                                                              const EnvSpecs& input) {
  detail::require_outputs("ClipTransform", options_.in_keys(), input);
  return clip_specs(std::move(spec), input.observation, input);
}

specs::CompositePtr ClipTransform::transform_reward_spec(specs::CompositePtr spec,
                                                         const EnvSpecs& input) {
  return clip_specs(std::move(spec), input.reward, input);
}

// ---- UnsqueezeTransform ----------------------------------------------------------------------

UnsqueezeTransform::UnsqueezeTransform(int64_t dim, UnsqueezeTransformOptions options)
    : dim_(dim),
      options_(std::move(options)),
      out_keys_(
          detail::out_keys_or(options_.in_keys(), options_.out_keys(), "UnsqueezeTransform")) {
  if (dim_ >= 0) {
    throw ValueError("UnsqueezeTransform: dim is " + std::to_string(dim_) +
                     "; it must be negative (counted from the last dim, away from batch dims)");
  }
  if (options_.in_keys().empty() && options_.in_keys_inv().empty()) {
    throw ValueError("UnsqueezeTransform: in_keys and in_keys_inv are both empty");
  }
}

std::string UnsqueezeTransform::to_string() const {
  std::string out = "UnsqueezeTransform(dim=" + std::to_string(dim_) +
                    ", in_keys=" + detail::keys_repr(options_.in_keys()) +
                    ", out_keys=" + detail::keys_repr(out_keys_);
  if (!options_.in_keys_inv().empty()) {
    out += ", in_keys_inv=" + detail::keys_repr(options_.in_keys_inv());
  }
  return out + ")";
}

TensorDict UnsqueezeTransform::call(TensorDict td) {
  for (size_t i = 0; i < out_keys_.size(); ++i) {
    const auto value = td.find(options_.in_keys()[i]);
    if (value) td.set(out_keys_[i], value->unsqueeze(dim_));
  }
  return td;
}

TensorDict UnsqueezeTransform::inv(TensorDict td) {
  for (const auto& key : options_.in_keys_inv()) {
    const auto value = td.find(key);
    if (value) td.set(key, value->squeeze(dim_));
  }
  return td;
}

specs::TensorSpecPtr UnsqueezeTransform::unsqueezed(const specs::TensorSpec& spec,
                                                    const NestedKey& key,
                                                    const EnvSpecs& input) const {
  const std::string where = "UnsqueezeTransform";
  const int64_t position = spec.ndim() + 1 + dim_;
  const auto batch_dims = static_cast<int64_t>(input.batch_size.size());
  if (position < batch_dims) {
    throw ValueError(where + ": dim " + std::to_string(dim_) + " would insert a dim among the " +
                     "batch dims " + tensordict::shape_str(input.batch_size) + " of " + key.repr() +
                     " (shape " + tensordict::shape_str(spec.shape()) + "); use a dim in [-" +
                     std::to_string(spec.ndim() - batch_dims + 1) + ", -1]");
  }
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
  throw TypeError(where + ": the spec of " + key.repr() + " is " + spec.type_name() +
                  "; only Unbounded, Bounded, Categorical and Binary specs can be unsqueezed");
}

specs::CompositePtr UnsqueezeTransform::transform_outputs(specs::CompositePtr spec,
                                                          const specs::CompositePtr& input_spec,
                                                          const EnvSpecs& input) const {
  for (size_t i = 0; i < out_keys_.size(); ++i) {
    const auto& key = options_.in_keys()[i];
    if (detail::output_holding(input, key) != input_spec) continue;
    spec->set(out_keys_[i], unsqueezed(*input_spec->get(key), key, input));
  }
  return spec;
}

specs::CompositePtr UnsqueezeTransform::transform_inputs(specs::CompositePtr spec,
                                                         const specs::CompositePtr& input_spec,
                                                         const EnvSpecs& input) const {
  for (const auto& key : options_.in_keys_inv()) {
    if (detail::input_holding(input, key) != input_spec) continue;
    spec->set(key, unsqueezed(*input_spec->get(key), key, input));
  }
  return spec;
}

specs::CompositePtr UnsqueezeTransform::transform_observation_spec(specs::CompositePtr spec,
                                                                   const EnvSpecs& input) {
  detail::require_outputs("UnsqueezeTransform", options_.in_keys(), input);
  return transform_outputs(std::move(spec), input.observation, input);
}

specs::CompositePtr UnsqueezeTransform::transform_reward_spec(specs::CompositePtr spec,
                                                              const EnvSpecs& input) {
  return transform_outputs(std::move(spec), input.reward, input);
}

specs::CompositePtr UnsqueezeTransform::transform_action_spec(specs::CompositePtr spec,
                                                              const EnvSpecs& input) {
  detail::require_inputs("UnsqueezeTransform", options_.in_keys_inv(), input);
  return transform_inputs(std::move(spec), input.action, input);
}

specs::CompositePtr UnsqueezeTransform::transform_state_spec(specs::CompositePtr spec,
                                                             const EnvSpecs& input) {
  return transform_inputs(std::move(spec), input.state, input);
}

// ---- ActionScaling ---------------------------------------------------------------------------

ActionScaling::ActionScaling(ActionScalingOptions options) : options_(std::move(options)) {}

std::string ActionScaling::to_string() const {
  const auto key = options_.action_key() ? options_.action_key() : key_;
  return "ActionScaling(action_key=" + (key ? key->repr() : std::string("None")) + ")";
}

TensorDict ActionScaling::inv(TensorDict td) {
  if (!key_) {
    throw tensordict::Error(
        "ActionScaling: the transform has not seen an env's action spec; "
        "use it inside a TransformedEnv");
  }
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
  if (!key) throw ValueError(where + ": the env has no action spec; there is nothing to scale");
  const auto value = input.action->find_value(*key);
  if (!value || !std::holds_alternative<specs::TensorSpecPtr>(*value)) {
    detail::throw_missing(where, "action_key", *key, detail::leaf_keys(*input.action), "action");
  }
  const auto& leaf = std::get<specs::TensorSpecPtr>(*value);
  const auto* bounded = dynamic_cast<const specs::Bounded*>(leaf.get());
  if (!bounded || !leaf->is_continuous()) {
    throw TypeError(where + ": the action " + key->repr() + " has a " + leaf->type_name() +
                    " spec; ActionScaling needs a floating Bounded action spec");
  }
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
