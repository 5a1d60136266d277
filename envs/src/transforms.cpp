#include <tdrl/envs/transforms.h>

#include <cmath>
#include <sstream>

#include <tensordict/dtype.h>
#include <tensordict/errors.h>

#include <tdrl/specs/detail/spec_format.h>
#include "detail/transform_util.h"

namespace tdrl::envs {

using tensordict::IndexError;
using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;

// ---- Helpers (detail/transform_util.h) -------------------------------------------------------

namespace detail {

std::string keys_repr(const std::vector<NestedKey>& keys) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i].to_string();
  return out + "]";
}

std::string number_repr(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

std::string bool_repr(bool v) { return v ? "true" : "false"; }

std::string bound_repr(const std::optional<double>& bound) {
  return bound ? number_repr(*bound) : std::string("None");
}

torch::Tensor clamp(const torch::Tensor& value, const std::optional<double>& low,
                    const std::optional<double>& high) {
  c10::optional<c10::Scalar> lo, hi;
  if (low) lo = *low;
  if (high) hi = *high;
  return torch::clamp(value, lo, hi);
}

void check_clip_bounds(const std::string& where, const char* low_name,
                       const std::optional<double>& low, const char* high_name,
                       const std::optional<double>& high) {
  TDRL_CHECK(low || high, ValueError, where, ": neither ", low_name, " nor ", high_name,
             " is given; give at least one");
  for (const auto& [name, bound] :
       {std::make_pair(low_name, low), std::make_pair(high_name, high)}) {
    TDRL_CHECK(!(bound && !std::isfinite(*bound)), ValueError, where, ": ", name, " is ",
               number_repr(*bound), "; it must be finite (leave it out for no bound)");
  }
  TDRL_CHECK(!(low && high && *low > *high), ValueError, where, ": ", low_name, " ",
             number_repr(*low), " > ", high_name, " ", number_repr(*high));
}

std::vector<int64_t> with_trailing_one(std::vector<int64_t> shape) {
  shape.push_back(1);
  return shape;
}

specs::TensorSpecPtr flag_spec(const std::vector<int64_t>& batch, torch::Device device) {
  return std::make_shared<specs::Binary>(
      1, specs::BinaryOptions().shape(with_trailing_one(batch)).dtype(torch::kBool).device(device));
}

torch::Device device_of(const TensorDict& td) {
  if (td.device()) return *td.device();
  if (auto done = td.find(specs::kDone)) return done->device();
  return torch::kCPU;
}

std::vector<NestedKey> leaf_keys(const specs::Composite& spec) {
  return spec.keys(/*include_nested=*/true, /*leaves_only=*/true);
}

void throw_missing(const std::string& where, const std::string& what, const NestedKey& key,
                   const std::vector<NestedKey>& candidates, const std::string& spec_names) {
  std::vector<std::string> names;
  names.reserve(candidates.size());
  for (const auto& k : candidates) names.push_back(k.join_parts("."));
  throw KeyError(where + ": " + what + " " + key.to_string() + " is not in the " + spec_names +
                 " spec; available keys (closest first): " +
                 tensordict::closest_names(key.join_parts("."), names));
}

namespace {

bool holds_leaf(const specs::CompositePtr& spec, const NestedKey& key) {
  if (!spec) return false;
  const auto value = spec->find_value(key);
  return value && std::holds_alternative<specs::TensorSpecPtr>(*value);
}

// Throws KeyError naming `where` for the first of `keys` (the option `what`) that is a leaf of
// neither `first` nor `second` (`spec_names`: "observation or reward"), listing theirs.
void require_held(const std::string& where, const std::string& what,
                  const std::vector<NestedKey>& keys, const specs::CompositePtr& first,
                  const specs::CompositePtr& second, const std::string& spec_names) {
  for (const auto& key : keys) {
    if (holds_leaf(first, key) || holds_leaf(second, key)) continue;
    auto candidates = leaf_keys(*first);
    for (const auto& k : leaf_keys(*second)) candidates.push_back(k);
    throw_missing(where, what, key, candidates, spec_names);
  }
}

}  // namespace

specs::CompositePtr output_holding(const EnvSpecs& specs, const NestedKey& key) {
  if (holds_leaf(specs.observation, key)) return specs.observation;
  if (holds_leaf(specs.reward, key)) return specs.reward;
  return nullptr;
}

specs::CompositePtr input_holding(const EnvSpecs& specs, const NestedKey& key) {
  if (holds_leaf(specs.action, key)) return specs.action;
  if (holds_leaf(specs.state, key)) return specs.state;
  return nullptr;
}

void require_outputs(const std::string& where, const std::vector<NestedKey>& keys,
                     const EnvSpecs& specs) {
  require_held(where, "in_key", keys, specs.observation, specs.reward, "observation or reward");
}

void require_inputs(const std::string& where, const std::vector<NestedKey>& keys,
                    const EnvSpecs& specs) {
  require_held(where, "in_key_inv", keys, specs.action, specs.state, "action or state");
}

void reject_flag_key(const std::string& where, const NestedKey& key) {
  for (const char* flag : {specs::kDone, specs::kTerminated, specs::kTruncated}) {
    TDRL_CHECK(key != NestedKey(flag), ValueError, where, ": key ", key.to_string(),
               " is a done flag; envs always keep done, terminated and truncated");
  }
}

void require_keys(const std::string& where, const char* what, const std::vector<NestedKey>& keys) {
  TDRL_CHECK(!keys.empty(), ValueError, where, ": ", what, " is empty; give at least one key");
}

specs::TensorSpecPtr unbounded_like(const specs::TensorSpec& spec,
                                    std::optional<torch::Dtype> dtype) {
  return std::make_shared<specs::Unbounded>(
      spec.shape(),
      specs::UnboundedOptions().dtype(dtype.value_or(spec.dtype())).device(spec.device()));
}

specs::TensorSpecPtr bounded(const torch::Tensor& low, const torch::Tensor& high,
                             std::vector<int64_t> shape, torch::Dtype dtype, torch::Device device) {
  return std::make_shared<specs::Bounded>(specs::BoundedOptions()
                                              .low(low)
                                              .high(high)
                                              .shape(std::move(shape))
                                              .dtype(dtype)
                                              .device(device));
}

specs::TensorSpecPtr with_dtype(const specs::TensorSpec& spec, torch::Dtype dtype,
                                const std::string& where, const NestedKey& key) {
  if (dynamic_cast<const specs::Unbounded*>(&spec)) return unbounded_like(spec, dtype);
  if (const auto* b = dynamic_cast<const specs::Bounded*>(&spec)) {
    return bounded(b->low().to(dtype), b->high().to(dtype), b->shape(), dtype, b->device());
  }
  throw TypeError(where + ": the spec of " + key.to_string() + " is " + spec.type_name() +
                  "; only Unbounded and Bounded specs can change dtype");
}

void require_floating(const specs::TensorSpec& spec, const std::string& where,
                      const NestedKey& key) {
  TDRL_CHECK(c10::isFloatingType(spec.dtype()), TypeError, where, ": ", key.to_string(),
             " has dtype ", tensordict::dtype_name(spec.dtype()),
             "; the transform needs a floating-point entry (add DoubleToFloat or pick "
             "another key)");
}

std::vector<NestedKey> out_keys_or(const std::vector<NestedKey>& in,
                                   const std::vector<NestedKey>& out, const std::string& where) {
  if (out.empty()) return in;
  TDRL_CHECK(out.size() == in.size(), ValueError, where, ": ", std::to_string(out.size()),
             " out_keys ", keys_repr(out), " for ", std::to_string(in.size()), " in_keys ",
             keys_repr(in), "; give one out_key per in_key");
  return out;
}

}  // namespace detail

