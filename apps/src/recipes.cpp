// The algorithm recipes: each builds envs, networks, loss, optimisers and (off-policy) a replay
// buffer from the config. The Trainer loop is shared; a recipe only adds what its algorithm
// needs (advantages before each epoch, target updates, exploration annealing).

#include <tdrl/apps/recipe.h>

#include <cmath>
#include <sstream>

#include <torch/torch.h>

#include <tdrl/envs/registry.h>
#include <tdrl/envs/transforms/all.h>
#include <tdrl/losses/a2c.h>
#include <tdrl/losses/ddpg.h>
#include <tdrl/losses/dqn.h>
#include <tdrl/losses/ppo.h>
#include <tdrl/losses/sac.h>
#include <tdrl/losses/td3.h>
#include <tdrl/modules/actors.h>
#include <tdrl/modules/additive_gaussian.h>
#include <tdrl/modules/egreedy.h>
#include <tdrl/modules/mlp.h>
#include <tdrl/modules/q_value.h>
#include <tdrl/replay/prioritized_sampler.h>
#include <tdrl/replay/samplers.h>
#include <tdrl/replay/storages.h>
#include <tensordict/nn/normal_param_extractor.h>
#include <tensordict/nn/tensordict_sequential.h>

#include "recipe_common.h"

namespace tdrl::apps {

namespace tdnn = tensordict::nn;
using tensordict::NestedKey;

namespace {

// ---- shared builders -----------------------------------------------------------------------

modules::MLP mlp(const Config& config, int64_t in, int64_t out, const std::vector<int64_t>& cells) {
  return modules::MLP(modules::MLPOptions(in, out)
                          .num_cells(cells)
                          .activation(config.get_string("model.activation"))
                          .layer_norm(config.get_bool("model.layer_norm")));
}

// Q(s, a) on the concatenation of observation and action.
class ConcatMLPImpl : public torch::nn::Module {
 public:
  explicit ConcatMLPImpl(modules::MLP net) : net_(register_module("mlp", std::move(net))) {}
  torch::Tensor forward(const torch::Tensor& observation, const torch::Tensor& action) {
    return net_->forward(torch::cat({observation, action}, -1));
  }

 private:
  modules::MLP net_;
};
TORCH_MODULE(ConcatMLP);

// A deterministic actor squashed onto the action bounds: low + (high - low) * (tanh(x) + 1) / 2.
class BoundedActorImpl : public torch::nn::Module {
 public:
  BoundedActorImpl(modules::MLP net, const torch::Tensor& low, const torch::Tensor& high)
      : net_(register_module("mlp", std::move(net))),
        low_(register_buffer("low", low.to(torch::kFloat32))),
        high_(register_buffer("high", high.to(torch::kFloat32))) {}
  torch::Tensor forward(const torch::Tensor& observation) {
    return low_ + (high_ - low_) * (torch::tanh(net_->forward(observation)) + 1) / 2;
  }

 private:
  modules::MLP net_;
  torch::Tensor low_;
  torch::Tensor high_;
};
TORCH_MODULE(BoundedActor);

std::shared_ptr<torch::optim::Optimizer> make_optimizer(const Config& config,
                                                        std::vector<torch::Tensor> params,
                                                        double lr) {
  const auto name = config.get_string("optim.name");
  const double wd = config.get_float("optim.weight_decay");
  const double eps = config.get_float("optim.eps");
  if (name == "adam") {
    return std::make_shared<torch::optim::Adam>(
        params, torch::optim::AdamOptions(lr).weight_decay(wd).eps(eps));
  }
  if (name == "adamw") {
    return std::make_shared<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(lr).weight_decay(wd).eps(eps));
  }
  if (name == "rmsprop") {
    return std::make_shared<torch::optim::RMSprop>(
        params, torch::optim::RMSpropOptions(lr).weight_decay(wd).eps(eps));
  }
  return std::make_shared<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).weight_decay(wd));
}

