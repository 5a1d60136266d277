// The built-in algorithms: each a config section and a recipe whose acting part builds the
// policy and whose learning part builds the loss, optimisers and replay buffer around it.

#include <optional>
#include <tuple>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/apps/models.h>
#include <tdrl/apps/registry.h>
#include <tdrl/collectors/collector.h>
#include <tdrl/losses/a2c.h>
#include <tdrl/losses/ddpg.h>
#include <tdrl/losses/dqn.h>
#include <tdrl/losses/functional/distance.h>
#include <tdrl/losses/ppo.h>
#include <tdrl/losses/sac.h>
#include <tdrl/losses/td3.h>
#include <tdrl/losses/value_estimators.h>
#include <tdrl/modules/additive_gaussian.h>
#include <tdrl/modules/egreedy.h>
#include <tdrl/modules/q_value.h>
#include <tdrl/modules/recurrent.h>
#include <tdrl/replay/slice_sampler.h>
#include <tensordict/name_table.h>
#include <tensordict/nn/tensordict_sequential.h>

#include "config/config_text.h"
#include "training/builtin.h"
#include "training/recipe_parts.h"

namespace tdrl::apps::detail {

namespace {

namespace tdnn = tensordict::nn;

// ---- configs ---------------------------------------------------------------------------------

// Each section composes the options of the library parts it builds (the loss, its value
// estimator, the exploration module), which declare their own fields; the section adds only
// what the recipe itself reads, and sets the defaults the shipped recipes use where they differ
// from the library's (TorchRL's).

// PPO and A2C: GAE, the loss's options, and the epochs of each update.
template <class LossOptions>
struct PolicyGradientConfig : AlgoConfig {
  losses::ValueEstimatorOptions gae;
  // No entropy term unless asked for (entropy_bonus), as SB3 and CleanRL's CartPole recipes.
  LossOptions loss = LossOptions()
                         .entropy_bonus(false)
                         .entropy_coef(0.0)
                         .critic_coef(0.5)
                         .loss_critic_type("l2")
                         .normalize_advantage(true);
  int64_t num_epochs = 10;
  int64_t minibatch_size = 64;
  int64_t sequence_length = -1;
  void fields(FieldVisitor& v) override {
    gae.fields(v, losses::ValueEstimatorType::kGAE);
    loss.fields(v);
    v("num_epochs", num_epochs, at_least(1), "optimisation passes over each collected batch");
    v("minibatch_size", minibatch_size, at_least(1), "frames per minibatch (the batch if larger)");
    v("sequence_length", sequence_length, at_least(1).or_exactly(-1),
      "with a recurrent model.core: steps of one env per training sequence, minibatches being "
      "whole sequences (-1: the collected batch's steps per env)");
  }
};

using PPOConfig = PolicyGradientConfig<losses::ClipPPOLossOptions>;
using A2CConfig = PolicyGradientConfig<losses::A2CLossOptions>;

// The target-network updates (algo.target_update): the one table that names them and says
// which each is.
enum class TargetUpdate { kSoft, kHard };
const tensordict::NameTable<TargetUpdate>& target_updates() {
  static const tensordict::NameTable<TargetUpdate> table(
      "target update", {{"soft", TargetUpdate::kSoft}, {"hard", TargetUpdate::kHard}});
  return table;
}

// What every off-policy section has: the TD(0) target's options, the target-network updates,
// the update-to-data ratio and the replay buffer.
struct OffPolicyConfig : AlgoConfig {
  losses::ValueEstimatorOptions td0;
  std::string target_update = "soft";
  double tau = 0.005;
  int64_t hard_update_period = 500;
  int64_t updates_per_batch = -1;
  ReplaySection replay_section;
  ReplaySection* replay() override { return &replay_section; }
  void fields(FieldVisitor& v) override {
    td0.fields(v, losses::ValueEstimatorType::kTD0);
    v("target_update", target_update, one_of(target_updates().names()), "target network update");
    v("tau", tau, greater_than(0).up_to(1), "soft update rate");
    v("hard_update_period", hard_update_period, at_least(1),
      "optimiser steps between hard updates");
    v("updates_per_batch", updates_per_batch, at_least(1).or_exactly(-1),
      "gradient steps per collected batch (-1: frames_per_batch, an update-to-data ratio of 1)");
  }
  // frames_per_batch when -1.
  int64_t updates(const CollectorSection& collector) const {
    return updates_per_batch > 0 ? updates_per_batch : collector.limits.frames_per_batch();
  }
};

struct DQNConfig : OffPolicyConfig {
  losses::DQNLossOptions loss = losses::DQNLossOptions().double_dqn(true);
  modules::EGreedyModuleOptions exploration =
      modules::EGreedyModuleOptions().eps_init(1.0).eps_end(0.05).annealing_num_steps(10000);
  // A recurrent Q-network's replay (R2D2): sequences and their burn-in.
  int64_t sequence_length = 16;
  int64_t burn_in = 0;
  bool stored_state = true;
  double lmbda = 0;
  void fields(FieldVisitor& v) override {
    OffPolicyConfig::fields(v);
    loss.fields(v);
    exploration.fields(v);
    v("sequence_length", sequence_length, at_least(2),
      "with a recurrent model.core: steps per sequence sampled from the replay buffer, which "
      "starts from the hidden state stored at its first step (replay.batch_size counts steps "
      "and must be a multiple)");
    v("burn_in", burn_in, at_least(0),
      "with a recurrent model.core: steps at the start of each sequence that only warm the "
      "state up and are left out of the loss (below sequence_length)");
    v("stored_state", stored_state,
      "with a recurrent model.core: start each sequence from the hidden state stored when it "
      "was collected (R2D2's stored state); false: from zeros (R2D2's zero start, which "
      "burn_in then warms up)");
    v("lmbda", lmbda, in_range(0, 1),
      "with a recurrent model.core: lambda of TD(lambda) targets along each sequence (Peng's "
      "Q(lambda), a mixture of the n-step returns R2D2 uses); 0: one-step TD targets");
  }
};

// DDPG and TD3: the loss's options and the Gaussian exploration noise.
template <class LossOptions>
struct DeterministicActorConfig : OffPolicyConfig {
  LossOptions loss;
  double exploration_noise = 0.1;
  void fields(FieldVisitor& v) override {
    OffPolicyConfig::fields(v);
    loss.fields(v);
    v("exploration_noise", exploration_noise, at_least(0),
      "std of the Gaussian action noise (relative to the action range)");
  }
};

struct DDPGConfig : DeterministicActorConfig<losses::DDPGLossOptions> {
  DDPGConfig() { loss.delay_actor(true); }
};

struct TD3Config : DeterministicActorConfig<losses::TD3LossOptions> {
  int64_t policy_delay = 2;
  TD3Config() { loss.loss_function("l2"); }
  void fields(FieldVisitor& v) override {
    DeterministicActorConfig::fields(v);
    v("policy_delay", policy_delay, at_least(1), "critic updates per actor update");
  }
};

struct SACConfig : OffPolicyConfig {
  losses::SACLossOptions loss = losses::SACLossOptions().loss_function("l2");
  double alpha_lr = 3e-4;
  void fields(FieldVisitor& v) override {
    OffPolicyConfig::fields(v);
    loss.fields(v);
    v("alpha_lr", alpha_lr, greater_than(0), "entropy temperature learning rate");
  }
};

// Algorithms with one optimiser refuse the per-network learning rates instead of ignoring them.
std::vector<std::string> single_optimizer_problems(const RunConfig& config) {
  std::vector<std::string> out;
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"optim.actor_lr", config.optim.actor_lr},
        {"optim.critic_lr", config.optim.critic_lr}})
    if (value != -1)
      out.push_back("'" + std::string(key) + "' is set, but " + config.algo.name +
                    " trains one optimiser over all its networks; set optim.lr instead");
  return out;
}

