// Drift-v0 and drift_pg (drift_components.h): a user's env, loss, config section and recipe,
// using only the installed public headers (tdrl's src/detail helpers are not installed).

#include "drift_components.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/apps/models.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/apps/registry.h>
#include <tdrl/envs/env_base.h>
#include <tdrl/envs/registry.h>
#include <tdrl/losses/functional/value.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/modules/actors.h>
#include <tdrl/modules/additive_gaussian.h>
#include <tdrl/modules/mlp.h>
#include <tdrl/modules/optimizers.h>
#include <tdrl/replay.h>
#include <tdrl/specs/composite.h>
#include <tdrl/specs/keys.h>
#include <tensordict/fields.h>

namespace drift {

namespace {

namespace apps = tdrl::apps;
namespace envs = tdrl::envs;
namespace specs = tdrl::specs;
namespace tdnn = tensordict::nn;
using tensordict::NestedKey;
using tensordict::TensorDict;

// ---- the env ---------------------------------------------------------------------------------

/// Options of DriftEnv. `fields()` declares the task options (not the batch size, which is the
/// caller's): registered with them, Drift-v0's env.options are validated and documented by
/// tdrl-train as the built-in tasks' are.
/// Example: `DriftEnvOptions().batch_size({4}).max_episode_steps(50)`
struct DriftEnvOptions {
  /// The env's batch size (`[]` = one point). Default `[]`.
  TORCH_ARG(std::vector<int64_t>, batch_size);
  /// Steps after which an episode is truncated (>= 1). Default 50.
  TORCH_ARG(int64_t, max_episode_steps) = 50;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    v("max_episode_steps", max_episode_steps_, tensordict::fields::at_least(1),
      "steps after which an episode is truncated");
  }
};

/// Drift-v0 (see drift_components.h). State and outputs live on the CPU.
class DriftEnv : public envs::EnvBase {
 public:
  explicit DriftEnv(const DriftEnvOptions& options)
      : EnvBase("Drift-v0", envs::EnvBaseOptions().batch_size(options.batch_size())),
        options_(options) {
    const std::vector<int64_t>& batch = batch_size();
    set_observation_spec(specs::Composite::make(
        {{specs::kObservation, std::make_shared<specs::Unbounded>(with_last(batch, 2))}}, batch));
    set_action_spec(std::make_shared<specs::Bounded>(
        specs::BoundedOptions().low(-1.0).high(1.0).shape(with_last(batch, 1))));
    set_reward_spec(std::make_shared<specs::Unbounded>(with_last(batch, 1)));
    position_ = torch::zeros(with_last(batch, 1));
    drift_ = torch::zeros(with_last(batch, 1));
    steps_ = torch::zeros(with_last(batch, 1), torch::kInt64);
  }

 protected:
  // Resets every point, or those a "_reset" mask [*batch, 1] selects (the collector's partial
  // resets); all randomness comes from generator(), so a seed fixes the episodes.
  TensorDict reset_impl(const TensorDict& tensordict) override {
    const auto position = torch::rand(position_.sizes(), generator()) * 2 - 1;
    const auto drift = (torch::rand(drift_.sizes(), generator()) * 2 - 1) * kMaxDrift;
    const auto mask = tensordict.find(specs::kReset);
    const auto all = torch::ones_like(steps_, torch::kBool);
    const auto reset = mask ? *mask : all;
    position_ = torch::where(reset, position, position_);
    drift_ = torch::where(reset, drift, drift_);
    steps_ = torch::where(reset, torch::zeros_like(steps_), steps_);
    return TensorDict({{specs::kObservation, observe()}}, batch_size());
  }

  // The action was checked against the action spec by EnvBase::step; "done" is filled in there.
  TensorDict step_impl(const TensorDict& tensordict) override {
    position_ = position_ + drift_ + kPush * tensordict.get(specs::kAction);
    steps_ += 1;
    return TensorDict({{specs::kObservation, observe()},
                       {specs::kReward, -position_.abs()},
                       {specs::kTerminated, position_.abs() > kLimit},
                       {specs::kTruncated, steps_ >= options_.max_episode_steps()}},
                      batch_size());
  }