// ---- EnvSpecs --------------------------------------------------------------------------------

EnvSpecs EnvSpecs::of(const EnvBase& env) {
  EnvSpecs specs;
  specs.observation = env.observation_spec()->clone();
  specs.reward = env.full_reward_spec()->clone();
  specs.done = env.full_done_spec()->clone();
  specs.action = env.full_action_spec()->clone();
  specs.state = env.state_spec()->clone();
  specs.batch_size = env.batch_size();
  specs.device = env.device();
  return specs;
}

EnvSpecs EnvSpecs::clone() const {
  EnvSpecs specs;
  specs.observation = observation->clone();
  specs.reward = reward->clone();
  specs.done = done->clone();
  specs.action = action->clone();
  specs.state = state->clone();
  specs.batch_size = batch_size;
  specs.device = device;
  return specs;
}

NestedKey EnvSpecs::reward_key() const {
  const auto keys = detail::leaf_keys(*reward);
  TDRL_CHECK(keys.size() == 1, ValueError, "EnvSpecs::reward_key: the reward spec has ",
             std::to_string(keys.size()), " entries ", detail::keys_repr(keys),
             "; exactly one is needed");
  return keys.front();
}

std::optional<NestedKey> EnvSpecs::action_key() const {
  const auto keys = detail::leaf_keys(*action);
  TDRL_CHECK(!(keys.size() > 1), ValueError, "EnvSpecs::action_key: the action spec has ",
             std::to_string(keys.size()), " entries ", detail::keys_repr(keys),
             "; at most one is supported");
  if (keys.empty()) return std::nullopt;
  return keys.front();
}

