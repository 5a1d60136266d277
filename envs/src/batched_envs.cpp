// SerialEnv and ParallelEnv: sub-env i reads slice i of the inputs (views) and writes its
// results into slice i of an output allocated once per call; only how the per-sub-env tasks
// are run differs between the two.

#include <tdrl/envs/batched_envs.h>

#include <exception>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <ATen/ThreadLocalState.h>
#include <c10/util/Exception.h>

#include <tensordict/errors.h>

namespace tdrl::envs {

using tensordict::IndexError;
using tensordict::KeyError;
using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::ValueError;

namespace {

std::vector<int64_t> prepend(int64_t n, const std::vector<int64_t>& shape) {
  std::vector<int64_t> out{n};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

bool same_spec(const specs::TensorSpecPtr& a, const specs::TensorSpecPtr& b) {
  if (!a || !b) return !a && !b;
  return *a == *b;
}

std::string spec_or_none(const specs::TensorSpecPtr& spec) {
  return spec ? spec->to_string() : "None";
}

}  // namespace

// ---- BatchedEnvBase ----------------------------------------------------------------------------

std::vector<std::shared_ptr<EnvBase>> BatchedEnvBase::make_envs(const std::string& name, int64_t n,
                                                                const EnvFactory& factory) {
  TDRL_CHECK(!(n < 1), ValueError, name, ": the number of sub-envs is ", std::to_string(n),
             "; it must be >= 1");
  TDRL_CHECK(factory, ValueError, name, ": the env factory is empty; pass a callable");
  std::vector<std::shared_ptr<EnvBase>> envs;
  envs.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto env = factory();
    TDRL_CHECK(env, ValueError, name, ": the env factory returned a null env for sub-env ",
               std::to_string(i));
    envs.push_back(std::move(env));
  }
  return envs;
}

namespace {

// The batch size of the batched env over `envs` (checked non-empty, non-null by the caller).
EnvBaseOptions batched_options(const std::string& name,
                               const std::vector<std::shared_ptr<EnvBase>>& envs) {
  TDRL_CHECK(!envs.empty(), ValueError, name, ": no sub-envs; pass at least one");
  for (size_t i = 0; i < envs.size(); ++i) {
    TDRL_CHECK(envs[i], ValueError, name, ": sub-env ", std::to_string(i), " is null");
  }
  return EnvBaseOptions()
      .batch_size(prepend(static_cast<int64_t>(envs.size()), envs[0]->batch_size()))
      .device(envs[0]->device());
}

}  // namespace

BatchedEnvBase::BatchedEnvBase(const std::string& name, std::vector<std::shared_ptr<EnvBase>> envs)
    : EnvBase(name, batched_options(name, envs)), envs_(std::move(envs)) {
  const int64_t n = num_envs();
  for (int64_t i = 1; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) {
      TDRL_CHECK(envs_[i] != envs_[j], ValueError, name, ": sub-envs ", std::to_string(j), " and ",
                 std::to_string(i),
                 " are the same instance; the factory must build a new env per call");
    }
    check_same_specs(i);
  }

  const EnvBase& first = *envs_[0];
  set_observation_spec(first.observation_spec()->expand(batch_size()));
  if (first.action_spec()) {
    set_action_spec(first.action_spec()->expand(prepend(n, first.action_spec()->shape())),
                    first.action_key());
  }
  set_reward_spec(first.reward_spec()->expand(prepend(n, first.reward_spec()->shape())),
                  first.reward_key());
  set_done_spec(first.full_done_spec()->expand(batch_size()));
  set_state_spec(first.state_spec()->expand(batch_size()));

  for (const auto& [key, spec] : observation_spec()->items(true, true)) {
    const auto& leaf = std::get<specs::TensorSpecPtr>(spec);
    observation_leaves_.push_back({key, leaf->shape(), leaf->dtype()});
  }
  step_leaves_ = observation_leaves_;
  step_leaves_.push_back({reward_key(), reward_spec()->shape(), reward_spec()->dtype()});
  for (const auto& [key, spec] : full_done_spec()->items(true, true)) {
    const auto& leaf = std::get<specs::TensorSpecPtr>(spec);
    step_leaves_.push_back({key, leaf->shape(), leaf->dtype()});
  }
  if (action_spec()) input_keys_.push_back(action_key());
  for (const auto& key : state_spec()->keys(true, true)) input_keys_.push_back(key);