// What an actor and its critic read: the actor's input (its pixel encoder, if any), the
// critic's where it is built here (shared with the actor under model.share_encoder, or the
// critic's own when its core must run in the collectors; else make_state_value makes it), and
// their recurrent cores (null with model.core mlp).
struct ActorCriticInputs {
  NetworkInput actor_input;
  std::optional<NetworkInput> critic_input;
  std::shared_ptr<modules::RecurrentModuleImpl> actor, critic;
};

// What the collectors run: the actor, then the critic's core (after the critic's encoder, unless
// the actor's encoder is the critic's and has run) when it has one, so that the critic's state is
// carried through the episodes as the actor's is.
collectors::CollectorPolicy exploring(const modules::ProbabilisticActor& actor,
                                      const ActorCriticInputs& inputs) {
  if (!inputs.critic) return collectors::CollectorPolicy(actor);
  tensordict::nn::TensorDictSequentialImpl::Modules modules{actor.ptr()};
  const auto& encoder = inputs.critic_input->encoder;
  if (encoder && encoder != inputs.actor_input.encoder) modules.push_back(encoder);
  modules.push_back(inputs.critic);
  return collectors::CollectorPolicy(tensordict::nn::TensorDictSequential(modules));
}

ActorCriticInputs make_inputs(const ModelSection& model, const EnvInfo& env) {
  ActorCriticInputs inputs{network_input(model, env), std::nullopt, nullptr, nullptr};
  if (model.share_encoder) inputs.critic_input = inputs.actor_input;
  inputs.actor = make_recurrent_core(model, env, "", inputs.actor_input);
  inputs.critic = make_recurrent_core(model, env, "critic", inputs.critic_input);
  if (inputs.critic && !inputs.critic_input)
    inputs.critic_input = network_input(model, env, "critic");
  return inputs;
}