double lr_of(const Config& config, const std::string& key) {
  const double v = config.get_float(key);
  return v > 0 ? v : config.get_float("optim.lr");
}

OptimizerGroup group(const Config& config, std::string name, std::vector<torch::Tensor> params,
                     double lr, std::vector<std::string> terms, int64_t period = 1) {
  OptimizerGroup g;
  g.name = std::move(name);
  g.optimizer = make_optimizer(config, std::move(params), lr);
  g.terms = std::move(terms);
  g.period = period;
  g.base_lr = lr;
  return g;
}

std::vector<torch::Tensor> network_params(const losses::LossModule& loss,
                                          const std::vector<std::string>& prefixes) {
  std::vector<torch::Tensor> out;
  for (const auto& name : loss.networks()) {
    for (const auto& prefix : prefixes) {
      if (name.rfind(prefix, 0) == 0) {
        for (const auto& p : loss.network(name)->parameters()) out.push_back(p);
        break;
      }
    }
  }
  return out;
}

std::shared_ptr<replay::TensorDictReplayBuffer> make_replay(const Config& config) {
  const auto capacity = config.get_int("replay.capacity");
  const auto batch = config.get_int("replay.batch_size");
  auto storage = std::make_shared<replay::LazyTensorStorage>(capacity);
  const auto options = replay::ReplayBufferOptions().batch_size(batch);
  if (config.get_bool("replay.prioritized")) {
    return std::make_shared<replay::TensorDictPrioritizedReplayBuffer>(
        storage,
        replay::PrioritizedSamplerOptions(config.get_float("replay.alpha"),
                                          config.get_float("replay.beta")),
        options);
  }
  return std::make_shared<replay::TensorDictReplayBuffer>(
      storage, std::make_shared<replay::RandomSampler>(), nullptr, options);
}

// Target-network updates from algo.target_update / tau / hard_update_period.
class TargetUpdater {
 public:
  TargetUpdater(const Config& config, std::shared_ptr<losses::LossModule> loss) {
    if (config.get_string("algo.target_update") == "hard") {
      hard_ = std::make_unique<losses::HardUpdate>(loss, config.get_int("algo.hard_update_period"));
    } else {
      soft_ = std::make_unique<losses::SoftUpdate>(loss, config.get_float("algo.tau"));
    }
  }
  void step() {
    if (hard_) hard_->step();
    if (soft_) soft_->step();
  }

 private:
  std::unique_ptr<losses::SoftUpdate> soft_;
  std::unique_ptr<losses::HardUpdate> hard_;
};

// What every off-policy recipe ends with: the replay buffer, target updates after each
// gradient step, and the update-to-data ratio.
class OffPolicyRecipe : public Recipe {
 public:
  int64_t updates_per_batch() const override { return updates_; }
  void after_update() override { updater_->step(); }

 protected:
  using Recipe::Recipe;
  // Called at the end of a constructor, once `loss` is set.
  void finish_off_policy(const Config& config) {
    replay = make_replay(config);
    updater_ = std::make_unique<TargetUpdater>(config, loss);
    updates_ = updates_per_batch_of(config);
  }

 private:
  std::unique_ptr<TargetUpdater> updater_;
  int64_t updates_ = 1;
};

// ---- on-policy: PPO and A2C ----------------------------------------------------------------