specs::TensorSpecPtr EnvSpecs::find_output(const NestedKey& key) const {
  auto holder = detail::output_holding(*this, key);
  return holder ? holder->get(key) : nullptr;
}

specs::TensorSpecPtr EnvSpecs::find_input(const NestedKey& key) const {
  auto holder = detail::input_holding(*this, key);
  return holder ? holder->get(key) : nullptr;
}

// ---- Transform -------------------------------------------------------------------------------

std::string Transform::to_string() const { return name() + "()"; }

TensorDict Transform::forward(TensorDict td) { return call(std::move(td)); }

TensorDict Transform::reset(const TensorDict& input, TensorDict output) {
  return call(std::move(output));
}

TensorDict Transform::step(const TensorDict& root, TensorDict next) {
  return call(std::move(next));
}

TensorDict Transform::inv(TensorDict td) { return td; }

TensorDict Transform::step_through(const TensorDict& root, const StepFn& inner) {
  TensorDict in = inv(root);
  return step(in, inner(in));
}

EnvSpecs Transform::transform_specs(const EnvSpecs& input) {
  EnvSpecs out = input.clone();
  out.observation = transform_observation_spec(out.observation, input);
  out.reward = transform_reward_spec(out.reward, input);
  out.done = transform_done_spec(out.done, input);
  out.action = transform_action_spec(out.action, input);
  out.state = transform_state_spec(out.state, input);
  return out;
}

TensorDict Transform::state_dict() const { return TensorDict(); }

void Transform::load_state_dict(const TensorDict& state) {
  TDRL_CHECK(state.is_empty(), ValueError, name(), "::load_state_dict: ", name(),
             " has no state; got entries ",
             detail::keys_repr(state.keys(/*include_nested=*/true, /*leaves_only=*/true)));
}

TensorDict Transform::call(TensorDict td) { return td; }

void Transform::set_parent(TransformedEnv* env) { parent_ = env; }

void Transform::claim(const void* owner, const std::string& where) {
  TDRL_CHECK(!(owner_ && owner_ != owner), ValueError, where, ": ", name(),
             " already belongs to another Compose or TransformedEnv; a transform works "
             "in one env at a time (create a new one; VecNorm shares statistics through "
             "VecNormOptions().shared_state)");
  owner_ = owner;
}

void Transform::release() { owner_ = nullptr; }

std::ostream& operator<<(std::ostream& stream, const Transform& transform) {
  return stream << transform.to_string();
}

// ---- KeyedTransform --------------------------------------------------------------------------