 private:
  static constexpr double kMaxDrift = 0.1;
  static constexpr double kPush = 0.2;
  static constexpr double kLimit = 5.0;

  static std::vector<int64_t> with_last(std::vector<int64_t> shape, int64_t last) {
    shape.push_back(last);
    return shape;
  }
  // A new tensor each call: outputs never alias the env's state.
  torch::Tensor observe() const { return torch::cat({position_, drift_}, -1); }

  DriftEnvOptions options_;
  torch::Tensor position_;
  torch::Tensor drift_;
  torch::Tensor steps_;
};

// ---- the loss --------------------------------------------------------------------------------

/// Options of DriftPGLoss, declared once in fields(): the config section composes them, so
/// the config checks their ranges, suggests for a typo, writes them to config.yaml and lists
/// them in `tdrl-train --plugin ... --config-reference`, as for the built-in losses.
struct DriftPGLossOptions {
  /// The smallest std the advantage is divided by (> 0). Default 1e-6.
  TORCH_ARG(double, advantage_std_floor) = 1e-6;
  /// Standardise the advantage (else only centre it). Default true.
  TORCH_ARG(bool, scale_advantage) = true;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    v("advantage_std_floor", advantage_std_floor_, tensordict::fields::greater_than(0),
      "the smallest std the advantage is divided by");
    v("scale_advantage", scale_advantage_, "divide the centred advantage by its std");
  }
};

/// REINFORCE with a batch baseline on minibatches [B]:
///   advantage = (value_target - mean(value_target)) / max(std(value_target), floor)
///   loss_actor = -mean(advantage * log pi(action | observation))
/// Keys (set_keys names → defaults): "action" → action, "value_target" → value_target (the
/// discounted return the recipe writes before each epoch), plus the actor's in keys.
class DriftPGLoss : public tdrl::losses::LossModule {
 public:
  DriftPGLoss(tdrl::modules::ProbabilisticActor actor, DriftPGLossOptions options)
      : LossModule("DriftPGLoss",
                   {{"action", NestedKey("action")}, {"value_target", NestedKey("value_target")}},
                   /*in_key_names=*/{"action", "value_target"}),
        actor_(actor),
        options_(options) {
    set_out_keys({"loss_actor"});
    convert_to_functional("actor_network", actor.ptr(), /*create_target=*/false);
  }

 protected:
  TensorDict forward_impl(const TensorDict& batch) override {
    const TensorDict td = batch.clone(/*recurse=*/false);  // get_dist writes loc and scale
    const auto target = get(td, "value_target");
    // The population std: a one-frame minibatch gets advantage 0, not NaN.
    auto advantage = target - target.mean();
    if (options_.scale_advantage())
      advantage =
          advantage / target.std(/*unbiased=*/false).clamp_min(options_.advantage_std_floor());
    const auto log_prob = actor_->get_dist(td)->log_prob(get(td, "action")).unsqueeze(-1);
    check_same_shape("actor loss", advantage, "advantage", log_prob, "log_prob");
    TensorDict out = TensorDict::empty({});
    out.set("loss_actor", -(advantage * log_prob).mean());
    return out;
  }

 private:
  tdrl::modules::ProbabilisticActor actor_;
  DriftPGLossOptions options_;
};

// ---- the algorithm ---------------------------------------------------------------------------

/// `algo:` of drift_pg: the loss's own options and what the recipe reads. drift.yaml sets only
/// keys ppo has too, so `--set algo.name=ppo` swaps algorithms on the same config.
struct DriftAlgoConfig : apps::AlgoConfig {
  double gamma = 0.99;
  int64_t num_epochs = 1;
  DriftPGLossOptions loss;
  void fields(apps::FieldVisitor& v) override {
    v("gamma", gamma, apps::in_range(0, 1), "discount of the Monte-Carlo returns");
    v("num_epochs", num_epochs, apps::at_least(1), "optimisation passes over each batch");
    loss.fields(v);
  }
};