  step_inputs_.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) step_inputs_.push_back(TensorDict::empty(first.batch_size()));
  for (const auto& leaf : observation_leaves_) {
    last_observation_.push_back(
        torch::zeros(leaf.shape, torch::TensorOptions().dtype(leaf.dtype).device(device())));
  }
}

void BatchedEnvBase::check_same_specs(int64_t i) const {
  const EnvBase& a = *envs_[0];
  const EnvBase& b = *envs_[static_cast<size_t>(i)];
  auto fail = [&](const std::string& what, const std::string& got0, const std::string& got_i) {
    throw ValueError(name() + ": sub-env " + std::to_string(i) + "'s " + what +
                     " differs from sub-env 0's; every sub-env must have the same specs (build "
                     "them with the same options).\nsub-env 0: " +
                     got0 + "\nsub-env " + std::to_string(i) + ": " + got_i);
  };
  if (a.batch_size() != b.batch_size()) {
    fail("batch_size", shape_str(a.batch_size()), shape_str(b.batch_size()));
  }
  if (a.device() != b.device()) fail("device", a.device().str(), b.device().str());
  if (*a.observation_spec() != *b.observation_spec()) {
    fail("observation_spec", a.observation_spec()->to_string(), b.observation_spec()->to_string());
  }
  if (a.action_key() != b.action_key()) {
    fail("action key", a.action_key().to_string(), b.action_key().to_string());
  }
  if (!same_spec(a.action_spec(), b.action_spec())) {
    fail("action_spec", spec_or_none(a.action_spec()), spec_or_none(b.action_spec()));
  }
  if (a.reward_key() != b.reward_key()) {
    fail("reward key", a.reward_key().to_string(), b.reward_key().to_string());
  }
  if (!same_spec(a.reward_spec(), b.reward_spec())) {
    fail("reward_spec", spec_or_none(a.reward_spec()), spec_or_none(b.reward_spec()));
  }
  if (*a.full_done_spec() != *b.full_done_spec()) {
    fail("done_spec", a.full_done_spec()->to_string(), b.full_done_spec()->to_string());
  }
  if (*a.state_spec() != *b.state_spec()) {
    fail("state_spec", a.state_spec()->to_string(), b.state_spec()->to_string());
  }
}

const std::shared_ptr<EnvBase>& BatchedEnvBase::env(int64_t i) const {
  TDRL_CHECK(!(i < 0 || i >= num_envs()), IndexError, name(), "::env: index ", std::to_string(i),
             " is out of range for ", std::to_string(num_envs()), " sub-envs; use 0..",
             std::to_string(num_envs() - 1));
  return envs_[static_cast<size_t>(i)];
}

std::string BatchedEnvBase::to_string() const {
  std::ostringstream os;
  os << name() << "(num_envs=" << num_envs() << ", env=" << envs_[0]->to_string()
     << ", batch_size=" << shape_str(batch_size()) << ", device=" << device() << extra_repr()
     << ")";
  return os.str();
}

TensorDict BatchedEnvBase::allocate(const std::vector<Leaf>& leaves,
                                    std::vector<torch::Tensor>& tensors) const {
  TensorDict out = TensorDict::empty(batch_size());
  tensors.clear();
  tensors.reserve(leaves.size());
  for (const auto& leaf : leaves) {
    tensors.push_back(
        torch::empty(leaf.shape, torch::TensorOptions().dtype(leaf.dtype).device(device())));
    out.set(leaf.key, tensors.back());
  }
  return out;
}

void BatchedEnvBase::run_checked(const std::string& op, int64_t count,
                                 const std::function<int64_t(int64_t)>& index_of,
                                 const std::function<void(int64_t)>& task) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(count));
  run_tasks(count, [&](int64_t j) {
    try {
      task(j);
    } catch (...) {
      errors[static_cast<size_t>(j)] = std::current_exception();
    }
  });
  for (int64_t j = 0; j < count; ++j) {
    if (!errors[static_cast<size_t>(j)]) continue;
    const int64_t i = index_of(j);
    tensordict::rethrow_with_prefix(errors[static_cast<size_t>(j)],
                                    op + ": sub-env " + std::to_string(i) + " of " +
                                        std::to_string(num_envs()) + " (" + envs_[i]->name() +
                                        ") threw: ");
  }
}