KeyedTransform::KeyedTransform(const std::string& where, std::vector<NestedKey> in_keys,
                               std::vector<NestedKey> out_keys, std::vector<NestedKey> in_keys_inv,
                               std::vector<NestedKey> out_keys_inv, Inverse inverse)
    : where_(where),
      in_keys_(std::move(in_keys)),
      out_keys_(detail::out_keys_or(in_keys_, out_keys, where)),
      in_keys_inv_(std::move(in_keys_inv)),
      out_keys_inv_(out_keys_inv.empty() ? in_keys_inv_ : std::move(out_keys_inv)) {
  TDRL_CHECK(out_keys_inv_.size() == in_keys_inv_.size(), ValueError, where, ": ",
             std::to_string(out_keys_inv_.size()), " out_keys_inv ",
             detail::keys_repr(out_keys_inv_), " for ", std::to_string(in_keys_inv_.size()),
             " in_keys_inv ", detail::keys_repr(in_keys_inv_),
             "; give one out_key_inv per in_key_inv");
  if (inverse == Inverse::kNone) {
    TDRL_CHECK(in_keys_inv_.empty(), ValueError, where, ": in_keys_inv is ",
               detail::keys_repr(in_keys_inv_), ", but ", where,
               " has no inverse; leave in_keys_inv and out_keys_inv empty");
    detail::require_keys(where, "in_keys", in_keys_);
  } else {
    TDRL_CHECK(!(in_keys_.empty() && in_keys_inv_.empty()), ValueError, where,
               ": in_keys and in_keys_inv are both empty");
  }
}

TensorDict KeyedTransform::call(TensorDict td) {
  return map_outputs(std::move(td), [this](const torch::Tensor& value, const NestedKey& key) {
    return apply_transform(value, key);
  });
}

TensorDict KeyedTransform::reset(const TensorDict& input, TensorDict output) {
  return write_reward_copies(input, call(std::move(output)));
}

TensorDict KeyedTransform::write_reward_copies(const TensorDict& input, TensorDict output) const {
  const auto mask = input.get_or(specs::kReset, torch::Tensor());
  for (size_t i = 0; i < reward_copies_.size(); ++i) {
    if (!reward_copies_[i] || output.contains(out_keys_[i])) continue;
    auto zero = reward_copies_[i]->zero().to(detail::device_of(output));
    const auto previous = input.find(out_keys_[i]);
    if (mask.defined() && previous) {
      auto keep = mask;
      while (keep.dim() < zero.dim()) keep = keep.unsqueeze(-1);
      zero = torch::where(keep, zero, previous->to(zero.dtype()));
    }
    output.set(out_keys_[i], zero);
  }
  return output;
}

TensorDict KeyedTransform::inv(TensorDict td) {
  for (size_t i = 0; i < in_keys_inv_.size(); ++i) {
    const auto value = td.find(out_keys_inv_[i]);
    if (value) td.set(in_keys_inv_[i], apply_inverse(*value, in_keys_inv_[i]));
  }
  return td;
}

torch::Tensor KeyedTransform::apply_transform(const torch::Tensor& value, const NestedKey&) {
  return value;
}

torch::Tensor KeyedTransform::apply_inverse(const torch::Tensor& value, const NestedKey&) {
  return value;
}

specs::TensorSpecPtr KeyedTransform::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                           const NestedKey&, const EnvSpecs&) {
  return spec;
}

specs::TensorSpecPtr KeyedTransform::transform_input_leaf(const specs::TensorSpecPtr& spec,
                                                          const NestedKey&, const EnvSpecs&) {
  return spec;
}

specs::CompositePtr KeyedTransform::map_output_specs(specs::CompositePtr spec,
                                                     const specs::CompositePtr& holder,
                                                     bool is_reward, const EnvSpecs& input) {
  for (size_t i = 0; i < in_keys_.size(); ++i) {
    const auto& key = in_keys_[i];
    const auto from = detail::output_holding(input, key);
    // A result read from the reward but written elsewhere is an observation: the reward spec
    // keeps exactly one leaf.
    const bool in_place = key == out_keys_[i];
    const bool belongs = is_reward ? (from == input.reward && in_place)
                                   : (from == holder || (from == input.reward && !in_place));
    if (!belongs) continue;
    auto out = transform_output_leaf(from->get(key), key, input);
    if (from == input.reward && !in_place) reward_copies_[i] = out;
    spec->set(out_keys_[i], std::move(out));
  }
  return spec;
}

