#include <tdrl/collectors/collector.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include <spdlog/spdlog.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tensordict/errors.h>
#include <tensordict/nn/functional.h>

#include "detail/checks.h"

namespace tdrl::collectors {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::ValueError;

// ---- CollectorPolicy -------------------------------------------------------------------------

CollectorPolicy::CollectorPolicy(std::shared_ptr<tensordict::nn::TensorDictModuleBase> module) {
  if (!module) return;
  call_ = [module](TensorDict td) { return module->forward(std::move(td)); };
  weights_ = std::move(module);
}

TensorDict policy_weights(const CollectorPolicy& policy) {
  if (!policy.weights_module()) return TensorDict::empty({});
  return tensordict::nn::from_module(*policy.weights_module()).detach();
}

void load_policy_weights(const CollectorPolicy& policy, const TensorDict& weights) {
  if (!policy.weights_module()) {
    if (weights.keys(true, true).empty()) return;
    throw ValueError(
        "load_policy_weights: the policy has no weights module but the weights hold " +
        std::to_string(weights.keys(true, true).size()) +
        " tensors; build the CollectorPolicy from a module (or pass its module as weights)");
  }
  const TensorDict target = tensordict::nn::from_module(*policy.weights_module());
  auto target_keys = target.keys(true, true);
  auto source_keys = weights.keys(true, true);
  std::sort(target_keys.begin(), target_keys.end());
  std::sort(source_keys.begin(), source_keys.end());
  // Everything is checked before the first copy, so a mismatch leaves the policy unchanged.
  for (size_t i = 0; i < std::max(target_keys.size(), source_keys.size()); ++i) {
    if (i >= source_keys.size() || i >= target_keys.size() || target_keys[i] != source_keys[i]) {
      const bool missing_in_source =
          i < target_keys.size() && (i >= source_keys.size() || target_keys[i] < source_keys[i]);
      const NestedKey& key = missing_in_source ? target_keys[i] : source_keys[i];
      throw KeyError(
          "load_policy_weights: " + key.to_string() +
          (missing_in_source ? " is a weight of the policy but missing from the weights"
                             : " is in the weights but not a weight of the policy") +
          "; the weights must come from policy_weights() of a policy built the same way");
    }
    const auto want = target.get(target_keys[i]);
    const auto got = weights.get(source_keys[i]);
    TDRL_CHECK(!(want.sizes() != got.sizes() || want.scalar_type() != got.scalar_type()),
               ShapeError, "load_policy_weights: ", target_keys[i].to_string(), " is ",
               tensordict::shape_str(want.sizes()), " ",
               std::string(c10::toString(want.scalar_type())), " in the policy but ",
               tensordict::shape_str(got.sizes()), " ",
               std::string(c10::toString(got.scalar_type())), " in the weights");
  }
  torch::NoGradGuard no_grad;
  for (const auto& key : target_keys) target.get(key).copy_(weights.get(key));
}

// ---- BatchIterator ---------------------------------------------------------------------------

BatchIterator::BatchIterator(CollectorBase* collector) : collector_(collector) {
  batch_ = collector_->next();
}

BatchIterator& BatchIterator::operator++() {
  batch_ = collector_->next();
  return *this;
}

// ---- Collector -------------------------------------------------------------------------------

namespace {

int64_t numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

}  // namespace

void CollectorBase::set_total_frames(int64_t total, const std::string& who) {
  total_frames_ = total;
  if (total > 0 && total % frames_per_batch_ != 0) {
    total_frames_ = detail::round_up(total, frames_per_batch_);
    spdlog::warn(
        "{}: total_frames {} is not a multiple of frames_per_batch {}; collecting {} frames", who,
        total, frames_per_batch_, total_frames_);
  }
}

namespace {

std::shared_ptr<EnvBase> checked_env(std::shared_ptr<EnvBase> env, const char* what) {
  TDRL_CHECK(env, ValueError, std::string("Collector: "), what, " is null; pass an env");
  return env;
}

std::shared_ptr<EnvBase> env_from_factory(const EnvFactory& factory) {
  TDRL_CHECK(factory, ValueError, "Collector: the env factory is empty; pass a function");
  return checked_env(factory(), "the env the factory returned");
}

}  // namespace

Collector::Collector(const EnvFactory& factory, CollectorPolicy policy, CollectorOptions options)
    : Collector(env_from_factory(factory), std::move(policy), std::move(options)) {}

Collector::Collector(std::shared_ptr<EnvBase> env, CollectorPolicy policy, CollectorOptions options)
    : env_(checked_env(std::move(env), "the env")),
      policy_(std::move(policy)),
      options_(std::move(options)) {
  detail::check_frame_counts("Collector", options_);
  detail::check_trajectory_limit("Collector", options_);
  const auto fpb = options_.frames_per_batch();
  const auto total = options_.total_frames();
  env_numel_ = numel(env_->batch_size());
  frames_per_batch_ = detail::round_up(fpb, env_numel_);
  if (frames_per_batch_ != fpb) {
    spdlog::warn(
        "Collector: frames_per_batch {} is not a multiple of the env's {} sub-envs; "
        "collecting {} frames per batch",
        fpb, env_numel_, frames_per_batch_);
  }
  steps_per_batch_ = frames_per_batch_ / env_numel_;
  set_total_frames(total, "Collector");
  step_count_ = torch::zeros(env_->batch_size(), torch::kInt64);
  traj_ids_ = torch::zeros(env_->batch_size(), torch::kInt64);
}

Collector::~Collector() = default;

std::optional<TensorDict> Collector::next() {
  if (shut_down_ || (total_frames_ >= 0 && frames_ >= total_frames_)) return std::nullopt;
  return next(frames_ < options_.init_random_frames());
}

std::optional<TensorDict> Collector::next(bool random_actions) {
  if (shut_down_) return std::nullopt;
  auto batch = collect(random_actions);
  if (!batch) return std::nullopt;
  frames_ += frames_per_batch_;
  ++iterations_;
  TensorDict out = options_.split_trajs() ? split_trajectories(*batch) : *batch;
  if (options_.postproc()) out = options_.postproc()(out);
  return out;
}

void Collector::reset_all() {
  current_ = env_->reset();
  traj_ids_ = torch::arange(next_traj_id_, next_traj_id_ + env_numel_, torch::kInt64)
                  .view(env_->batch_size());
  next_traj_id_ += env_numel_;
  step_count_.zero_();
}

TensorDict Collector::act(TensorDict td, bool random) {
  if (random || policy_.is_random()) return env_->rand_action(td);
  tensordict::nn::SetInteractionType interaction(options_.exploration_type());
  torch::NoGradGuard no_grad;
  const auto& device = options_.policy_device();
  if (device && *device != env_->device()) {
    td = policy_(td.to(*device)).to(env_->device());
  } else {
    td = policy_(td);
  }
  if (!td.contains(env_->action_key())) {
    std::ostringstream keys;
    for (const auto& key : td.keys(true, true)) keys << " " << key.to_string();
    throw KeyError("Collector: the policy did not write the action " +
                   env_->action_key().to_string() + " (it returned the keys" + keys.str() +
                   "); the policy must write the env's action key");
  }
  return td;
}

TensorDict Collector::allocate(const TensorDict& step,
                               std::vector<std::pair<torch::Tensor, NestedKey>>& leaves) {
  auto batch_size = env_->batch_size();
  batch_size.push_back(steps_per_batch_);
  // Filled where the env steps; collect() moves it to the storing device once it is complete.
  const auto device = env_->device();
  const auto storing = options_.storing_device().value_or(device);
  const bool pinned = device.is_cpu() && storing.is_cuda();
  TensorDict buffer = TensorDict::empty(batch_size, device);
  const size_t env_dims = env_->batch_size().size();
  for (const auto& [key, value] : step.items(true, true)) {
    const auto* tensor = std::get_if<torch::Tensor>(&value);
    if (!tensor) continue;  // non-tensor entries are not collected
    std::vector<int64_t> shape = batch_size;
    shape.insert(shape.end(), tensor->sizes().begin() + static_cast<int64_t>(env_dims),
                 tensor->sizes().end());
    auto leaf = torch::empty(shape, tensor->options().device(device).pinned_memory(pinned));
    buffer.set(key, leaf);
    leaves.emplace_back(leaf, key);
  }
  auto ids = torch::empty(batch_size,
                          torch::TensorOptions(torch::kInt64).device(device).pinned_memory(pinned));
  buffer.set(traj_ids_key(), ids);
  leaves.emplace_back(ids, traj_ids_key());
  return buffer;
}

std::optional<TensorDict> Collector::collect(bool random) {
  if (cancel_.exchange(false)) return std::nullopt;
  if (options_.reset_at_each_iter() || !current_) reset_all();
  const auto time_dim = static_cast<int64_t>(env_->batch_size().size());
  const auto mdp =
      envs::StepMdpOptions().action_key(env_->action_key()).reward_key(env_->reward_key());
  const NestedKey next_done({specs::kNext, specs::kDone});
  const NestedKey next_truncated({specs::kNext, specs::kTruncated});
  std::vector<std::pair<torch::Tensor, NestedKey>> leaves;
  TensorDict buffer;
  TensorDict td = *current_;
  try {
    for (int64_t t = 0; t < steps_per_batch_; ++t) {
      if (cancel_.exchange(false)) {
        current_ = td;
        return std::nullopt;
      }
      // Act and step; a trajectory at max_frames_per_traj is cut (truncated and done).
      td = act(td, random);
      TensorDict stepped = env_->step(td);
      step_count_ += 1;
      if (options_.max_frames_per_traj() > 0) {
        auto cut = step_count_ >= options_.max_frames_per_traj();
        if (cut.any().item<bool>()) {
          auto flag = stepped.get(next_done);
          cut = cut.view(flag.sizes());
          stepped.set(next_truncated, stepped.get(next_truncated).logical_or(cut));
          stepped.set(next_done, flag.logical_or(cut));
        }
      }
      // Copy the step into slot t of the batch, allocated from the first step's layout; the
      // last leaf is the trajectory ids.
      if (t == 0) buffer = allocate(stepped, leaves);
      for (size_t i = 0; i + 1 < leaves.size(); ++i) {
        const auto& [leaf, key] = leaves[i];
        auto value = stepped.find(key);
        TDRL_CHECK(value, KeyError, "Collector: step ", std::to_string(t), " of the batch has no ",
                   key.to_string(),
                   ", which the first step had; the policy and env must write the same "
                   "keys at every step");
        auto slot = leaf.select(time_dim, t);
        TDRL_CHECK(slot.sizes() == value->sizes(), ShapeError, "Collector: ", key.to_string(),
                   " is ", tensordict::shape_str(value->sizes()), " at step ", std::to_string(t),
                   " but was ", tensordict::shape_str(slot.sizes()),
                   " at the first step of the batch; entries must keep their shape");
        slot.copy_(*value);
      }
      leaves.back().first.select(time_dim, t).copy_(traj_ids_);
      // Move to the next root; the sub-envs that are done reset and start new trajectories.
      TensorDict next_root = envs::step_mdp(stepped, mdp);
      if (options_.reset_when_done()) {
        auto done = next_root.get(specs::kDone);
        if (done.any().item<bool>()) {
          auto mask = done.reshape(env_->batch_size());
          const auto count = mask.sum().item<int64_t>();
          traj_ids_.masked_scatter_(
              mask, torch::arange(next_traj_id_, next_traj_id_ + count, torch::kInt64));
          next_traj_id_ += count;
          step_count_.masked_fill_(mask, 0);
          next_root.set(specs::kReset, done);
          next_root = env_->reset(next_root);
        }
      }
      td = next_root;
    }
  } catch (...) {
    // The env may be mid-episode in an unknown state: the next batch starts from a reset.
    current_.reset();
    throw;
  }
  current_ = td;
  // Across to the storing device in one go; from pinned memory the copy does not block (the
  // pinned block is not reused until the copy is done) and the next batch gets a new buffer.
  const auto storing = options_.storing_device();
  if (storing && buffer.device() != storing) return buffer.to(*storing, /*non_blocking=*/true);
  return buffer;
}

uint64_t Collector::set_seed(uint64_t seed) {
  current_.reset();
  return env_->set_seed(seed);
}

void Collector::shutdown() {
  shut_down_ = true;
  current_.reset();
}

TensorDict Collector::state_dict() const {
  TensorDict state = TensorDict::empty({});
  state.set("frames", torch::tensor(frames_, torch::kInt64));
  state.set("iterations", torch::tensor(iterations_, torch::kInt64));
  state.set("next_traj_id", torch::tensor(next_traj_id_, torch::kInt64));
  const TensorDict env = env_->state_dict();
  state.set("env", env);
  // The episodes in flight, when the env can continue them.
  if (current_ && !options_.reset_at_each_iter() && env.get("resumes_episodes").item<bool>()) {
    state.set("current", current_->clone());
    state.set("traj_ids", traj_ids_.clone());
    state.set("step_count", step_count_.clone());
  }
  return state;
}

void Collector::load_state_dict(const TensorDict& state) {
  int64_t values[3];
  const char* names[3] = {"frames", "iterations", "next_traj_id"};
  for (int i = 0; i < 3; ++i) {
    auto value = state.find(names[i]);
    TDRL_CHECK(value, KeyError, std::string("Collector::load_state_dict: the state has no '"),
               names[i], "'; pass what state_dict() returned");
    TDRL_CHECK(value->numel() == 1, ShapeError, std::string("Collector::load_state_dict: '"),
               names[i], "' must be a scalar, got ", tensordict::shape_str(value->sizes()));
    values[i] = value->item<int64_t>();
    TDRL_CHECK(!(values[i] < 0), ValueError, std::string("Collector::load_state_dict: '"), names[i],
               "' is ", std::to_string(values[i]), "; counters are >= 0");
  }
  // The episodes in flight are checked against the env before anything changes.
  std::optional<TensorDict> current;
  torch::Tensor traj_ids, step_count;
  if (state.contains("current")) {
    const std::string where = "Collector::load_state_dict: ";
    TDRL_CHECK(state.contains("env"), KeyError, where,
               "the state has \"current\" (episodes in flight) but no \"env\" to continue them "
               "from; pass what state_dict() returned");
    current = state.get_tensordict("current").clone();
    TDRL_CHECK(current->batch_size() == env_->batch_size(), ShapeError, where,
               "\"current\" has batch size ", tensordict::shape_str(current->batch_size()),
               ", the env's is ", tensordict::shape_str(env_->batch_size()));
    for (const char* name : {"traj_ids", "step_count"}) {
      const auto value = state.find(name);
      TDRL_CHECK(value, KeyError, where, "the state has \"current\" but no '", name, "'");
      TDRL_CHECK(
          value->sizes().vec() == env_->batch_size() && value->scalar_type() == torch::kInt64,
          ShapeError, where, "'", name, "' is ", tensordict::shape_str(value->sizes()), " ",
          std::string(c10::toString(value->scalar_type())), ", expected int64 ",
          tensordict::shape_str(env_->batch_size()));
    }
    traj_ids = state.get("traj_ids").clone();
    step_count = state.get("step_count").clone();
  }
  if (state.contains("env")) env_->load_state_dict(state.get_tensordict("env"));
  frames_ = values[0];
  iterations_ = values[1];
  next_traj_id_ = values[2];
  current_ = current;
  if (current) {
    traj_ids_ = traj_ids;
    step_count_ = step_count;
  }
}

// ---- split_trajectories ----------------------------------------------------------------------

TensorDict split_trajectories(const TensorDict& batch, const NestedKey& trajectory_key,
                              const NestedKey& done_key, const NestedKey& mask_key) {
  const auto& batch_size = batch.batch_size();
  TDRL_CHECK(!batch_size.empty(), ValueError,
             "split_trajectories: the batch has no batch dims; it must be [*env_batch, T] as a "
             "collector yields it");
  const int64_t steps = batch_size.back();
  const int64_t rows = numel(batch_size) / std::max<int64_t>(steps, 1);
  const TensorDict flat = batch.reshape({rows, steps});
  // starts[m, t]: a trajectory begins at step t of row m.
  torch::Tensor starts;
  if (auto ids = batch.find(trajectory_key)) {
    TDRL_CHECK(ids->sizes() == c10::IntArrayRef(batch_size), ShapeError,
               "split_trajectories: ", trajectory_key.to_string(), " is ",
               tensordict::shape_str(ids->sizes()), "; expected the batch size ",
               tensordict::shape_str(batch_size));
    auto id = ids->reshape({rows, steps});
    starts = torch::ones({rows, steps}, torch::kBool);
    if (steps > 1) {
      starts.slice(1, 1).copy_(id.slice(1, 1) != id.slice(1, 0, steps - 1));
    }
  } else if (auto done = batch.find(done_key)) {
    auto expected = batch_size;
    if (done->dim() == static_cast<int64_t>(batch_size.size()) + 1 && done->size(-1) == 1) {
      expected.push_back(1);
    }
    TDRL_CHECK(done->sizes() == c10::IntArrayRef(expected), ShapeError,
               "split_trajectories: ", done_key.to_string(), " is ",
               tensordict::shape_str(done->sizes()), "; expected ",
               tensordict::shape_str(batch_size), " or with a trailing 1");
    auto d = done->reshape({rows, steps}).to(torch::kBool);
    starts = torch::ones({rows, steps}, torch::kBool);
    if (steps > 1) starts.slice(1, 1).copy_(d.slice(1, 0, steps - 1));
  } else {
    throw KeyError("split_trajectories: the batch has neither " + trajectory_key.to_string() +
                   " nor " + done_key.to_string() + "; one of them tells where trajectories end");
  }
  // Segments in row-major order: (row, start, length).
  const auto starts_cpu = starts.contiguous();
  const bool* s = starts_cpu.data_ptr<bool>();
  std::vector<int64_t> seg_row, seg_start, seg_len;
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t t = 0; t < steps; ++t) {
      if (s[m * steps + t]) {
        seg_row.push_back(m);
        seg_start.push_back(t);
        seg_len.push_back(0);
      }
      ++seg_len.back();
    }
  }
  const auto num_traj = static_cast<int64_t>(seg_row.size());
  const int64_t max_len = num_traj == 0 ? 0 : *std::max_element(seg_len.begin(), seg_len.end());
  std::vector<int64_t> src, dst;
  src.reserve(static_cast<size_t>(rows * steps));
  dst.reserve(static_cast<size_t>(rows * steps));
  for (int64_t i = 0; i < num_traj; ++i) {
    for (int64_t p = 0; p < seg_len[static_cast<size_t>(i)]; ++p) {
      src.push_back(seg_row[static_cast<size_t>(i)] * steps + seg_start[static_cast<size_t>(i)] +
                    p);
      dst.push_back(i * max_len + p);
    }
  }
  const auto device = batch.device().value_or(torch::kCPU);
  const auto src_index = torch::tensor(src, torch::kInt64).to(device);
  const auto dst_index = torch::tensor(dst, torch::kInt64).to(device);
  TensorDict out = TensorDict::empty({num_traj, max_len});
  for (const auto& [key, value] : flat.items(true, true)) {
    const auto* tensor = std::get_if<torch::Tensor>(&value);
    if (!tensor) continue;
    auto rest = tensor->sizes().slice(2).vec();
    std::vector<int64_t> flat_shape{rows * steps};
    flat_shape.insert(flat_shape.end(), rest.begin(), rest.end());
    std::vector<int64_t> out_flat_shape{num_traj * max_len};
    out_flat_shape.insert(out_flat_shape.end(), rest.begin(), rest.end());
    auto padded = torch::zeros(out_flat_shape, tensor->options());
    padded.index_copy_(0, dst_index, tensor->reshape(flat_shape).index_select(0, src_index));
    std::vector<int64_t> out_shape{num_traj, max_len};
    out_shape.insert(out_shape.end(), rest.begin(), rest.end());
    out.set(key, padded.view(out_shape));
  }
  auto mask = torch::zeros({num_traj * max_len}, torch::TensorOptions(torch::kBool).device(device));
  mask.index_fill_(0, dst_index, true);
  out.set(mask_key, mask.view({num_traj, max_len}));
  return out;
}

}  // namespace tdrl::collectors