// The acting part of PPO, A2C and SAC: the stochastic actor explores by sampling, after the
// model's recurrent core if it has one (the inputs and cores are returned for the critic).
ActorCriticInputs build_stochastic_acting(Recipe& recipe, modules::ProbabilisticActor& actor,
                                          const RecipeContext& context) {
  const ModelSection model = context.model();
  const EnvInfo env = context.env;
  const ActorCriticInputs inputs = make_inputs(model, env);
  actor = make_stochastic_actor(model, env, inputs.actor, inputs.actor_input);
  recipe.actor = actor;
  recipe.exploration_policy = exploring(actor, inputs);
  recipe.policy_state = hidden_state_specs({inputs.actor, inputs.critic});
  recipe.policy_factory = [model, env] {
    const ActorCriticInputs own = make_inputs(model, env);
    return exploring(make_stochastic_actor(model, env, own.actor, own.actor_input), own);
  };
  return inputs;
}

// ---- PPO and A2C -----------------------------------------------------------------------------

template <class Config>
class PolicyGradientRecipe : public Recipe {
 public:
  explicit PolicyGradientRecipe(const Config& config) : config_(config) {}

  void build_acting(const RecipeContext& context) override {
    inputs_.emplace(build_stochastic_acting(*this, actor_, context));
  }

  void build_learning(const RecipeContext& context) override {
    auto critic =
        make_state_value(context.model(), context.env, inputs_->critic, inputs_->critic_input);
    if constexpr (std::is_same_v<Config, PPOConfig>) {
      pg_ = std::make_shared<losses::ClipPPOLoss>(actor_, critic, config_.loss);
    } else {
      pg_ = std::make_shared<losses::A2CLoss>(actor_, critic, config_.loss);
    }
    pg_->make_value_estimator(losses::ValueEstimatorType::kGAE, config_.gae);
    loss = pg_;
    optimizers.push_back(
        group(context.optim(), "all", pg_->parameters(), context.optim().optimizer.lr(), {}));
  }