specs::CompositePtr KeyedTransform::map_input_specs(specs::CompositePtr spec,
                                                    const specs::CompositePtr& holder,
                                                    const EnvSpecs& input) {
  for (size_t i = 0; i < in_keys_inv_.size(); ++i) {
    const auto& key = in_keys_inv_[i];
    if (detail::input_holding(input, key) != holder) continue;
    auto leaf = transform_input_leaf(holder->get(key), key, input);
    if (out_keys_inv_[i] != key) spec->del_(key);
    spec->set(out_keys_inv_[i], std::move(leaf));
  }
  return spec;
}

specs::CompositePtr KeyedTransform::transform_observation_spec(specs::CompositePtr spec,
                                                               const EnvSpecs& input) {
  detail::require_outputs(where_, in_keys_, input);
  reward_copies_.assign(in_keys_.size(), nullptr);
  return map_output_specs(std::move(spec), input.observation, /*is_reward=*/false, input);
}

specs::CompositePtr KeyedTransform::transform_reward_spec(specs::CompositePtr spec,
                                                          const EnvSpecs& input) {
  return map_output_specs(std::move(spec), input.reward, /*is_reward=*/true, input);
}

specs::CompositePtr KeyedTransform::transform_action_spec(specs::CompositePtr spec,
                                                          const EnvSpecs& input) {
  detail::require_inputs(where_, in_keys_inv_, input);
  return map_input_specs(std::move(spec), input.action, input);
}

specs::CompositePtr KeyedTransform::transform_state_spec(specs::CompositePtr spec,
                                                         const EnvSpecs& input) {
  return map_input_specs(std::move(spec), input.state, input);
}

std::string KeyedTransform::keys_to_string() const {
  std::string out = "in_keys=" + detail::keys_repr(in_keys_);
  if (out_keys_ != in_keys_) out += ", out_keys=" + detail::keys_repr(out_keys_);
  if (!in_keys_inv_.empty()) out += ", in_keys_inv=" + detail::keys_repr(in_keys_inv_);
  if (out_keys_inv_ != in_keys_inv_) out += ", out_keys_inv=" + detail::keys_repr(out_keys_inv_);
  return out;
}

// ---- Compose ---------------------------------------------------------------------------------

namespace {

// True when `node` is `target` or (for a Compose) holds it at any depth.
bool holds(const Transform* node, const Transform* target) {
  if (node == target) return true;
  if (const auto* compose = dynamic_cast<const Compose*>(node)) {
    for (const auto& child : *compose) {
      if (holds(child.get(), target)) return true;
    }
  }
  return false;
}

// Appends to `out` the leaves of `compose` that come before `target`; true once found.
bool leaves_before(const Compose& compose, const Transform* target,
                   std::vector<TransformPtr>& out) {
  for (const auto& child : compose) {
    if (child.get() == target) return true;
    if (const auto* nested = dynamic_cast<const Compose*>(child.get())) {
      if (leaves_before(*nested, target, out)) return true;
    } else {
      out.push_back(child);
    }
  }
  return false;
}

}  // namespace

Compose::Compose(std::vector<TransformPtr> transforms) {
  try {
    for (auto& t : transforms) add(size(), std::move(t), "Compose");
  } catch (...) {
    for (auto& t : transforms_) t->release();
    throw;
  }
}

Compose::Compose(ViewTag, std::vector<TransformPtr> transforms)
    : transforms_(std::move(transforms)), view_(true) {}

std::shared_ptr<Compose> Compose::make(std::vector<TransformPtr> transforms) {
  return std::make_shared<Compose>(std::move(transforms));
}

Compose::~Compose() {
  if (view_) return;
  for (auto& t : transforms_) {
    t->set_parent(nullptr);
    t->release();
  }
}