class PolicyGradientRecipe : public Recipe {
 public:
  explicit PolicyGradientRecipe(const Config& config) : Recipe(config.get_string("algo.name")) {
    EnvInfo info = build_envs(config, *this);
    auto actor_builder = [config, info]() { return make_stochastic_actor(config, info); };
    auto trainer_actor = actor_builder();
    actor = trainer_actor.ptr();
    exploration_policy = trainer_actor;
    policy_factory = [actor_builder] { return collectors::CollectorPolicy(actor_builder()); };
    modules::ValueOperator critic(
        mlp(config, info.obs_dim, 1, config.get_int_list("model.critic_cells")));
    const auto critic_type = config.get_string("algo.loss_critic_type");
    std::shared_ptr<losses::PolicyGradientLoss> pg;
    if (algorithm() == "ppo") {
      pg = std::make_shared<losses::ClipPPOLoss>(
          trainer_actor, critic,
          losses::ClipPPOLossOptions()
              .clip_epsilon(config.get_float("algo.clip_epsilon"))
              .entropy_bonus(config.get_float("algo.entropy_coef") > 0)
              .entropy_coef(config.get_float("algo.entropy_coef"))
              .critic_coef(config.get_float("algo.critic_coef"))
              .loss_critic_type(critic_type)
              .normalize_advantage(config.get_bool("algo.normalize_advantage")));
    } else {
      pg = std::make_shared<losses::A2CLoss>(
          trainer_actor, critic,
          losses::A2CLossOptions()
              .entropy_bonus(config.get_float("algo.entropy_coef") > 0)
              .entropy_coef(config.get_float("algo.entropy_coef"))
              .critic_coef(config.get_float("algo.critic_coef"))
              .loss_critic_type(critic_type));
      normalize_advantage_ = config.get_bool("algo.normalize_advantage");
    }
    pg->make_value_estimator(losses::ValueEstimatorType::kGAE,
                             losses::ValueEstimatorOptions()
                                 .gamma(config.get_float("algo.gamma"))
                                 .lmbda(config.get_float("algo.lmbda")));
    loss = pg;
    pg_ = pg;
    optimizers.push_back(group(config, "all", pg->parameters(), config.get_float("optim.lr"), {}));
    epochs_ = config.get_int("algo.num_epochs");
    minibatch_ = config.get_int("algo.minibatch_size");
  }

  int64_t epochs_per_batch() const override { return epochs_; }
  int64_t minibatch_size() const override { return minibatch_; }

  void before_epoch(const TensorDict& batch) override {
    torch::NoGradGuard no_grad;
    pg_->value_estimator()->forward(batch);
    if (normalize_advantage_) {
      // A2CLoss has no normalize option: standardise the batch's advantages here.
      auto adv = batch.get("advantage");
      batch.set("advantage", (adv - adv.mean()) / adv.std().clamp_min(1e-6));
    }
  }

 private:
  std::shared_ptr<losses::PolicyGradientLoss> pg_;
  int64_t epochs_ = 1;
  int64_t minibatch_ = -1;
  bool normalize_advantage_ = false;
};

// ---- DQN -----------------------------------------------------------------------------------

class DQNRecipe : public OffPolicyRecipe {
 public:
  explicit DQNRecipe(const Config& config) : OffPolicyRecipe("dqn") {
    EnvInfo info = build_envs(config, *this);
    if (!info.num_actions) throw_unsuited(config, info, "a discrete (Categorical or OneHot)");
    auto cells = config.get_int_list("model.actor_cells");
    auto make_qnet = [config, info, cells]() {
      return modules::QValueActor(mlp(config, info.obs_dim, *info.num_actions, cells),
                                  modules::QValueActorOptions().qvalue(
                                      modules::QValueModuleOptions().spec(info.action_spec)));
    };
    const auto eps = modules::EGreedyModuleOptions()
                         .eps_init(config.get_float("algo.eps_init"))
                         .eps_end(config.get_float("algo.eps_end"))
                         .annealing_num_steps(config.get_int("algo.annealing_frames"));
    auto make_policy = [make_qnet, eps, info](modules::QValueActor qnet) {
      modules::EGreedyModule greedy(info.action_spec, eps);
      return std::make_pair(tdnn::TensorDictSequential(qnet, greedy), greedy);
    };
    auto qnet = make_qnet();
    auto [policy, greedy] = make_policy(qnet);
    greedy_ = greedy.ptr();
    actor = qnet.ptr();
    exploration_policy = policy;
    extra_modules.emplace_back("exploration", greedy.ptr());
    policy_factory = [make_qnet, make_policy] {
      return collectors::CollectorPolicy(make_policy(make_qnet()).first);
    };
    auto dqn = std::make_shared<losses::DQNLoss>(
        qnet, losses::DQNLossOptions()
                  .loss_function(config.get_string("algo.loss_critic_type"))
                  .double_dqn(config.get_bool("algo.double_dqn"))
                  .delay_value(true));
    set_gamma(*dqn, config);
    loss = dqn;
    optimizers.push_back(
        group(config, "all", loss->parameters(), config.get_float("optim.lr"), {}));
    finish_off_policy(config);
  }