  int64_t epochs_per_batch() const override { return config_.num_epochs; }
  int64_t minibatch_size() const override { return config_.minibatch_size; }
  int64_t sequence_length() const override {
    return inputs_ && inputs_->actor ? config_.sequence_length : 0;
  }

  void before_epoch(const TensorDict& batch) override {
    torch::NoGradGuard no_grad;
    pg_->value_estimator()->forward(batch);
  }

 private:
  Config config_;
  modules::ProbabilisticActor actor_{nullptr};
  // Built by build_acting.
  std::optional<ActorCriticInputs> inputs_;
  std::shared_ptr<losses::PolicyGradientLoss> pg_;
};

// ---- off-policy ------------------------------------------------------------------------------

// What every off-policy recipe ends its learning part with: the replay buffer, target updates
// after each gradient step, and the update-to-data ratio.
class OffPolicyRecipe : public Recipe {
 public:
  int64_t updates_per_batch() const override { return updates_; }
  void after_update() override {
    if (hard_) hard_->step();
    if (soft_) soft_->step();
  }
  // A soft update is lerps of the target parameters; a hard one counts updates on the host.
  bool after_update_capturable() const override { return !hard_; }
  bool updates_priorities() const override { return prioritized_; }

 protected:
  // `sampler`: the replay buffer's own (null: uniform, or prioritized as replay.prioritized).
  void finish_learning(const OffPolicyConfig& config, const RecipeContext& context,
                       std::shared_ptr<replay::Sampler> sampler = nullptr) {
    replay = make_replay(*context.replay, context.replay_device, std::move(sampler));
    prioritized_ = context.replay->prioritized;
    switch (target_updates().at(config.target_update, "algo.target_update")) {
      case TargetUpdate::kHard:
        hard_ = std::make_unique<losses::HardUpdate>(loss, config.hard_update_period);
        break;
      case TargetUpdate::kSoft:
        soft_ = std::make_unique<losses::SoftUpdate>(loss, config.tau);
        break;
    }
    updates_ = config.updates(context.collector);
  }
  static void set_td0(losses::LossModule& l, const OffPolicyConfig& config) {
    l.make_value_estimator(losses::ValueEstimatorType::kTD0, config.td0);
  }

 private:
  std::unique_ptr<losses::SoftUpdate> soft_;
  std::unique_ptr<losses::HardUpdate> hard_;
  int64_t updates_ = 1;
  bool prioritized_ = false;
};

class DQNRecipe : public OffPolicyRecipe {
 public:
  explicit DQNRecipe(const DQNConfig& config) : config_(config) {}

  void build_acting(const RecipeContext& context) override {
    const ModelSection model = context.model();
    const EnvInfo env = context.env;
    // The Q-network, after a recurrent core when the model has one; and the core.
    using QNet = std::pair<tdnn::ModulePtr<tdnn::TensorDictModuleBase>,
                           std::shared_ptr<modules::RecurrentModuleImpl>>;
    auto make_qnet = [model, env]() -> QNet {
      auto core = make_recurrent_core(model, env);
      const NetworkInput input = network_input(model, env);
      const tensordict::NestedKey in = core ? core->options().out_key() : input.key;
      modules::QValueActor head(mlp(model, core ? model.recurrent.hidden_size() : input.size,
                                    *env.num_actions, model.actor_cells),
                                modules::QValueActorOptions().in_keys({in}).qvalue(
                                    modules::QValueModuleOptions().spec(env.action_spec)));
      if (!core) return {with_encoder(input, head.ptr()), nullptr};
      return {with_encoder(input, tdnn::TensorDictSequential(
                                      tdnn::TensorDictSequentialImpl::Modules{core, head.ptr()})),
              core};
    };
    const auto eps = config_.exploration;
    auto make_policy = [eps, env](const tdnn::ModulePtr<tdnn::TensorDictModuleBase>& qnet) {
      modules::EGreedyModule greedy(env.action_spec, eps);
      return std::make_pair(
          tdnn::TensorDictSequential(tdnn::TensorDictSequentialImpl::Modules{qnet, greedy.ptr()}),
          greedy);
    };
    const auto [qnet, core] = make_qnet();
    qnet_ = qnet;
    core_ = core;
    auto [policy, greedy] = make_policy(qnet_);
    greedy_ = greedy.ptr();
    actor = qnet_;
    exploration_policy = policy;
    exploration_modules.emplace_back("exploration", greedy);
    policy_state = hidden_state_specs({core_});
    policy_factory = [make_qnet, make_policy] {
      return collectors::CollectorPolicy(make_policy(make_qnet().first).first);
    };
  }