void BatchedEnvBase::write_slice(const std::string& op, int64_t i, const Leaf& leaf,
                                 const torch::Tensor& value, const torch::Tensor& target) const {
  torch::Tensor slice = target.select(0, i);
  TDRL_CHECK(value.sizes().equals(slice.sizes()), ShapeError, op, ": the sub-env wrote ",
             leaf.key.to_string(), " with shape ", shape_str(value.sizes()), "; its spec says ",
             shape_str(slice.sizes()), " (fix the sub-env's output or its spec)");
  slice.copy_(value);
}

torch::Tensor BatchedEnvBase::render_impl() {
  std::vector<torch::Tensor> frames(envs_.size());
  run_checked(
      name() + "::render", num_envs(), [](int64_t j) { return j; },
      [&](int64_t i) { frames[static_cast<size_t>(i)] = envs_[static_cast<size_t>(i)]->render(); });
  for (size_t i = 1; i < frames.size(); ++i) {
    TDRL_CHECK(frames[i].sizes().equals(frames[0].sizes()), ShapeError, name(),
               "::render: sub-env ", i, " drew frames of shape ", shape_str(frames[i].sizes()),
               " and sub-env 0 of ", shape_str(frames[0].sizes()),
               "; give the sub-envs the same render size");
  }
  return torch::stack(frames);
}

TensorDict BatchedEnvBase::reset_impl(const TensorDict& tensordict) {
  const std::string op = name() + "::reset";
  const int64_t n = num_envs();
  // Which sub-envs to reset, and the mask to pass to those reset only in part.
  std::vector<int64_t> targets;
  std::vector<torch::Tensor> sub_masks;
  const auto mask = tensordict.find(specs::kReset);
  if (!mask) {
    for (int64_t i = 0; i < n; ++i) targets.push_back(i);
    sub_masks.resize(static_cast<size_t>(n));
  } else {
    const torch::Tensor flat = mask->reshape({n, -1});
    const torch::Tensor any = flat.any(1).cpu();
    const torch::Tensor all = flat.all(1).cpu();
    for (int64_t i = 0; i < n; ++i) {
      if (!any[i].item<bool>()) continue;
      targets.push_back(i);
      sub_masks.push_back(all[i].item<bool>() ? torch::Tensor() : mask->select(0, i));
    }
  }

  std::vector<torch::Tensor> out;
  TensorDict result = allocate(observation_leaves_, out);
  if (static_cast<int64_t>(targets.size()) < n) {
    // Sub-envs not reset report the observation of their last reset or step.
    for (size_t k = 0; k < out.size(); ++k) out[k].copy_(last_observation_[k]);
  }
  const std::vector<int64_t>& sub_batch = envs_[0]->batch_size();
  run_checked(
      op, static_cast<int64_t>(targets.size()),
      [&](int64_t j) { return targets[static_cast<size_t>(j)]; },
      [&](int64_t j) {
        const int64_t i = targets[static_cast<size_t>(j)];
        TensorDict input = TensorDict::empty(sub_batch);
        if (sub_masks[static_cast<size_t>(j)].defined()) {
          input.set(specs::kReset, sub_masks[static_cast<size_t>(j)]);
        }
        const TensorDict reset = envs_[static_cast<size_t>(i)]->reset(input);
        for (size_t k = 0; k < observation_leaves_.size(); ++k) {
          write_slice(op, i, observation_leaves_[k], reset.get(observation_leaves_[k].key), out[k]);
        }
      });
  last_observation_ = out;
  return result;
}

TensorDict BatchedEnvBase::step_impl(const TensorDict& tensordict) {
  const std::string op = name() + "::step";
  std::vector<torch::Tensor> inputs;
  inputs.reserve(input_keys_.size());
  for (const auto& key : input_keys_) inputs.push_back(tensordict.get(key));

  std::vector<torch::Tensor> out;
  TensorDict result = allocate(step_leaves_, out);
  run_checked(
      op, num_envs(), [](int64_t j) { return j; },
      [&](int64_t i) {
        const TensorDict& input = step_inputs_[static_cast<size_t>(i)];
        for (size_t k = 0; k < input_keys_.size(); ++k) {
          input.set(input_keys_[k], inputs[k].select(0, i));
        }
        const TensorDict next =
            envs_[static_cast<size_t>(i)]->step(input).get_tensordict(specs::kNext);
        for (size_t k = 0; k < step_leaves_.size(); ++k) {
          write_slice(op, i, step_leaves_[k], next.get(step_leaves_[k].key), out[k]);
        }
      });
  for (size_t k = 0; k < observation_leaves_.size(); ++k) last_observation_[k] = out[k];
  return result;
}

