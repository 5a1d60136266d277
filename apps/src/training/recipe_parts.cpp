#include "training/recipe_parts.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include <torch/nn/init.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <tdrl/modules/optimizers.h>
#include <tdrl/replay/prioritized_sampler.h>
#include <tdrl/replay/samplers.h>
#include <tdrl/replay/storages.h>
#include <tensordict/errors.h>
#include <tensordict/name_table.h>
#include <tensordict/nn/distribution_class.h>
#include <tensordict/nn/normal_param_extractor.h>
#include <tensordict/nn/tensordict_sequential.h>

namespace tdrl::apps::detail {

namespace tdnn = tensordict::nn;

namespace {

// The weight initialisations (model.init): the one table that both names and applies them.
// Orthogonal: gain sqrt(2) for the hidden layers, `last_gain` for the output layer, zero biases.
const tensordict::NameTable<void (*)(modules::MLP&, double last_gain)>& init_table() {
  static const tensordict::NameTable<void (*)(modules::MLP&, double)> table(
      "initialisation",
      {
          {"default", [](modules::MLP&, double) {}},
          {"orthogonal",
           [](modules::MLP& net, double last_gain) {
             torch::NoGradGuard no_grad;
             std::vector<torch::nn::Linear> layers;
             for (const auto& m : net->modules(/*include_self=*/false))
               if (auto linear = std::dynamic_pointer_cast<torch::nn::LinearImpl>(m))
                 layers.emplace_back(linear);
             for (size_t i = 0; i < layers.size(); ++i) {
               torch::nn::init::orthogonal_(layers[i]->weight,
                                            i + 1 < layers.size() ? std::sqrt(2.0) : last_gain);
               if (layers[i]->bias.defined()) layers[i]->bias.zero_();
             }
           }},
      });
  return table;
}

}  // namespace

const std::vector<std::string>& init_names() { return init_table().names(); }

modules::MLP mlp(const ModelSection& model, int64_t in, int64_t out,
                 const std::vector<int64_t>& cells, double last_gain) {
  const auto init = init_table().at(model.init, "model.init");
  modules::MLPOptions options = model.layers;  // the config's activation and norm
  modules::MLP net(options.in_features(in).out_features(out).num_cells(cells));
  init(net, last_gain);
  return net;
}

modules::ValueOperator state_action_critic(const RecipeContext& context) {
  const EnvInfo& env = context.env;
  return modules::ValueOperator(
      modules::ConcatMLP(
          mlp(context.model(), env.obs_dim + env.action_dim, 1, context.model().critic_cells)),
      modules::ValueOperatorOptions().in_keys({"observation", "action"}));
}

namespace {

// The learning-rate schedules (optim.lr_schedule): the one table that both names them and
// gives each one's factor on the base rate after `frames` of `total`.
const tensordict::NameTable<double (*)(double frames, double total)>& schedule_table() {
  static const tensordict::NameTable<double (*)(double, double)> table(
      "schedule", {
                      {"constant", [](double, double) { return 1.0; }},
                      {"linear", [](double frames,
                                    double total) { return std::max(0.0, 1.0 - frames / total); }},
                  });
  return table;
}

}  // namespace

const std::vector<std::string>& lr_schedule_names() { return schedule_table().names(); }

double lr_schedule_factor(const std::string& schedule, int64_t frames, int64_t total_frames) {
  return schedule_table().at(schedule, "optim.lr_schedule")(static_cast<double>(frames),
                                                            static_cast<double>(total_frames));
}

double lr_or_default(const OptimSection& optim, double lr) {
  return lr > 0 ? lr : optim.optimizer.lr();
}

OptimizerGroup group(const OptimSection& optim, std::string name, std::vector<torch::Tensor> params,
                     double lr, std::vector<std::string> terms, int64_t period) {
  OptimizerGroup g;
  g.name = std::move(name);
  std::unordered_set<const void*> seen;
  std::vector<torch::Tensor> unique;
  unique.reserve(params.size());
  for (auto& p : params)
    if (seen.insert(p.unsafeGetTensorImpl()).second) unique.push_back(std::move(p));
  g.optimizer = modules::make_optimizer(optim.optimizer, std::move(unique), lr);
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

std::shared_ptr<replay::TensorDictReplayBuffer> make_replay(
    const ReplaySection& replay, torch::Device device, std::shared_ptr<replay::Sampler> sampler) {
  auto storage = std::make_shared<replay::LazyTensorStorage>(
      replay.capacity, replay::StorageOptions().device(device));
  const auto options = replay::ReplayBufferOptions().batch_size(replay.batch_size);
  if (sampler)
    return std::make_shared<replay::TensorDictReplayBuffer>(storage, std::move(sampler), nullptr,
                                                            options);
  if (replay.prioritized)
    return std::make_shared<replay::TensorDictPrioritizedReplayBuffer>(storage, replay.priority,
                                                                       options);
  return std::make_shared<replay::TensorDictReplayBuffer>(
      storage, std::make_shared<replay::RandomSampler>(), nullptr, options);
}

std::vector<std::string> action_space_problems(const std::string& algo, const EnvInfo& env,
                                               bool discrete, bool continuous) {
  const bool ok = (discrete && env.num_actions) || (continuous && env.bounded);
  if (ok) return {};
  const std::string need = discrete && continuous ? "a discrete (Categorical or OneHot) or "
                                                    "continuous (Bounded)"
                           : discrete             ? "a discrete (Categorical or OneHot)"
                                                  : "a continuous (Bounded)";
  return {"'algo.name' is " + algo + ", which needs " + need + " action space, but 'env.name' " +
          env.name + " has the action spec " + env.action_spec->to_string() +
          "; use ppo or a2c (either), dqn (discrete) or ddpg/td3/sac (continuous)"};
}

}  // namespace tdrl::apps::detail