void Compose::add(int64_t index, TransformPtr transform, const std::string& where) {
  TDRL_CHECK(!view_, ValueError, where, ": this Compose is a read-only view of another env's");
  TDRL_CHECK(transform, ValueError, where, ": the transform is null");
  TDRL_CHECK(!holds(transform.get(), this), ValueError, where,
             ": cannot add a Compose to itself (or to a Compose it holds)");
  transform->claim(this, where);
  transforms_.insert(transforms_.begin() + index, transform);
  transform->set_parent(parent());
  if (!parent()) return;
  try {
    parent()->refresh_specs();
  } catch (...) {
    transforms_.erase(transforms_.begin() + index);
    transform->set_parent(nullptr);
    transform->release();
    // The transforms after `index` saw other input specs during the failed attempt, and some
    // keep what they saw (e.g. ActionScaling's bounds): recompute with the old list (which
    // succeeded before).
    try {
      parent()->refresh_specs();
    } catch (...) {
    }
    throw;
  }
}

Compose& Compose::append(TransformPtr transform) {
  add(size(), std::move(transform), "Compose::append");
  return *this;
}

Compose& Compose::insert(int64_t index, TransformPtr transform) {
  const int64_t n = size();
  TDRL_CHECK(!(index < -n || index > n), IndexError, "Compose::insert: index ",
             std::to_string(index), " is out of range for ", std::to_string(n),
             " transforms; valid: [", std::to_string(-n), ", ", std::to_string(n), "]");
  add(index < 0 ? index + n : index, std::move(transform), "Compose::insert");
  return *this;
}

const TransformPtr& Compose::operator[](int64_t index) const {
  const int64_t n = size();
  TDRL_CHECK(!(index < -n || index >= n), IndexError, "Compose[", std::to_string(index),
             "]: index out of range for ", std::to_string(n), " transforms; valid: [",
             std::to_string(-n), ", ", std::to_string(n - 1), "]");
  return transforms_[static_cast<size_t>(index < 0 ? index + n : index)];
}

std::string Compose::to_string() const {
  if (transforms_.empty()) return "Compose()";
  std::string out = "Compose(";
  for (size_t i = 0; i < transforms_.size(); ++i) {
    out += "\n" + specs::detail::indent(transforms_[i]->to_string(), 4);
    out += i + 1 < transforms_.size() ? "," : ")";
  }
  return out;
}

TensorDict Compose::reset(const TensorDict& input, TensorDict output) {
  for (const auto& t : transforms_) output = t->reset(input, std::move(output));
  return output;
}

TensorDict Compose::step(const TensorDict& root, TensorDict next) {
  for (const auto& t : transforms_) next = t->step(root, std::move(next));
  return next;
}

TensorDict Compose::inv(TensorDict td) {
  for (auto it = transforms_.rbegin(); it != transforms_.rend(); ++it) td = (*it)->inv(td);
  return td;
}

namespace {

// One step through `transforms[0, n)` (n > 0 nests the first n transforms around `inner`).
TensorDict step_prefix(const std::vector<TransformPtr>& transforms, size_t n,
                       const TensorDict& root, const StepFn& inner) {
  if (n == 0) return inner(root);
  const StepFn below = [&transforms, n, &inner](const TensorDict& r) {
    return step_prefix(transforms, n - 1, r, inner);
  };
  return transforms[n - 1]->step_through(root, below);
}

}  // namespace

TensorDict Compose::step_through(const TensorDict& root, const StepFn& inner) {
  return step_prefix(transforms_, transforms_.size(), root, inner);
}

EnvSpecs Compose::transform_specs(const EnvSpecs& input) {
  EnvSpecs specs = input.clone();
  for (const auto& t : transforms_) specs = t->transform_specs(specs);
  return specs;
}

TensorDict Compose::state_dict() const {
  TensorDict state;
  for (size_t i = 0; i < transforms_.size(); ++i) {
    TensorDict child = transforms_[i]->state_dict();
    if (!child.is_empty()) state.set(std::to_string(i), child);
  }
  return state;
}