class DriftRecipe : public apps::Recipe {
 public:
  explicit DriftRecipe(const DriftAlgoConfig& config) : config_(config) {}

  void build_acting(const apps::RecipeContext& context) override {
    actor_ = apps::make_stochastic_actor(context.model(), context.env);
    actor = actor_;
    exploration_policy = actor_;
    // Collector workers build their own copy; the lambda outlives the context.
    policy_factory = [model = context.model(), env = context.env] {
      return tdrl::collectors::CollectorPolicy(apps::make_stochastic_actor(model, env));
    };
  }

  void build_learning(const apps::RecipeContext& context) override {
    loss = std::make_shared<DriftPGLoss>(actor_, config_.loss);
    apps::OptimizerGroup all;
    all.name = "all";
    all.base_lr = context.optim().optimizer.lr();
    // optim.name, lr, weight_decay and eps, as the built-in recipes read them.
    all.optimizer = tdrl::modules::make_optimizer(context.optim().optimizer, loss->parameters());
    optimizers.push_back(std::move(all));
  }

  int64_t epochs_per_batch() const override { return config_.num_epochs; }

  // Discounted returns along time (the batch is [..., T]). No critic: an episode cut by
  // truncation or by the end of the batch counts as ending there.
  void before_epoch(const TensorDict& batch) override {
    const auto reward = batch.get({"next", "reward"});
    batch.set("value_target", tdrl::losses::functional::td1_return_estimate(
                                  config_.gamma, torch::zeros_like(reward), reward,
                                  batch.get({"next", "done"}), batch.get({"next", "terminated"})));
  }

 private:
  DriftAlgoConfig config_;
  tdrl::modules::ProbabilisticActor actor_{nullptr};
};

// What the config section cannot say alone, checked before a run folder exists.
std::vector<std::string> check_drift_pg(const apps::RunConfig& config, const apps::EnvInfo& env) {
  std::vector<std::string> problems;
  if (!env.bounded)
    problems.push_back(
        "'algo.name' is drift_pg, which needs a continuous (Bounded) action "
        "space, but 'env.name' " +
        env.name + " has the action spec " + env.action_spec->to_string() + "; use ppo");
  return problems;
}

// ---- an off-policy algorithm: deterministic policy gradient -----------------------------------

/// Options of DriftDPGLoss, declared once for the config.
struct DriftDPGLossOptions {
  /// Discount of the one-step target. Default 0.95.
  TORCH_ARG(double, gamma) = 0.95;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    v("gamma", gamma_, tensordict::fields::in_range(0, 1), "discount of the one-step target");
  }
};

/// A deterministic policy gradient (DDPG-like) on transitions [B]:
///   y = r + gamma * (1 - terminated) * Q_target(s', mu_target(s'))
///   loss_value = mean((Q(s, a) - y)^2)
///   loss_actor = -mean(Q(s, mu(s)))   (the critic's parameters held out of this term)
/// Keys (set_keys names → defaults): "action" → action, "reward" → ("next", "reward"),
/// "terminated" → ("next", "terminated"), "value" → state_action_value (what the critic
/// writes), plus the networks' in keys. Writes loss_actor, loss_value and the detached
/// diagnostic q_value.
class DriftDPGLoss : public tdrl::losses::LossModule {
 public:
  DriftDPGLoss(tdnn::TensorDictModule actor, tdrl::modules::ValueOperator critic,
               DriftDPGLossOptions options)
      : LossModule("DriftDPGLoss",
                   {{"action", NestedKey("action")},
                    {"reward", NestedKey{"next", "reward"}},
                    {"terminated", NestedKey{"next", "terminated"}},
                    {"value", NestedKey("state_action_value")}},
                   /*in_key_names=*/{"action", "reward", "terminated"}),
        actor_(actor),
        critic_(critic),
        options_(options) {
    set_out_keys({"loss_actor", "loss_value", "q_value"});
    convert_to_functional("actor_network", actor.ptr(), /*create_target=*/true);
    convert_to_functional("value_network", critic.ptr(), /*create_target=*/true);
  }

