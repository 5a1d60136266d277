// The built-in algorithms: each a config section and a recipe whose acting part builds the
// policy and whose learning part builds the loss, optimisers and replay buffer around it.

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/apps/models.h>
#include <tdrl/apps/registry.h>
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
#include <tensordict/name_table.h>
#include <tensordict/nn/tensordict_sequential.h>

#include "detail/builtin.h"
#include "detail/config_text.h"
#include "detail/recipe_parts.h"

namespace tdrl::apps::detail {

namespace {

namespace tdnn = tensordict::nn;

// ---- configs ---------------------------------------------------------------------------------

struct PolicyGradientConfig : AlgoConfig {
  double gamma = 0.99;
  double lmbda = 0.95;
  double entropy_coef = 0.0;
  double critic_coef = 0.5;
  bool normalize_advantage = true;
  int64_t num_epochs = 10;
  int64_t minibatch_size = 64;
  std::string loss_critic_type = "l2";
  void fields(FieldVisitor& v) override {
    v("gamma", gamma, in_range(0, 1), "discount");
    v("lmbda", lmbda, in_range(0, 1), "GAE lambda");
    v("entropy_coef", entropy_coef, at_least(0), "entropy bonus weight");
    v("critic_coef", critic_coef, at_least(0), "critic loss weight");
    v("normalize_advantage", normalize_advantage, "standardise advantages per minibatch");
    v("num_epochs", num_epochs, at_least(1), "optimisation passes over each collected batch");
    v("minibatch_size", minibatch_size, at_least(1), "frames per minibatch (the batch if larger)");
    v("loss_critic_type", loss_critic_type, one_of(losses::functional::distance_loss_names()),
      "critic / value loss");
  }
};

struct PPOConfig : PolicyGradientConfig {
  double clip_epsilon = 0.2;
  void fields(FieldVisitor& v) override {
    PolicyGradientConfig::fields(v);
    v("clip_epsilon", clip_epsilon, greater_than(0), "PPO ratio clip");
  }
};

struct A2CConfig : PolicyGradientConfig {};

// The target-network updates (algo.target_update): the one table that names them and says
// which each is.
enum class TargetUpdate { kSoft, kHard };
const tensordict::NameTable<TargetUpdate>& target_updates() {
  static const tensordict::NameTable<TargetUpdate> table(
      "target update", {{"soft", TargetUpdate::kSoft}, {"hard", TargetUpdate::kHard}});
  return table;
}

struct OffPolicyConfig : AlgoConfig {
  double gamma = 0.99;
  std::string loss_critic_type = "l2";
  std::string target_update = "soft";
  double tau = 0.005;
  int64_t hard_update_period = 500;
  int64_t updates_per_batch = -1;
  ReplaySection replay_section;
  ReplaySection* replay() override { return &replay_section; }
  void fields(FieldVisitor& v) override {
    v("gamma", gamma, in_range(0, 1), "discount");
    v("loss_critic_type", loss_critic_type, one_of(losses::functional::distance_loss_names()),
      "critic / value loss");
    v("target_update", target_update, one_of(target_updates().names()), "target network update");
    v("tau", tau, greater_than(0).up_to(1), "soft update rate");
    v("hard_update_period", hard_update_period, at_least(1),
      "optimiser steps between hard updates");
    v("updates_per_batch", updates_per_batch, at_least(1).or_exactly(-1),
      "gradient steps per collected batch (-1: frames_per_batch, an update-to-data ratio of 1)");
  }
  // frames_per_batch when -1.
  int64_t updates(const CollectorSection& collector) const {
    return updates_per_batch > 0 ? updates_per_batch : collector.frames_per_batch;
  }
};

struct DQNConfig : OffPolicyConfig {
  bool double_dqn = true;
  double eps_init = 1.0;
  double eps_end = 0.05;
  int64_t annealing_frames = 10000;
  void fields(FieldVisitor& v) override {
    OffPolicyConfig::fields(v);
    v("double_dqn", double_dqn, "double DQN target");
    v("eps_init", eps_init, in_range(0, 1), "initial epsilon of epsilon-greedy");
    v("eps_end", eps_end, in_range(0, 1), "final epsilon");
    v("annealing_frames", annealing_frames, at_least(1), "frames over which epsilon decays");
  }
};

struct DDPGConfig : OffPolicyConfig {
  double exploration_noise = 0.1;
  void fields(FieldVisitor& v) override {
    OffPolicyConfig::fields(v);
    v("exploration_noise", exploration_noise, at_least(0),
      "std of the Gaussian action noise (relative to the action range)");
  }
};

struct TD3Config : DDPGConfig {
  double policy_noise = 0.2;
  double noise_clip = 0.5;
  int64_t policy_delay = 2;
  void fields(FieldVisitor& v) override {
    DDPGConfig::fields(v);
    v("policy_noise", policy_noise, at_least(0), "target policy smoothing noise");
    v("noise_clip", noise_clip, at_least(0), "clip of the smoothing noise");
    v("policy_delay", policy_delay, at_least(1), "critic updates per actor update");
  }
};

struct SACConfig : OffPolicyConfig {
  double alpha_init = 1.0;
  bool fixed_alpha = false;
  std::string target_entropy = "auto";
  double alpha_lr = 3e-4;
  void fields(FieldVisitor& v) override {
    OffPolicyConfig::fields(v);
    v("alpha_init", alpha_init, greater_than(0), "initial entropy temperature");
    v("fixed_alpha", fixed_alpha, "keep alpha at alpha_init");
    v("target_entropy", target_entropy, one_of({"auto"}).or_number(),
      "\"auto\" (-action dims) or a number");
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

// The acting part of PPO, A2C and SAC: the stochastic actor explores by sampling.
void build_stochastic_acting(Recipe& recipe, modules::ProbabilisticActor& actor,
                             const RecipeContext& context) {
  actor = make_stochastic_actor(context.model, context.env);
  recipe.actor = actor;
  recipe.exploration_policy = actor;
  const ModelSection model = context.model;
  const EnvInfo env = context.env;
  recipe.policy_factory = [model, env] {
    return collectors::CollectorPolicy(make_stochastic_actor(model, env));
  };
}

// ---- PPO and A2C -----------------------------------------------------------------------------

template <class Config>
class PolicyGradientRecipe : public Recipe {
 public:
  explicit PolicyGradientRecipe(const Config& config) : config_(config) {}

  void build_acting(const RecipeContext& context) override {
    build_stochastic_acting(*this, actor_, context);
  }

  void build_learning(const RecipeContext& context) override {
    modules::ValueOperator critic(
        mlp(context.model, context.env.obs_dim, 1, context.model.critic_cells));
    if constexpr (std::is_same_v<Config, PPOConfig>) {
      pg_ = std::make_shared<losses::ClipPPOLoss>(
          actor_, critic,
          losses::ClipPPOLossOptions()
              .clip_epsilon(config_.clip_epsilon)
              .entropy_bonus(config_.entropy_coef > 0)
              .entropy_coef(config_.entropy_coef)
              .critic_coef(config_.critic_coef)
              .loss_critic_type(config_.loss_critic_type)
              .normalize_advantage(config_.normalize_advantage));
    } else {
      pg_ =
          std::make_shared<losses::A2CLoss>(actor_, critic,
                                            losses::A2CLossOptions()
                                                .entropy_bonus(config_.entropy_coef > 0)
                                                .entropy_coef(config_.entropy_coef)
                                                .critic_coef(config_.critic_coef)
                                                .loss_critic_type(config_.loss_critic_type)
                                                .normalize_advantage(config_.normalize_advantage));
    }
    pg_->make_value_estimator(
        losses::ValueEstimatorType::kGAE,
        losses::ValueEstimatorOptions().gamma(config_.gamma).lmbda(config_.lmbda));
    loss = pg_;
    optimizers.push_back(group(context.optim, "all", pg_->parameters(), context.optim.lr, {}));
  }

  int64_t epochs_per_batch() const override { return config_.num_epochs; }
  int64_t minibatch_size() const override { return config_.minibatch_size; }

  void before_epoch(const TensorDict& batch) override {
    torch::NoGradGuard no_grad;
    pg_->value_estimator()->forward(batch);
  }

 private:
  Config config_;
  modules::ProbabilisticActor actor_{nullptr};
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
  void finish_learning(const OffPolicyConfig& config, const RecipeContext& context) {
    replay = make_replay(*context.replay, context.replay_device);
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
  static void set_gamma(losses::LossModule& l, double gamma) {
    l.make_value_estimator(losses::ValueEstimatorType::kTD0,
                           losses::ValueEstimatorOptions().gamma(gamma));
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
    const ModelSection model = context.model;
    const EnvInfo env = context.env;
    auto make_qnet = [model, env] {
      return modules::QValueActor(mlp(model, env.obs_dim, *env.num_actions, model.actor_cells),
                                  modules::QValueActorOptions().qvalue(
                                      modules::QValueModuleOptions().spec(env.action_spec)));
    };
    const auto eps = modules::EGreedyModuleOptions()
                         .eps_init(config_.eps_init)
                         .eps_end(config_.eps_end)
                         .annealing_num_steps(config_.annealing_frames);
    auto make_policy = [eps, env](modules::QValueActor qnet) {
      modules::EGreedyModule greedy(env.action_spec, eps);
      return std::make_pair(tdnn::TensorDictSequential(qnet, greedy), greedy);
    };
    qnet_ = make_qnet();
    auto [policy, greedy] = make_policy(qnet_);
    greedy_ = greedy.ptr();
    actor = qnet_;
    exploration_policy = policy;
    exploration_modules.emplace_back("exploration", greedy);
    policy_factory = [make_qnet, make_policy] {
      return collectors::CollectorPolicy(make_policy(make_qnet()).first);
    };
  }

  void build_learning(const RecipeContext& context) override {
    auto dqn = std::make_shared<losses::DQNLoss>(qnet_, losses::DQNLossOptions()
                                                            .loss_function(config_.loss_critic_type)
                                                            .double_dqn(config_.double_dqn)
                                                            .delay_value(true));
    set_gamma(*dqn, config_.gamma);
    loss = dqn;
    optimizers.push_back(group(context.optim, "all", loss->parameters(), context.optim.lr, {}));
    finish_learning(config_, context);
  }

  void after_batch(int64_t frames) override {
    greedy_->step(frames - annealed_);
    annealed_ = frames;
  }
  // The loaded epsilon already holds the annealing up to the checkpoint.
  void on_resume(int64_t frames) override { annealed_ = frames; }

 private:
  DQNConfig config_;
  modules::QValueActor qnet_{nullptr};
  std::shared_ptr<modules::EGreedyModuleImpl> greedy_;
  int64_t annealed_ = 0;
};

// DDPG and TD3: a deterministic actor with Gaussian exploration noise.
template <class Config>
class DeterministicActorRecipe : public OffPolicyRecipe {
 public:
  explicit DeterministicActorRecipe(const Config& config) : config_(config) {}

  void build_acting(const RecipeContext& context) override {
    const ModelSection model = context.model;
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
    const double actor_lr = lr_or_default(context.optim, context.optim.actor_lr);
    const double critic_lr = lr_or_default(context.optim, context.optim.critic_lr);
    if constexpr (std::is_same_v<Config, DDPGConfig>) {
      auto ddpg = std::make_shared<losses::DDPGLoss>(actor_, make_critic(),
                                                     losses::DDPGLossOptions()
                                                         .loss_function(config_.loss_critic_type)
                                                         .delay_actor(true)
                                                         .delay_value(true));
      set_gamma(*ddpg, config_.gamma);
      loss = ddpg;
      optimizers.push_back(group(context.optim, "actor", network_params(*loss, {"actor_network"}),
                                 actor_lr, {"loss_actor"}));
      optimizers.push_back(group(context.optim, "critic", network_params(*loss, {"value_network"}),
                                 critic_lr, {"loss_value"}));
    } else {
      std::vector<modules::ValueOperator> critics{make_critic(), make_critic()};
      auto td3 = std::make_shared<losses::TD3Loss>(actor_, critics,
                                                   losses::TD3LossOptions()
                                                       .action_spec(env.action_spec)
                                                       .policy_noise(config_.policy_noise)
                                                       .noise_clip(config_.noise_clip)
                                                       .loss_function(config_.loss_critic_type));
      set_gamma(*td3, config_.gamma);
      loss = td3;
      optimizers.push_back(group(context.optim, "actor", network_params(*loss, {"actor_network"}),
                                 actor_lr, {"loss_actor"}, config_.policy_delay));
      optimizers.push_back(group(context.optim, "critic", network_params(*loss, {"qvalue_network"}),
                                 critic_lr, {"loss_qvalue"}));
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
    auto options = losses::SACLossOptions()
                       .loss_function(config_.loss_critic_type)
                       .alpha_init(config_.alpha_init)
                       .fixed_alpha(config_.fixed_alpha)
                       .action_spec(env.action_spec);
    double target_entropy = 0;
    if (parse_float(config_.target_entropy, &target_entropy))
      options.target_entropy(target_entropy);
    auto sac = std::make_shared<losses::SACLoss>(actor_, critics, options);
    set_gamma(*sac, config_.gamma);
    loss = sac;
    optimizers.push_back(group(context.optim, "actor", network_params(*loss, {"actor_network"}),
                               lr_or_default(context.optim, context.optim.actor_lr),
                               {"loss_actor"}));
    optimizers.push_back(group(context.optim, "critic", network_params(*loss, {"qvalue_network"}),
                               lr_or_default(context.optim, context.optim.critic_lr),
                               {"loss_qvalue"}));
    if (!config_.fixed_alpha) {
      std::vector<torch::Tensor> alpha;
      for (const auto& item : loss->named_parameters(/*recurse=*/false))
        if (item.key() == "log_alpha") alpha.push_back(item.value());
      optimizers.push_back(group(context.optim, "alpha", alpha, config_.alpha_lr, {"loss_alpha"}));
    }
    finish_learning(config_, context);
  }

 private:
  SACConfig config_;
  modules::ProbabilisticActor actor_{nullptr};
};

// ---- the checks of each algorithm against the task -------------------------------------------

std::vector<std::string> check_policy_gradient(const RunConfig& config, const EnvInfo& env) {
  auto out = action_space_problems(config.algo.name, env, true, true);
  for (auto& p : single_optimizer_problems(config)) out.push_back(std::move(p));
  return out;
}

std::vector<std::string> check_dqn(const RunConfig& config, const EnvInfo& env) {
  auto out = action_space_problems("dqn", env, true, false);
  for (auto& p : single_optimizer_problems(config)) out.push_back(std::move(p));
  return out;
}

std::vector<std::string> check_continuous(const RunConfig& config, const EnvInfo& env) {
  return action_space_problems(config.algo.name, env, false, true);
}

}  // namespace

void register_builtin_algorithms() {
  register_algorithm<PPOConfig, PolicyGradientRecipe<PPOConfig>>(
      "ppo", "Proximal Policy Optimisation (clipped), GAE advantages; any action space",
      check_policy_gradient);
  register_algorithm<A2CConfig, PolicyGradientRecipe<A2CConfig>>(
      "a2c", "Advantage Actor-Critic, GAE advantages; any action space", check_policy_gradient);
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