void Compose::load_state_dict(const TensorDict& state) {
  std::vector<std::pair<size_t, TensorDict>> parts;
  for (const auto& key : state.keys()) {
    const std::string& name = key.front();
    size_t index = transforms_.size();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos &&
        name.size() < 10) {
      index = static_cast<size_t>(std::stoul(name));
    }
    TDRL_CHECK(!(index >= transforms_.size()), KeyError, "Compose::load_state_dict: entry '", name,
               "' names no transform; this "
               "Compose has ",
               std::to_string(transforms_.size()),
               " (entries are their positions \"0\", \"1\", ...)");
    parts.emplace_back(index, state.get_tensordict(key));
  }
  for (auto& [index, child] : parts) transforms_[index]->load_state_dict(child);
}

TensorDict Compose::call(TensorDict td) {
  for (const auto& t : transforms_) td = t->call(std::move(td));
  return td;
}

void Compose::set_parent(TransformedEnv* env) {
  if (view_) return;
  Transform::set_parent(env);
  for (const auto& t : transforms_) t->set_parent(env);
}

void Compose::flatten(std::vector<TransformPtr>& out) const {
  for (const auto& t : transforms_) {
    if (const auto* nested = dynamic_cast<const Compose*>(t.get())) {
      nested->flatten(out);
    } else {
      out.push_back(t);
    }
  }
}

// ---- TransformedEnv --------------------------------------------------------------------------

namespace {

// Both throw for a null env (the base-class constructor's arguments are evaluated in any order).
std::string name_of(const std::shared_ptr<EnvBase>& env) {
  TDRL_CHECK(env, ValueError, "TransformedEnv: the env is null");
  return "TransformedEnv(" + env->name() + ")";
}

EnvBaseOptions options_of(const std::shared_ptr<EnvBase>& env) {
  TDRL_CHECK(env, ValueError, "TransformedEnv: the env is null");
  return EnvBaseOptions().batch_size(env->batch_size()).device(env->device());
}

}  // namespace

TransformedEnv::TransformedEnv(std::shared_ptr<EnvBase> env, TransformPtr transform)
    : EnvBase(name_of(env), options_of(env)), base_(std::move(env)) {
  auto compose = std::dynamic_pointer_cast<Compose>(transform);
  if (!transform) {
    compose = Compose::make();
  } else if (!compose) {
    compose = Compose::make({std::move(transform)});
  }
  compose->claim(this, "TransformedEnv");
  transform_ = compose;
  transform_->set_parent(this);
  try {
    refresh_specs();
  } catch (...) {
    transform_->set_parent(nullptr);
    transform_->release();
    throw;
  }
}

TransformedEnv::TransformedEnv(ViewTag, std::shared_ptr<EnvBase> env,
                               std::vector<TransformPtr> transforms)
    : EnvBase(name_of(env), options_of(env)),
      base_(std::move(env)),
      transform_(new Compose(Compose::ViewTag{}, std::move(transforms))) {
  refresh_specs();
}

TransformedEnv::~TransformedEnv() {
  if (!transform_) return;
  transform_->set_parent(nullptr);
  transform_->release();
}

TransformedEnv& TransformedEnv::append_transform(TransformPtr transform) {
  transform_->add(transform_->size(), std::move(transform), name() + "::append_transform");
  return *this;
}

TransformedEnv& TransformedEnv::insert_transform(int64_t index, TransformPtr transform) {
  transform_->insert(index, std::move(transform));
  return *this;
}

void TransformedEnv::refresh_specs() {
  apply_specs(transform_->transform_specs(EnvSpecs::of(*base_)));
}