bool BatchedEnvBase::save_state(TensorDict& state) const {
  bool complete = true;
  for (size_t i = 0; i < envs_.size(); ++i) {
    const TensorDict sub = envs_[i]->state_dict();
    complete = complete && sub.get("resumes_episodes").item<bool>();
    state.set({"envs", std::to_string(i)}, sub);
  }
  for (size_t k = 0; k < observation_leaves_.size(); ++k) {
    state.set(NestedKey("last_observation").join(observation_leaves_[k].key),
              last_observation_[k].clone());
  }
  return complete;
}

void BatchedEnvBase::load_state(const TensorDict& state) {
  // The last observations are checked first; a sub-env failing part way is undone by
  // EnvBase::load_state_dict, which loads every sub-env's state from before.
  std::vector<torch::Tensor> observations;
  for (const auto& leaf : observation_leaves_) {
    const auto key = NestedKey("last_observation").join(leaf.key);
    observations.push_back(
        state_entry(state, key, leaf.shape, leaf.dtype).to(device(), false, true));
  }
  for (size_t i = 0; i < envs_.size(); ++i) {
    const NestedKey key({"envs", std::to_string(i)});
    TDRL_CHECK(state.contains(key), KeyError, name(), "::load_state_dict: the state has no ",
               key.to_string(), "; it was saved from a batched env of fewer than ",
               std::to_string(num_envs()), " sub-envs");
    try {
      envs_[i]->load_state_dict(state.get_tensordict(key));
    } catch (const std::exception&) {
      tensordict::rethrow_with_prefix(std::current_exception(),
                                      name() + ": sub-env " + std::to_string(i) + ": ");
    }
  }
  last_observation_ = std::move(observations);
}

uint64_t BatchedEnvBase::set_seed_impl(uint64_t seed) {
  EnvBase::set_seed_impl(seed);
  uint64_t next = seed;
  for (const auto& env : envs_) next = env->set_seed(next);
  return next - seed;
}

// ---- SerialEnv ---------------------------------------------------------------------------------

SerialEnv::SerialEnv(int64_t n, const EnvFactory& factory)
    : BatchedEnvBase("SerialEnv", make_envs("SerialEnv", n, factory)) {}

void SerialEnv::run_tasks(int64_t count, const std::function<void(int64_t)>& task) {
  for (int64_t j = 0; j < count; ++j) task(j);
}

// ---- ParallelEnv -------------------------------------------------------------------------------

namespace {

int64_t checked_threads(const ParallelEnvOptions& options) {
  TDRL_CHECK(!(options.num_threads() < 1), ValueError, "ParallelEnv: num_threads is ",
             std::to_string(options.num_threads()), "; it must be >= 1");
  return options.num_threads();
}

}  // namespace

ParallelEnv::ParallelEnv(int64_t n, const EnvFactory& factory, const ParallelEnvOptions& options)
    : BatchedEnvBase("ParallelEnv",
                     (checked_threads(options), make_envs("ParallelEnv", n, factory))),
      pool_(std::make_unique<WorkerPool>(std::min(num_envs(), options.num_threads()))) {}

void ParallelEnv::run_tasks(int64_t count, const std::function<void(int64_t)>& task) {
  // Workers run with the caller's thread-local LibTorch state (grad mode, inference mode, ...),
  // so that sub-envs behave as they would under SerialEnv.
  const at::ThreadLocalState state;
  pool_->parallel_for(count, [&task, &state](int64_t j) {
    at::ThreadLocalStateGuard guard(state);
    task(j);
  });
}

std::string ParallelEnv::extra_repr() const {
  return ", num_threads=" + std::to_string(num_threads());
}

}  // namespace tdrl::envs