 protected:
  TensorDict forward_impl(const TensorDict& batch) override {
    const TensorDict td = batch.clone(/*recurse=*/false);
    const auto reward = get(td, "reward");
    const auto not_terminated = 1.0 - get(td, "terminated").to(reward.scalar_type());

    // The target: the target actor picks the next action, the target critic values it.
    TensorDict next = td.get_tensordict("next").clone(/*recurse=*/false);
    const auto next_q = with_target("actor_network", [&] {
      actor_(next);
      return with_target("value_network", [&] { return critic_(next).get(key("value")); });
    });
    const auto target = (reward + options_.gamma() * not_terminated * next_q).detach();

    // The critic on the batch's actions, regressed on the target.
    const auto q = critic_(td).get(key("value"));
    check_same_shape("value loss", q, "Q(s, a)", target, "target");

    // The actor through the critic, whose parameters get no gradient from this term.
    TensorDict acted = td.clone(/*recurse=*/false);
    actor_(acted);
    torch::Tensor q_actor;
    {
      tdrl::losses::HoldOutParams hold(*critic_);
      q_actor = critic_(acted).get(key("value"));
    }
    TensorDict out = TensorDict::empty({});
    out.set("loss_actor", -q_actor.mean());
    out.set("loss_value", (q - target).pow(2).mean());
    out.set("q_value", q.detach().mean());
    return out;
  }

 private:
  tdnn::TensorDictModule actor_;
  tdrl::modules::ValueOperator critic_;
  DriftDPGLossOptions options_;
};

/// `algo:` of drift_dpg, and `replay:` beside it: the loss's options, the exploration noise's
/// (AdditiveGaussianModuleOptions' declared fields: annealed from sigma_init to sigma_end over
/// annealing_num_steps frames), the target networks' soft update rate and the updates per batch.
struct DriftDPGConfig : apps::AlgoConfig {
  DriftDPGLossOptions loss;
  tdrl::modules::AdditiveGaussianModuleOptions noise =
      tdrl::modules::AdditiveGaussianModuleOptions()
          .sigma_init(0.5)
          .sigma_end(0.1)
          .annealing_num_steps(1000);
  double tau = 0.05;
  int64_t updates_per_batch = 16;
  apps::ReplaySection replay_section;
  apps::ReplaySection* replay() override { return &replay_section; }
  void fields(apps::FieldVisitor& v) override {
    loss.fields(v);
    noise.fields(v);
    v("tau", tau, apps::greater_than(0).up_to(1), "soft update rate of the target networks");
    v("updates_per_batch", updates_per_batch, apps::at_least(1),
      "gradient steps per collected batch");
  }
};

class DriftDPGRecipe : public apps::Recipe {
 public:
  explicit DriftDPGRecipe(const DriftDPGConfig& config) : config_(config) {}