void TransformedEnv::apply_specs(const EnvSpecs& specs) {
  const std::string where = name() + ": after the transforms, ";
  auto check_batch = [&](const char* what, const std::vector<int64_t>& shape, bool exact) {
    const auto& batch = batch_size();
    const bool ok = exact ? shape == batch
                          : shape.size() >= batch.size() &&
                                std::equal(batch.begin(), batch.end(), shape.begin());
    TDRL_CHECK(ok, ShapeError, where, "the ", std::string(what), " has shape ",
               tensordict::shape_str(shape), "; it must ", (exact ? "equal" : "start with"),
               " the batch_size ", tensordict::shape_str(batch));
  };
  check_batch("observation spec", specs.observation->shape(), true);
  check_batch("done spec", specs.done->shape(), true);
  check_batch("state spec", specs.state->shape(), true);
  const NestedKey reward_key = specs.reward_key();
  const specs::TensorSpecPtr reward = specs.reward->get(reward_key);
  check_batch("reward spec", reward->shape(), false);
  const auto action_key = specs.action_key();
  specs::TensorSpecPtr action;
  if (action_key) {
    action = specs.action->get(*action_key);
    check_batch("action spec", action->shape(), false);
  } else if (base_->action_spec()) {
    throw ValueError(where + "the action spec is empty; the base env " + base_->name() +
                     " takes an action, so a transform must not remove it");
  }
  for (const char* flag : {specs::kDone, specs::kTerminated, specs::kTruncated}) {
    TDRL_CHECK(specs.done->find(flag), KeyError, where, "the done spec lacks '", std::string(flag),
               "'");
  }
  set_observation_spec(specs.observation);
  set_reward_spec(reward, reward_key);
  set_done_spec(specs.done);
  set_state_spec(specs.state);
  if (action) set_action_spec(action, *action_key);
}

std::shared_ptr<EnvBase> TransformedEnv::env_before(const Transform& transform) const {
  std::vector<TransformPtr> before;
  TDRL_CHECK(leaves_before(*transform_, &transform, before), ValueError, name(),
             "::env_before: ", transform.name(), " is not one of this env's transforms");
  if (before.empty()) return base_;
  return std::shared_ptr<TransformedEnv>(new TransformedEnv(ViewTag{}, base_, std::move(before)));
}

std::string TransformedEnv::to_string() const {
  return "TransformedEnv(\n    env=" + base_->to_string() +
         ",\n    transform=" + specs::detail::indent(transform_->to_string(), 4).substr(4) + ")";
}

TensorDict TransformedEnv::reset_impl(const TensorDict& tensordict) {
  // The base reads the caller's entries and returns its outputs alone: a base that is itself a
  // TransformedEnv has transforms whose partial resets keep the input's values of the sub-envs
  // not reset (RewardSum's sums, a primer's hidden states).
  TensorDict output = base_->reset_output(tensordict);
  return transform_->reset(tensordict, output);
}

TensorDict TransformedEnv::step_impl(const TensorDict& tensordict) {
  // The transforms' inverses write into a shallow copy: the caller's root keeps its action.
  const TensorDict root = tensordict.clone(/*recurse=*/false);
  EnvBase* base = base_.get();
  const StepFn base_step = [base](const TensorDict& r) {
    base->step(r);
    return r.get_tensordict(specs::kNext);
  };
  return transform_->step_through(root, base_step);
}

bool TransformedEnv::save_state(TensorDict& state) const {
  const TensorDict base = base_->state_dict();
  state.set("base", base);
  const TensorDict transforms = transform_->state_dict();
  if (!transforms.is_empty()) state.set("transforms", transforms);
  return base.get("resumes_episodes").item<bool>();
}

void TransformedEnv::load_state(const TensorDict& state) {
  TDRL_CHECK(state.contains("base"), KeyError, name(),
             "::load_state_dict: the state has no \"base\" (the wrapped env's state); pass what "
             "state_dict() of a TransformedEnv returned");
  base_->load_state_dict(state.get_tensordict("base"));
  if (state.contains("transforms")) transform_->load_state_dict(state.get_tensordict("transforms"));
}

uint64_t TransformedEnv::set_seed_impl(uint64_t seed) {
  const uint64_t next = base_->set_seed(seed);
  generator().set_current_seed(next);
  return next - seed + 1;
}

}  // namespace tdrl::envs
