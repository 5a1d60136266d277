// make_stochastic_actor: the stochastic actor of the built-in recipes.

#include <tdrl/apps/models.h>

#include <tdrl/modules/recurrent.h>
#include <tensordict/nn.h>

#include "training/recipe_parts.h"

namespace tdrl::apps {

namespace tdnn = tensordict::nn;

namespace {

// What the heads read: the observation, or the recurrent core's output.
struct HeadInput {
  tensordict::NestedKey key;
  int64_t size;
};
HeadInput head_input(const ModelSection& model, const EnvInfo& env,
                     const std::shared_ptr<modules::RecurrentModuleImpl>& core) {
  if (core) return {core->options().out_key(), model.recurrent.hidden_size()};
  return {tensordict::NestedKey("observation"), env.obs_dim};
}

// `head` after the core, when there is one.
tdnn::ModulePtr<tdnn::TensorDictModuleBase> after_core(
    const std::shared_ptr<modules::RecurrentModuleImpl>& core,
    tdnn::ModulePtr<tdnn::TensorDictModuleBase> head) {
  if (!core) return head;
  return tdnn::TensorDictSequential(tdnn::TensorDictSequentialImpl::Modules{core, std::move(head)});
}

}  // namespace

std::shared_ptr<modules::RecurrentModuleImpl> make_recurrent_core(const ModelSection& model,
                                                                  const EnvInfo& env,
                                                                  const std::string& role) {
  if (model.core == "mlp") return nullptr;
  // The losses read only the outputs of a sequence: LibTorch's fused call (the passes that need
  // every step's state ask for it themselves).
  auto options = model.recurrent;
  options.input_size(env.obs_dim).in_key("observation").out_key("embed").sequence_states(false);
  if (!role.empty()) {
    // The default keys of this kind of core, prefixed with the role.
    const auto defaults = modules::make_recurrent_module(model.core, options)->hidden_keys();
    std::vector<tensordict::NestedKey> keys;
    for (const auto& k : defaults) keys.emplace_back(role + "_" + k.back());
    options.out_key(role + "_embed").hidden_keys(keys);
  }
  return modules::make_recurrent_module(model.core, options);
}

specs::CompositePtr hidden_state_specs(
    const std::vector<std::shared_ptr<modules::RecurrentModuleImpl>>& cores) {
  specs::CompositePtr out;
  for (const auto& core : cores) {
    if (!core) continue;
    if (!out) {
      out = core->hidden_specs();
      continue;
    }
    for (const auto& [key, spec] : core->hidden_specs()->items()) out->set(key, spec);
  }
  return out;
}

modules::ProbabilisticActor make_stochastic_actor(
    const ModelSection& model, const EnvInfo& env,
    std::shared_ptr<modules::RecurrentModuleImpl> core) {
  const HeadInput in = head_input(model, env, core);
  if (env.num_actions) {
    tdnn::TensorDictModule logits(
        detail::mlp(model, in.size, *env.num_actions, model.actor_cells, /*last_gain=*/0.01),
        tdnn::TensorDictModuleOptions().in_keys({in.key}).out_keys({"logits"}));
    return modules::ProbabilisticActor(
        after_core(core, logits), env.action_spec,
        modules::ProbabilisticActorOptions()
            .in_keys({"logits"})
            .distribution_class(tdnn::DistributionClass::categorical())
            .return_log_prob(true));
  }
  TORCH_INTERNAL_ASSERT(env.bounded,
                        "the algorithm's check admits only discrete or Bounded actions");
  tdnn::TensorDictSequential net(
      tdnn::TensorDictModule(
          detail::mlp(model, in.size, 2 * env.action_dim, model.actor_cells,
                      /*last_gain=*/0.01),
          tdnn::TensorDictModuleOptions().in_keys({in.key}).out_keys({"params"})),
      tdnn::TensorDictModule(
          tdnn::NormalParamExtractor(),
          tdnn::TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"})));
  return modules::ProbabilisticActor(
      after_core(core, net), env.action_spec,
      modules::ProbabilisticActorOptions()
          .distribution_class(tdnn::DistributionClass::tanh_normal(
              tdnn::TanhNormalOptions().low(env.bounded->low()).high(env.bounded->high())))
          .return_log_prob(true));
}

tdnn::ModulePtr<tdnn::TensorDictModuleBase> make_state_value(
    const ModelSection& model, const EnvInfo& env,
    std::shared_ptr<modules::RecurrentModuleImpl> core) {
  const HeadInput in = head_input(model, env, core);
  modules::ValueOperator value(detail::mlp(model, in.size, 1, model.critic_cells),
                               modules::ValueOperatorOptions().in_keys({in.key}));
  return after_core(core, value);
}

}  // namespace tdrl::apps