  void build_learning(const RecipeContext& context) override {
    auto dqn = std::make_shared<losses::DQNLoss>(qnet_, config_.loss);
    // Multi-step targets need the sequences' time dim: a recurrent Q-network's only.
    if (core_ && config_.lmbda > 0) {
      dqn->make_value_estimator(
          losses::ValueEstimatorType::kTDLambda,
          losses::ValueEstimatorOptions().gamma(config_.td0.gamma()).lmbda(config_.lmbda));
    } else {
      set_td0(*dqn, config_);
    }
    loss = dqn;
    optimizers.push_back(
        group(context.optim(), "all", loss->parameters(), context.optim().optimizer.lr(), {}));
    // A recurrent Q-network learns from sequences that start from their stored states, or
    // from zeros where the sampler flags each sequence's first step is_init.
    std::shared_ptr<replay::Sampler> sampler;
    if (core_) {
      const std::optional<tensordict::NestedKey> init_key =
          config_.stored_state
              ? std::nullopt
              : std::optional<tensordict::NestedKey>(core_->options().is_init_key());
      sampler = std::make_shared<replay::SliceSampler>(replay::SliceSamplerOptions()
                                                           .slice_len(config_.sequence_length)
                                                           .end_key(stream_end_key())
                                                           .is_init_key(init_key)
                                                           .burn_in(config_.burn_in));
    }
    finish_learning(config_, context, sampler);
  }

  int64_t sequence_length() const override { return core_ ? config_.sequence_length : 0; }

  void after_batch(int64_t frames) override {
    greedy_->step(frames - annealed_);
    annealed_ = frames;
  }
  // The loaded epsilon already holds the annealing up to the checkpoint.
  void on_resume(int64_t frames) override { annealed_ = frames; }

 private:
  DQNConfig config_;
  tdnn::ModulePtr<tdnn::TensorDictModuleBase> qnet_;
  std::shared_ptr<modules::RecurrentModuleImpl> core_;
  std::shared_ptr<modules::EGreedyModuleImpl> greedy_;
  int64_t annealed_ = 0;
};

// DDPG and TD3: a deterministic actor with Gaussian exploration noise.
template <class Config>
class DeterministicActorRecipe : public OffPolicyRecipe {
 public:
  explicit DeterministicActorRecipe(const Config& config) : config_(config) {}