  void build_acting(const apps::RecipeContext& context) override {
    const apps::EnvInfo env = context.env;
    const std::vector<int64_t> cells = context.model().actor_cells;
    auto make_actor = [env, cells] {
      return tdnn::TensorDictModule(
          tdrl::modules::TanhBoundedMLP(
              tdrl::modules::MLP(
                  tdrl::modules::MLPOptions(env.obs_dim, env.action_dim).num_cells(cells)),
              env.bounded->low(), env.bounded->high()),
          tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action"}));
    };
    const auto noise_options = config_.noise;
    auto explore = [env, noise_options](tdnn::TensorDictModule a) {
      tdrl::modules::AdditiveGaussianModule noise(env.action_spec, noise_options);
      return std::make_pair(tdnn::TensorDictSequential(a, noise), noise);
    };
    actor_ = make_actor();
    actor = actor_;
    auto [policy, noise] = explore(actor_);
    noise_ = noise.ptr();
    exploration_policy = policy;
    exploration_modules.emplace_back("exploration", noise);  // its annealing is checkpointed
    policy_factory = [make_actor, explore] {
      return tdrl::collectors::CollectorPolicy(explore(make_actor()).first);
    };
  }

  void build_learning(const apps::RecipeContext& context) override {
    const apps::EnvInfo& env = context.env;
    tdrl::modules::ValueOperator critic(
        tdrl::modules::ConcatMLP(
            tdrl::modules::MLP(tdrl::modules::MLPOptions(env.obs_dim + env.action_dim, 1)
                                   .num_cells(context.model().critic_cells))),
        tdrl::modules::ValueOperatorOptions().in_keys({"observation", "action"}));
    loss = std::make_shared<DriftDPGLoss>(actor_, critic, config_.loss);
    // One optimiser (optim.name) per network, each minimising its own term.
    auto optimise = [&](const char* name, const char* term, std::vector<torch::Tensor> params) {
      apps::OptimizerGroup group;
      group.name = name;
      group.terms = {term};
      group.base_lr = context.optim().optimizer.lr();
      group.optimizer = tdrl::modules::make_optimizer(context.optim().optimizer, std::move(params));
      optimizers.push_back(std::move(group));
    };
    optimise("actor", "loss_actor", actor_->parameters());
    optimise("critic", "loss_value", critic->parameters());
    replay = std::make_shared<tdrl::replay::TensorDictReplayBuffer>(
        std::make_shared<tdrl::replay::LazyTensorStorage>(context.replay->capacity),
        tdrl::replay::ReplayBufferOptions().batch_size(context.replay->batch_size));
    target_updater_ = std::make_unique<tdrl::losses::SoftUpdate>(loss, config_.tau);
  }

  int64_t updates_per_batch() const override { return config_.updates_per_batch; }
  void after_update() override { target_updater_->step(); }
  // The noise anneals by frames collected; a resumed run's loaded noise holds its annealing.
  void after_batch(int64_t frames) override {
    noise_->step(frames - annealed_);
    annealed_ = frames;
  }
  void on_resume(int64_t frames) override { annealed_ = frames; }

 private:
  DriftDPGConfig config_;
  tdnn::TensorDictModule actor_{nullptr};
  std::shared_ptr<tdrl::modules::AdditiveGaussianModuleImpl> noise_;
  std::unique_ptr<tdrl::losses::SoftUpdate> target_updater_;
  int64_t annealed_ = 0;
};

std::vector<std::string> check_drift_dpg(const apps::RunConfig& config, const apps::EnvInfo& env) {
  std::vector<std::string> problems;
  if (!env.bounded)
    problems.push_back(
        "'algo.name' is drift_dpg, which needs a Bounded action space, but "
        "'env.name' " +
        env.name + " has " + env.action_spec->to_string() + "; use dqn");
  if (config.replay()->prioritized)
    problems.push_back("'replay.prioritized' is true, but drift_dpg samples uniformly; remove it");
  return problems;
}

}  // namespace

void register_drift_components() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!envs::is_env_registered("Drift-v0")) {
      envs::register_env<DriftEnvOptions>("Drift-v0", [](const DriftEnvOptions& options,
                                                         const envs::EnvOptions& given) {
        return std::make_shared<DriftEnv>(DriftEnvOptions(options).batch_size(given.batch_size()));
      });
    }
    if (!apps::find_algorithm("drift_pg")) {
      apps::register_algorithm<DriftAlgoConfig, DriftRecipe>(
          "drift_pg", "REINFORCE with a batch baseline (the package test's user algorithm)",
          check_drift_pg);
    }
    if (!apps::find_algorithm("drift_dpg")) {
      apps::register_algorithm<DriftDPGConfig, DriftDPGRecipe>(
          "drift_dpg",
          "deterministic policy gradient with replay, target networks and annealed Gaussian "
          "noise (the package test's off-policy user algorithm)",
          check_drift_dpg);
    }
  });
}

}  // namespace drift
