#include <tdrl/envs/env_base.h>

#include <algorithm>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

#include <tensordict/errors.h>
#include <tensordict/lazy_stacked_tensordict.h>

#include "detail/transform_util.h"

namespace tdrl::envs {

using tensordict::KeyError;
using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;

namespace {

using detail::flag_spec;
using detail::keys_repr;
using detail::with_trailing_one;

// Throws unless `spec` (the env's `what` spec, e.g. "done") is set and has the env's batch shape.
void check_composite_spec(const std::string& env, const char* what, const specs::Composite* spec,
                          const std::vector<int64_t>& batch) {
  TDRL_CHECK(spec, ValueError, env, ": the ", what, " spec is null");
  TDRL_CHECK(spec->shape() == batch, ShapeError, env, ": the ", what, " spec has batch shape ",
             shape_str(spec->shape()), "; it must equal the env's batch_size ", shape_str(batch));
}

// The mask `[*batch, 1]` of `td`'s "_reset" entry, or an undefined tensor when absent.
torch::Tensor reset_mask(const TensorDict& td, const std::vector<int64_t>& batch,
                         const std::string& env) {
  auto mask = td.find(specs::kReset);
  if (!mask) return {};
  auto m = *mask;
  const auto expected = with_trailing_one(batch);
  if (m.sizes().vec() == batch) m = m.unsqueeze(-1);
  TDRL_CHECK(!(m.sizes().vec() != expected || m.scalar_type() != torch::kBool), ShapeError, env,
             "::reset: \"_reset\" is ", shape_str(mask->sizes()), " ",
             std::string(c10::toString(mask->scalar_type())), "; expected bool ",
             shape_str(expected), " (or ", shape_str(batch), ")");
  return m;
}

}  // namespace

// ---- step_mdp ------------------------------------------------------------------------------

TensorDict step_mdp(const TensorDict& td, const StepMdpOptions& options) {
  TDRL_CHECK(td.contains(specs::kNext), KeyError,
             "step_mdp: the TensorDict has no \"next\" entry (run env.step first); keys: ",
             keys_repr(td.keys()));
  const TensorDict next = td.get_tensordict(specs::kNext);
  TensorDict out = TensorDict::empty(td.batch_size(), td.device());
  const std::vector<NestedKey> flags{specs::kDone, specs::kTerminated, specs::kTruncated};
  auto excluded = [&](const NestedKey& key) {
    if (options.exclude_action() && key == options.action_key()) return true;
    if (options.exclude_reward() && key == options.reward_key()) return true;
    if (options.exclude_done() && std::find(flags.begin(), flags.end(), key) != flags.end()) {
      return true;
    }
    return false;
  };
  // A nested TensorDict gets its own (shallow) node: sharing the handle would let a later
  // write into the new root (a partial reset's update) change the stepped data.
  auto put = [&out](const NestedKey& key, const tensordict::Value& value) {
    if (const auto* nested = std::get_if<TensorDict>(&value)) {
      out.set(key, nested->clone(/*recurse=*/false));
    } else {
      out.set(key, value);
    }
  };
  if (options.keep_other()) {
    for (const auto& [key, value] : td.items()) {
      if (key == NestedKey(specs::kNext) || next.contains(key) || excluded(key)) continue;
      put(key, value);
    }
  }
  for (const auto& [key, value] : next.items()) {
    if (!excluded(key)) put(key, value);
  }
  return out;
}

// ---- EnvBase -------------------------------------------------------------------------------

EnvBase::EnvBase(std::string name, const EnvBaseOptions& options)
    : name_(std::move(name)),
      batch_size_(options.batch_size()),
      device_(options.device()),
      generator_(at::make_generator<at::CPUGeneratorImpl>(0)) {
  for (auto d : batch_size_) {
    TDRL_CHECK(!(d < 0), ValueError, name_, ": batch_size ", shape_str(batch_size_),
               " has a negative size");
  }
  observation_spec_ = specs::Composite::make({}, batch_size_);
  state_spec_ = specs::Composite::make({}, batch_size_);
  reward_spec_ = std::make_shared<specs::Unbounded>(with_trailing_one(batch_size_),
                                                    specs::UnboundedOptions().device(device_));
  done_spec_ = specs::Composite::make({{specs::kDone, flag_spec(batch_size_, device_)},
                                       {specs::kTerminated, flag_spec(batch_size_, device_)},
                                       {specs::kTruncated, flag_spec(batch_size_, device_)}},
                                      batch_size_);
}

void EnvBase::check_spec_batch(const std::string& what, const std::vector<int64_t>& shape) const {
  const bool ok = shape.size() >= batch_size_.size() &&
                  std::equal(batch_size_.begin(), batch_size_.end(), shape.begin());
  TDRL_CHECK(ok, ShapeError, name_, ": the ", what, " has shape ", shape_str(shape),
             "; it must start with the env's batch_size ", shape_str(batch_size_));
}

void EnvBase::set_observation_spec(specs::CompositePtr spec) {
  check_composite_spec(name_, "observation", spec.get(), batch_size_);
  if (from_pixels() && !spec->contains(specs::kPixels)) {
    // The frames' entry, in place of the state's under pixels_only.
    spec = spec->clone();
    pixels_replace_.clear();
    if (render_->pixels_only()) {
      pixels_replace_ = spec->keys(/*include_nested=*/false);
      for (const auto& key : pixels_replace_) spec->del_(key);
    }
    auto shape = batch_size_;
    shape.insert(shape.end(), {render_->height(), render_->width(), 3});
    spec->set(specs::kPixels,
              std::make_shared<specs::Bounded>(specs::BoundedOptions()
                                                   .low(torch::zeros({}, torch::kUInt8))
                                                   .high(torch::full({}, 255, torch::kUInt8))
                                                   .shape(shape)
                                                   .dtype(torch::kUInt8)
                                                   .device(device_)));
  }
  observation_spec_ = std::move(spec);
}

void EnvBase::set_action_spec(specs::TensorSpecPtr spec, NestedKey key) {
  TDRL_CHECK(spec, ValueError, name_, ": the action spec is null");
  check_spec_batch("action spec", spec->shape());
  action_spec_ = std::move(spec);
  action_key_ = std::move(key);
}

void EnvBase::set_reward_spec(specs::TensorSpecPtr spec, NestedKey key) {
  TDRL_CHECK(spec, ValueError, name_, ": the reward spec is null");
  check_spec_batch("reward spec", spec->shape());
  reward_spec_ = std::move(spec);
  reward_key_ = std::move(key);
}

void EnvBase::set_done_spec(specs::CompositePtr spec) {
  check_composite_spec(name_, "done", spec.get(), batch_size_);
  for (const char* flag : {specs::kDone, specs::kTerminated, specs::kTruncated}) {
    TDRL_CHECK(spec->find(flag), KeyError, name_, ": the done spec lacks '", std::string(flag),
               "'; it needs done, terminated and truncated");
  }
  done_spec_ = std::move(spec);
}

void EnvBase::set_state_spec(specs::CompositePtr spec) {
  check_composite_spec(name_, "state", spec.get(), batch_size_);
  state_spec_ = std::move(spec);
}

std::ostream& operator<<(std::ostream& os, const RenderOptions& options) {
  return os << "render_width=" << options.width() << ", render_height=" << options.height()
            << ", from_pixels=" << (options.from_pixels() ? "true" : "false")
            << ", pixels_only=" << (options.pixels_only() ? "true" : "false");
}

void EnvBase::set_render_options(const RenderOptions& render) {
  TDRL_CHECK(!render_, ValueError, name_, ": set_render_options was called twice");
  const auto in_range = [](int64_t v) { return v >= 1 && v <= 8192; };
  TDRL_CHECK(in_range(render.width()) && in_range(render.height()), ValueError, name_,
             ": options render_width and render_height are ", render.width(), " and ",
             render.height(), "; each must be in [1, 8192] pixels");
  render_ = render;
  if (observation_spec_) set_observation_spec(observation_spec_);
}

torch::Tensor EnvBase::render_impl() {
  throw tensordict::Error(name_ +
                          "::render: this env does not draw its state (it has no "
                          "render_impl); render() and from_pixels need an env that does, e.g. "
                          "the classic-control and MuJoCo tasks");
}

torch::Tensor EnvBase::render() {
  const torch::Tensor frames = render_impl();
  TDRL_CHECK(frames.scalar_type() == torch::kUInt8, TypeError, name_,
             "::render: render_impl returned dtype ",
             std::string(c10::toString(frames.scalar_type())), "; frames are uint8 RGB");
  const auto dims = frames.sizes().vec();
  const auto nb = static_cast<int64_t>(batch_size_.size());
  const bool ok = frames.dim() == nb + 3 && dims.back() == 3 &&
                  std::equal(batch_size_.begin(), batch_size_.end(), dims.begin()) &&
                  (!render_ || (dims[nb] == render_->height() && dims[nb + 1] == render_->width()));
  TDRL_CHECK(ok, ShapeError, name_, "::render: render_impl returned shape ", shape_str(dims),
             "; expected [*batch_size, H, W, 3] with batch_size ", shape_str(batch_size_),
             render_ ? " and H x W = " + std::to_string(render_->height()) + " x " +
                           std::to_string(render_->width())
                     : std::string());
  return frames;
}

specs::TensorSpecPtr EnvBase::done_spec() const { return done_spec_->get(specs::kDone); }

specs::CompositePtr EnvBase::full_action_spec() const {
  if (!action_spec_) return specs::Composite::make({}, batch_size_);
  return specs::Composite::make({{action_key_, action_spec_}}, batch_size_);
}

specs::CompositePtr EnvBase::full_reward_spec() const {
  return specs::Composite::make({{reward_key_, reward_spec_}}, batch_size_);
}

uint64_t EnvBase::set_seed(uint64_t seed) { return seed + set_seed_impl(seed); }

uint64_t EnvBase::set_seed_impl(uint64_t seed) {
  generator_.set_current_seed(seed);
  return 1;
}

TensorDict EnvBase::state_dict() const {
  TensorDict state = TensorDict::empty({});
  state.set("rng", generator_.get_state());
  const bool complete = save_state(state);
  state.set("resumes_episodes", torch::tensor(complete));
  return state;
}

void EnvBase::load_state_dict(const TensorDict& state) {
  // The generator's state is checked before anything changes; a subclass failing part way is
  // undone by loading the state from before the call.
  const auto current_rng = generator_.get_state();
  const auto rng = state_entry(state, "rng", current_rng.sizes().vec(), torch::kUInt8);
  const TensorDict before = state_dict();
  try {
    load_state(state);
  } catch (...) {
    load_state(before);
    throw;
  }
  generator_.set_state(rng.clone());
}

torch::Tensor EnvBase::state_entry(const TensorDict& state, const NestedKey& key,
                                   const std::vector<int64_t>& shape, torch::Dtype dtype) const {
  const auto value = state.find(key);
  TDRL_CHECK(value, KeyError, name_, "::load_state_dict: the state has no ", key.to_string(),
             "; pass what state_dict() of an env built the same way returned");
  TDRL_CHECK(value->sizes().equals(shape), ShapeError, name_,
             "::load_state_dict: ", key.to_string(), " has shape ", shape_str(value->sizes()),
             ", expected ", shape_str(shape),
             "; the state was saved from an env of another batch size or model");
  TDRL_CHECK(value->scalar_type() == dtype, TypeError, name_,
             "::load_state_dict: ", key.to_string(), " has dtype ",
             std::string(c10::toString(value->scalar_type())), ", expected ",
             std::string(c10::toString(dtype)));
  return *value;
}

TensorDict EnvBase::complete_flags(TensorDict td, const std::string& where) {
  const auto flag_shape = with_trailing_one(batch_size_);
  auto flag = [&](const char* key) -> torch::Tensor {
    auto value = td.find(key);
    if (!value) return {};
    auto v = *value;
    if (v.sizes().vec() == batch_size_) v = v.unsqueeze(-1);
    TDRL_CHECK(v.sizes().vec() == flag_shape, ShapeError, where, ": '", std::string(key),
               "' has shape ", shape_str(value->sizes()), "; expected ", shape_str(flag_shape));
    return v.to(torch::kBool);
  };
  auto terminated = flag(specs::kTerminated);
  auto truncated = flag(specs::kTruncated);
  auto done = flag(specs::kDone);
  const auto falses = torch::zeros(flag_shape, torch::TensorOptions().dtype(torch::kBool));
  if (!terminated.defined()) terminated = done.defined() && !truncated.defined() ? done : falses;
  if (!truncated.defined()) truncated = falses;
  if (!done.defined()) done = terminated | truncated;
  td.set(specs::kTerminated, terminated);
  td.set(specs::kTruncated, truncated);
  td.set(specs::kDone, done);
  if (from_pixels()) {
    // The frame of the state just reached, the state itself hidden with pixels_only.
    for (const auto& key : pixels_replace_) {
      if (td.contains(key)) td.del_(key);
    }
    td.set(specs::kPixels, render());
  }
  for (const auto& key : observation_spec_->keys(/*include_nested=*/true, /*leaves_only=*/true)) {
    TDRL_CHECK(td.contains(key), KeyError, where, ": the env did not write observation ",
               key.to_string(), " declared in its observation spec; it wrote ",
               keys_repr(td.keys(true, true)));
  }
  if (device_ != torch::kCPU) return td.to(device_);
  return td;
}

TensorDict EnvBase::reset(std::optional<TensorDict> tensordict) {
  TensorDict input = tensordict ? *tensordict : TensorDict::empty(batch_size_);
  TensorDict out = reset_output(input);
  if (!tensordict) return out;
  if (input.contains(specs::kReset)) input.del_(specs::kReset);
  input.update(out);
  return input;
}

TensorDict EnvBase::reset_output(const TensorDict& input) {
  const std::string where = name_ + "::reset";
  TDRL_CHECK(input.batch_size() == batch_size_, ShapeError, where,
             ": the TensorDict has batch_size ", shape_str(input.batch_size()), "; the env's is ",
             shape_str(batch_size_));
  const auto mask = reset_mask(input, batch_size_, name_);
  TensorDict call = input;
  if (mask.defined() && !input.get(specs::kReset).sizes().equals(mask.sizes())) {
    call = input.clone(/*recurse=*/false);
    call.set(specs::kReset, mask);
  }
  TensorDict out = complete_flags(reset_impl(call), where);
  if (mask.defined()) {
    // Sub-envs not reset keep their flags as they were in the input.
    for (const char* key : {specs::kDone, specs::kTerminated, specs::kTruncated}) {
      if (auto previous = input.find(key)) {
        auto prev = previous->sizes().vec() == batch_size_ ? previous->unsqueeze(-1) : *previous;
        out.set(key, torch::where(mask, out.get(key), prev.to(torch::kBool)));
      }
    }
  }
  return out;
}

void EnvBase::check_action(const TensorDict& td) const {
  const std::string where = name_ + "::step";
  if (!action_spec_) return;
  auto action = td.find(action_key_);
  TDRL_CHECK(action, KeyError, where, ": the action ", action_key_.to_string(),
             " is missing; write it with the policy (or env.rand_action(td)); keys: ",
             keys_repr(td.keys(true, true)));
  const auto& expected = action_spec_->shape();
  TDRL_CHECK(action->sizes().vec() == expected, ShapeError, where, ": action ",
             action_key_.to_string(), " has shape ", shape_str(action->sizes()),
             "; the action spec expects ", shape_str(expected));
  TDRL_CHECK(action->scalar_type() == action_spec_->dtype(), TypeError, where, ": action ",
             action_key_.to_string(), " has dtype ",
             std::string(c10::toString(action->scalar_type())), "; the action spec expects ",
             std::string(c10::toString(action_spec_->dtype())), " (cast it)");
  TDRL_CHECK(!(action->is_floating_point() && !torch::isfinite(*action).all().item<bool>()),
             ValueError, where, ": action ", action_key_.to_string(),
             " has non-finite values (NaN or inf); check the policy's outputs");
  action_spec_->assert_is_in(*action, action_key_.to_string());
  for (const auto& key : state_spec_->keys(true, true)) {
    TDRL_CHECK(td.contains(key), KeyError, where, ": state entry ", key.to_string(),
               " (declared in the state spec) is missing; keys: ", keys_repr(td.keys(true, true)));
  }
}

TensorDict EnvBase::step(TensorDict tensordict) {
  const std::string where = name_ + "::step";
  TDRL_CHECK(tensordict.batch_size() == batch_size_, ShapeError, where,
             ": the TensorDict has batch_size ", shape_str(tensordict.batch_size()),
             "; the env's is ", shape_str(batch_size_));
  check_action(tensordict);
  TensorDict next = complete_flags(step_impl(tensordict), where);
  TDRL_CHECK(next.contains(reward_key_), KeyError, where, ": the env did not write the reward ",
             reward_key_.to_string());
  tensordict.set(specs::kNext, next);
  return tensordict;
}

std::pair<TensorDict, TensorDict> EnvBase::step_and_maybe_reset(TensorDict tensordict) {
  TensorDict stepped = step(std::move(tensordict));
  TensorDict next_root =
      step_mdp(stepped, StepMdpOptions().action_key(action_key_).reward_key(reward_key_));
  const auto done = next_root.get(specs::kDone);
  if (done.any().item<bool>()) {
    next_root.set(specs::kReset, done);
    next_root = reset(next_root);
  }
  return {stepped, next_root};
}

TensorDict EnvBase::rand_action(std::optional<TensorDict> tensordict) {
  TDRL_CHECK(action_spec_, ValueError, name_, "::rand_action: the env has no action spec");
  TensorDict td = tensordict ? *tensordict : TensorDict::empty(batch_size_);
  td.set(action_key_, action_spec_->rand(generator_).to(device_));
  return td;
}

TensorDict EnvBase::rollout(int64_t max_steps, const Policy& policy,
                            const RolloutOptions& options) {
  TDRL_CHECK(!(max_steps < 1), ValueError, name_, "::rollout: max_steps is ",
             std::to_string(max_steps), "; it must be >= 1");
  TensorDict td;
  if (options.auto_reset()) {
    td = reset(options.tensordict() ? std::optional<TensorDict>(options.tensordict()->clone(false))
                                    : std::nullopt);
  } else if (options.tensordict()) {
    td = *options.tensordict();
  } else {
    throw ValueError(name_ +
                     "::rollout: auto_reset(false) needs a tensordict to start from; "
                     "pass RolloutOptions().tensordict(env.reset())");
  }
  std::vector<TensorDict> steps;
  steps.reserve(static_cast<size_t>(max_steps));
  const auto mdp = StepMdpOptions().action_key(action_key_).reward_key(reward_key_);
  for (int64_t t = 0; t < max_steps; ++t) {
    td = policy ? policy(td) : rand_action(td);
    if (options.break_when_any_done()) {
      td = step(td);
      steps.push_back(td);
      if (td.get({specs::kNext, specs::kDone}).any().item<bool>()) break;
      td = step_mdp(td, mdp);
    } else {
      auto [stepped, next_root] = step_and_maybe_reset(td);
      steps.push_back(stepped);
      td = next_root;
    }
  }
  return tensordict::stack(steps, static_cast<int64_t>(batch_size_.size())).contiguous();
}

TensorDict EnvBase::fake_tensordict() const {
  TensorDict td = observation_spec_->zero();
  td.update(done_spec_->zero());
  td.update(state_spec_->zero());
  if (action_spec_) td.set(action_key_, action_spec_->zero());
  TensorDict next = observation_spec_->zero();
  next.update(done_spec_->zero());
  next.set(reward_key_, reward_spec_->zero());
  td.set(specs::kNext, next);
  return td;
}

std::string EnvBase::to_string() const {
  std::ostringstream os;
  os << name_ << "(batch_size=" << shape_str(batch_size_) << ", device=" << device_ << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& stream, const EnvBase& env) {
  return stream << env.to_string();
}

// ---- check_env_specs -----------------------------------------------------------------------

void check_env_specs(EnvBase& env, int64_t steps) {
  env.set_seed(0);
  const TensorDict rollout =
      env.rollout(steps, nullptr, RolloutOptions().break_when_any_done(false));
  std::vector<std::string> problems;
  auto expected_batch = env.batch_size();
  const int64_t t = rollout.batch_size().empty() ? 0 : rollout.batch_size().back();
  expected_batch.push_back(steps);
  if (rollout.batch_size() != expected_batch) {
    problems.push_back("rollout batch_size is " + shape_str(rollout.batch_size()) + ", expected " +
                       shape_str(expected_batch));
  }
  // Each step is checked on its own, so that spec shapes (which hold the env's batch dims
  // only) apply directly.
  for (int64_t i = 0; i < t; ++i) {
    const TensorDict step = rollout.index({at::indexing::Ellipsis, i});
    auto check = [&](const specs::TensorSpecPtr& spec, const NestedKey& key) {
      auto value = step.find(key);
      if (!value) {
        problems.push_back("step " + std::to_string(i) + ": " + key.to_string() + " is missing");
        return;
      }
      if (!spec->is_in(*value)) {
        try {
          spec->assert_is_in(*value, key.to_string());
        } catch (const tensordict::Error& e) {
          problems.push_back("step " + std::to_string(i) + ": " + e.what());
        }
      }
    };
    for (const auto& key : env.observation_spec()->keys(true, true)) {
      check(env.observation_spec()->get(key), key);
      check(env.observation_spec()->get(key), NestedKey{specs::kNext, key});
    }
    for (const auto& key : env.full_done_spec()->keys(true, true)) {
      check(env.full_done_spec()->get(key), key);
      check(env.full_done_spec()->get(key), NestedKey{specs::kNext, key});
    }
    check(env.reward_spec(), NestedKey{specs::kNext, env.reward_key()});
    if (env.action_spec()) check(env.action_spec(), env.action_key());
    const auto done = step.find({specs::kNext, specs::kDone});
    const auto terminated = step.find({specs::kNext, specs::kTerminated});
    const auto truncated = step.find({specs::kNext, specs::kTruncated});
    if (done && terminated && truncated && !torch::equal(*done, *terminated | *truncated)) {
      problems.push_back("step " + std::to_string(i) +
                         ": (\"next\", \"done\") differs from terminated | truncated");
    }
  }
  if (!problems.empty()) {
    std::string report = "check_env_specs(" + env.name() + "): " + std::to_string(problems.size()) +
                         " mismatch(es):";
    for (const auto& p : problems) report += "\n  - " + p;
    throw ValueError(report);
  }
}

}  // namespace tdrl::envs