  void build_acting(const RecipeContext& context) override {
    const ModelSection model = context.model();
    const EnvInfo env = context.env;
    auto make_actor = [model, env] {
      return tdnn::TensorDictModule(
          modules::TanhBoundedMLP(mlp(model, env.obs_dim, env.action_dim, model.actor_cells),
                                  env.bounded->low(), env.bounded->high()),
          tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action"}));
    };
    const double range = (env.bounded->high() - env.bounded->low()).mean().item<double>() / 2;
    const auto noise = modules::AdditiveGaussianModuleOptions()
                           .sigma_init(config_.exploration_noise * range)
                           .sigma_end(config_.exploration_noise * range)
                           .annealing_num_steps(1)
                           .safe(true);
    auto make_policy = [env, noise](tdnn::TensorDictModule a) {
      return tdnn::TensorDictSequential(a, modules::AdditiveGaussianModule(env.action_spec, noise));
    };
    actor_ = make_actor();
    actor = actor_;
    exploration_policy = make_policy(actor_);
    policy_factory = [make_actor, make_policy] {
      return collectors::CollectorPolicy(make_policy(make_actor()));
    };
  }

  void build_learning(const RecipeContext& context) override {
    const auto& env = context.env;
    auto make_critic = [&] { return state_action_critic(context); };
    const double actor_lr = lr_or_default(context.optim(), context.optim().actor_lr);
    const double critic_lr = lr_or_default(context.optim(), context.optim().critic_lr);
    if constexpr (std::is_same_v<Config, DDPGConfig>) {
      auto ddpg = std::make_shared<losses::DDPGLoss>(actor_, make_critic(), config_.loss);
      set_td0(*ddpg, config_);
      loss = ddpg;
      optimizers.push_back(group(context.optim(), "actor", network_params(*loss, {"actor_network"}),
                                 actor_lr, {"loss_actor"}));
      optimizers.push_back(group(context.optim(), "critic",
                                 network_params(*loss, {"value_network"}), critic_lr,
                                 {"loss_value"}));
    } else {
      std::vector<modules::ValueOperator> critics{make_critic(), make_critic()};
      auto options = config_.loss;
      auto td3 =
          std::make_shared<losses::TD3Loss>(actor_, critics, options.action_spec(env.action_spec));
      set_td0(*td3, config_);
      loss = td3;
      optimizers.push_back(group(context.optim(), "actor", network_params(*loss, {"actor_network"}),
                                 actor_lr, {"loss_actor"}, config_.policy_delay));
      optimizers.push_back(group(context.optim(), "critic",
                                 network_params(*loss, {"qvalue_network"}), critic_lr,
                                 {"loss_qvalue"}));
    }
    finish_learning(config_, context);
  }

 private:
  Config config_;
  tdnn::TensorDictModule actor_{nullptr};
};

class SACRecipe : public OffPolicyRecipe {
 public:
  explicit SACRecipe(const SACConfig& config) : config_(config) {}

  void build_acting(const RecipeContext& context) override {
    build_stochastic_acting(*this, actor_, context);
  }

  void build_learning(const RecipeContext& context) override {
    const auto& env = context.env;
    std::vector<modules::ValueOperator> critics{state_action_critic(context),
                                                state_action_critic(context)};
    auto options = config_.loss;
    auto sac =
        std::make_shared<losses::SACLoss>(actor_, critics, options.action_spec(env.action_spec));
    set_td0(*sac, config_);
    loss = sac;
    optimizers.push_back(group(context.optim(), "actor", network_params(*loss, {"actor_network"}),
                               lr_or_default(context.optim(), context.optim().actor_lr),
                               {"loss_actor"}));
    optimizers.push_back(group(context.optim(), "critic", network_params(*loss, {"qvalue_network"}),
                               lr_or_default(context.optim(), context.optim().critic_lr),
                               {"loss_qvalue"}));
    if (!config_.loss.fixed_alpha()) {
      std::vector<torch::Tensor> alpha;
      for (const auto& item : loss->named_parameters(/*recurse=*/false))
        if (item.key() == "log_alpha") alpha.push_back(item.value());
      optimizers.push_back(
          group(context.optim(), "alpha", alpha, config_.alpha_lr, {"loss_alpha"}));
    }
    finish_learning(config_, context);
  }