  void after_batch(int64_t frames) override {
    greedy_->step(frames - annealed_);
    annealed_ = frames;
  }
  // The loaded epsilon already holds the annealing up to the checkpoint.
  void on_resume(int64_t frames) override { annealed_ = frames; }

 private:
  std::shared_ptr<modules::EGreedyModuleImpl> greedy_;
  int64_t annealed_ = 0;
};

// ---- DDPG and TD3 --------------------------------------------------------------------------

class DeterministicActorRecipe : public OffPolicyRecipe {
 public:
  explicit DeterministicActorRecipe(const Config& config)
      : OffPolicyRecipe(config.get_string("algo.name")) {
    EnvInfo info = build_envs(config, *this);
    if (!info.bounded) throw_unsuited(config, info, "a continuous (Bounded)");
    auto cells = config.get_int_list("model.actor_cells");
    auto make_actor = [config, info, cells]() {
      return tdnn::TensorDictModule(
          BoundedActor(mlp(config, info.obs_dim, info.action_dim, cells), info.bounded->low(),
                       info.bounded->high()),
          tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action"}));
    };
    const double range = (info.bounded->high() - info.bounded->low()).mean().item<double>() / 2;
    const auto noise = modules::AdditiveGaussianModuleOptions()
                           .sigma_init(config.get_float("algo.exploration_noise") * range)
                           .sigma_end(config.get_float("algo.exploration_noise") * range)
                           .annealing_num_steps(1)
                           .safe(true);
    auto make_policy = [info, noise](tdnn::TensorDictModule a) {
      return tdnn::TensorDictSequential(a,
                                        modules::AdditiveGaussianModule(info.action_spec, noise));
    };
    auto trainer_actor = make_actor();
    actor = trainer_actor.ptr();
    exploration_policy = make_policy(trainer_actor);
    policy_factory = [make_actor, make_policy] {
      return collectors::CollectorPolicy(make_policy(make_actor()));
    };
    auto critic_cells = config.get_int_list("model.critic_cells");
    auto make_critic = [&]() {
      return modules::ValueOperator(
          ConcatMLP(mlp(config, info.obs_dim + info.action_dim, 1, critic_cells)),
          modules::ValueOperatorOptions().in_keys({"observation", "action"}));
    };
    const auto critic_type = config.get_string("algo.loss_critic_type");
    const double actor_lr = lr_of(config, "optim.actor_lr");
    const double critic_lr = lr_of(config, "optim.critic_lr");
    if (algorithm() == "ddpg") {
      auto ddpg = std::make_shared<losses::DDPGLoss>(
          trainer_actor, make_critic(),
          losses::DDPGLossOptions().loss_function(critic_type).delay_actor(true).delay_value(true));
      set_gamma(*ddpg, config);
      loss = ddpg;
      optimizers.push_back(group(config, "actor", network_params(*loss, {"actor_network"}),
                                 actor_lr, {"loss_actor"}));
      optimizers.push_back(group(config, "critic", network_params(*loss, {"value_network"}),
                                 critic_lr, {"loss_value"}));
    } else {
      std::vector<modules::ValueOperator> critics{make_critic(), make_critic()};
      auto td3 =
          std::make_shared<losses::TD3Loss>(trainer_actor, critics,
                                            losses::TD3LossOptions()
                                                .action_spec(info.action_spec)
                                                .policy_noise(config.get_float("algo.policy_noise"))
                                                .noise_clip(config.get_float("algo.noise_clip"))
                                                .loss_function(critic_type));
      set_gamma(*td3, config);
      loss = td3;
      optimizers.push_back(group(config, "actor", network_params(*loss, {"actor_network"}),
                                 actor_lr, {"loss_actor"}, config.get_int("algo.policy_delay")));
      optimizers.push_back(group(config, "critic", network_params(*loss, {"qvalue_network"}),
                                 critic_lr, {"loss_qvalue"}));
    }
    finish_off_policy(config);
  }
};

// ---- SAC -----------------------------------------------------------------------------------

class SACRecipe : public OffPolicyRecipe {
 public:
  explicit SACRecipe(const Config& config) : OffPolicyRecipe("sac") {
    EnvInfo info = build_envs(config, *this);
    if (!info.bounded) throw_unsuited(config, info, "a continuous (Bounded)");
    auto actor_builder = [config, info]() { return make_stochastic_actor(config, info); };
    auto trainer_actor = actor_builder();
    actor = trainer_actor.ptr();
    exploration_policy = trainer_actor;
    policy_factory = [actor_builder] { return collectors::CollectorPolicy(actor_builder()); };
    auto critic_cells = config.get_int_list("model.critic_cells");
    std::vector<modules::ValueOperator> critics;
    for (int i = 0; i < 2; ++i) {
      critics.emplace_back(ConcatMLP(mlp(config, info.obs_dim + info.action_dim, 1, critic_cells)),
                           modules::ValueOperatorOptions().in_keys({"observation", "action"}));
    }
    auto options = losses::SACLossOptions()
                       .loss_function(config.get_string("algo.loss_critic_type"))
                       .alpha_init(config.get_float("algo.alpha_init"))
                       .fixed_alpha(config.get_bool("algo.fixed_alpha"))
                       .action_spec(info.action_spec);
    const auto target_entropy = config.get_string("algo.target_entropy");
    if (target_entropy != "auto") {
      try {
        options.target_entropy(std::stod(target_entropy));
      } catch (const std::exception&) {
        throw ConfigError("'algo.target_entropy' must be \"auto\" or a number, got '" +
                          target_entropy + "'");
      }
    }
    auto sac = std::make_shared<losses::SACLoss>(trainer_actor, critics, options);
    set_gamma(*sac, config);
    loss = sac;
    optimizers.push_back(group(config, "actor", network_params(*loss, {"actor_network"}),
                               lr_of(config, "optim.actor_lr"), {"loss_actor"}));
    optimizers.push_back(group(config, "critic", network_params(*loss, {"qvalue_network"}),
                               lr_of(config, "optim.critic_lr"), {"loss_qvalue"}));
    if (!config.get_bool("algo.fixed_alpha")) {
      std::vector<torch::Tensor> alpha;
      for (const auto& item : loss->named_parameters(/*recurse=*/false)) {
        if (item.key() == "log_alpha") alpha.push_back(item.value());
      }
      optimizers.push_back(
          group(config, "alpha", alpha, config.get_float("optim.alpha_lr"), {"loss_alpha"}));
    }
    finish_off_policy(config);
  }
};

}  // namespace

std::vector<std::string> recipe_names() { return {"ppo", "a2c", "dqn", "ddpg", "td3", "sac"}; }

std::unique_ptr<Recipe> make_recipe(const Config& config) {
  const auto name = config.get_string("algo.name");
  torch::manual_seed(static_cast<uint64_t>(config.get_int("seed")));
  if (name == "ppo" || name == "a2c") return std::make_unique<PolicyGradientRecipe>(config);
  if (name == "dqn") return std::make_unique<DQNRecipe>(config);
  if (name == "ddpg" || name == "td3") return std::make_unique<DeterministicActorRecipe>(config);
  if (name == "sac") return std::make_unique<SACRecipe>(config);
  std::ostringstream known;
  for (const auto& n : recipe_names()) known << " " << n;
  throw ConfigError("'algo.name' is '" + name + "'; the recipes are:" + known.str());
}

}  // namespace tdrl::apps