 private:
  SACConfig config_;
  modules::ProbabilisticActor actor_{nullptr};
};

// ---- the checks of each algorithm against the task -------------------------------------------

// What every recipe with a recurrent core refuses: keys only a core reads, set with mlp
// (`recurrent_keys`: name, value, default), and a captured update (its sequence mode reads
// is_init on the host).
std::vector<std::string> recurrent_core_problems(
    const RunConfig& config,
    std::initializer_list<std::tuple<const char*, int64_t, int64_t>> recurrent_keys) {
  std::vector<std::string> out;
  if (config.model.core == "mlp") {
    for (const auto& [key, value, default_value] : recurrent_keys)
      if (value != default_value)
        out.push_back("'algo." + std::string(key) + "' is " + std::to_string(value) +
                      ", but model.core is mlp, which learns from single frames; set "
                      "model.core to lstm or gru, or leave " +
                      key + " out");
    return out;
  }
  if (config.train.cuda_graph)
    out.push_back("'train.cuda_graph' is true, but model.core is " + config.model.core +
                  ", whose sequence mode reads is_init on the host in each update; set "
                  "train.cuda_graph: false");
  return out;
}

// The steps of one env in a collected batch: the longest sequence a batch holds.
int64_t steps_per_env(const RunConfig& config) {
  return config.collector.limits.frames_per_batch() / config.env.num_envs;
}

// An entropy weight without the entropy term would be ignored: refused, saying what to set.
template <class Config>
std::vector<std::string> check_policy_gradient(const RunConfig& config, const EnvInfo& env) {
  auto out = action_space_problems(config.algo.name, env, true, true);
  for (auto& p : single_optimizer_problems(config)) out.push_back(std::move(p));
  const auto* pg = dynamic_cast<const Config*>(config.algo.options.get());
  if (pg && !pg->loss.entropy_bonus() && pg->loss.entropy_coef() != 0)
    out.push_back("'algo.entropy_coef' is " + format_number(pg->loss.entropy_coef()) +
                  ", but 'algo.entropy_bonus' is false, so no entropy term would be added; set "
                  "algo.entropy_bonus: true (or entropy_coef: 0)");
  if (!pg) return out;
  for (auto& p : recurrent_core_problems(config, {{"sequence_length", pg->sequence_length, -1}}))
    out.push_back(std::move(p));
  const int64_t steps = steps_per_env(config);
  if (config.model.core != "mlp" && pg->sequence_length > 0 && steps % pg->sequence_length != 0)
    out.push_back("'algo.sequence_length' is " + std::to_string(pg->sequence_length) +
                  ", which does not divide the " + std::to_string(steps) +
                  " steps per env of a batch (collector.frames_per_batch / env.num_envs); set "
                  "it to a divisor of " +
                  std::to_string(steps));
  return out;
}

// The algorithms without a recurrent variant refuse a recurrent core instead of ignoring it.
std::vector<std::string> feedforward_only_problems(const RunConfig& config) {
  if (config.model.core == "mlp") return {};
  return {"'model.core' is " + config.model.core + ", but " + config.algo.name +
          " builds feed-forward networks only; the recurrent cores train with ppo, a2c and dqn. "
          "Set model.core: mlp"};
}

// A recurrent DQN samples sequences: what its replay must allow.
std::vector<std::string> recurrent_dqn_problems(const RunConfig& config, const DQNConfig& dqn) {
  const DQNConfig defaults;
  auto out = recurrent_core_problems(
      config, {{"sequence_length", dqn.sequence_length, defaults.sequence_length},
               {"burn_in", dqn.burn_in, defaults.burn_in}});
  if (config.model.core == "mlp") {
    if (dqn.stored_state != defaults.stored_state)
      out.push_back(
          "'algo.stored_state' is false, but model.core is mlp, which carries no state; set "
          "model.core to lstm or gru, or leave stored_state out");
    if (dqn.lmbda != defaults.lmbda)
      out.push_back("'algo.lmbda' is " + format_number(dqn.lmbda) +
                    ", but model.core is mlp, whose replayed transitions have no time dim to "
                    "look ahead along; set model.core to lstm or gru, or leave lmbda out");
    return out;
  }
  const int64_t length = dqn.sequence_length;
  const int64_t steps = steps_per_env(config);
  if (dqn.burn_in >= length)
    out.push_back("'algo.burn_in' is " + std::to_string(dqn.burn_in) +
                  ", which leaves nothing of a sequence of algo.sequence_length " +
                  std::to_string(length) + " to train on; set it below sequence_length");
  if (config.replay() && config.replay()->batch_size % length != 0)
    out.push_back("'replay.batch_size' is " + std::to_string(config.replay()->batch_size) +
                  ", not a multiple of algo.sequence_length " + std::to_string(length) +
                  " (a recurrent dqn samples whole sequences); set it to a multiple");
  if (length > steps)
    out.push_back("'algo.sequence_length' is " + std::to_string(length) + ", longer than the " +
                  std::to_string(steps) +
                  " steps per env of a batch (collector.frames_per_batch / env.num_envs), the "
                  "longest stretch the replay buffer holds of one env; lower it or collect more "
                  "frames per batch");
  if (config.replay() && config.replay()->prioritized)
    out.push_back(
        "'replay.prioritized' is true, but a recurrent dqn samples sequences, which "
        "have no priorities here; set replay.prioritized: false");
  return out;
}

std::vector<std::string> check_dqn(const RunConfig& config, const EnvInfo& env) {
  auto out = action_space_problems("dqn", env, true, false);
  for (auto& p : single_optimizer_problems(config)) out.push_back(std::move(p));
  if (const auto* dqn = dynamic_cast<const DQNConfig*>(config.algo.options.get()))
    for (auto& p : recurrent_dqn_problems(config, *dqn)) out.push_back(std::move(p));
  if (config.model.share_encoder && config.model.encoder != "none")
    out.push_back(
        "'model.share_encoder' is true, but dqn trains one network (its target is a copy), "
        "which has no other network to share its encoder with; remove model.share_encoder");
  return out;
}

std::vector<std::string> check_continuous(const RunConfig& config, const EnvInfo& env) {
  auto out = action_space_problems(config.algo.name, env, false, true);
  for (auto& p : feedforward_only_problems(config)) out.push_back(std::move(p));
  // Their critics read the observation and the action through one ConcatMLP
  // (state_action_critic), which has no place for an encoder yet.
  if (config.model.encoder != "none")
    out.push_back("'model.encoder' is " + config.model.encoder + ", but " + config.algo.name +
                  "'s critics read the flat observation with the action, which no pixel encoder "
                  "feeds yet; pixels train with ppo, a2c and dqn. Set model.encoder: none");
  return out;
}

}  // namespace

void register_builtin_algorithms() {
  register_algorithm<PPOConfig, PolicyGradientRecipe<PPOConfig>>(
      "ppo", "Proximal Policy Optimisation (clipped), GAE advantages; any action space",
      check_policy_gradient<PPOConfig>);
  register_algorithm<A2CConfig, PolicyGradientRecipe<A2CConfig>>(
      "a2c", "Advantage Actor-Critic, GAE advantages; any action space",
      check_policy_gradient<A2CConfig>);
  register_algorithm<DQNConfig, DQNRecipe>(
      "dqn", "Deep Q-Network (double DQN by default), epsilon-greedy; discrete actions", check_dqn);
  register_algorithm<DDPGConfig, DeterministicActorRecipe<DDPGConfig>>(
      "ddpg", "Deep Deterministic Policy Gradient, Gaussian exploration; continuous actions",
      check_continuous);
  register_algorithm<TD3Config, DeterministicActorRecipe<TD3Config>>(
      "td3", "Twin Delayed DDPG; continuous actions", check_continuous);
  register_algorithm<SACConfig, SACRecipe>(
      "sac", "Soft Actor-Critic with a learned temperature; continuous actions", check_continuous);
}

}  // namespace tdrl::apps::detail
