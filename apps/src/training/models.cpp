// The networks of the built-in recipes: their inputs (observation or pixel encoder), recurrent
// cores, the stochastic actor and the state-value critic.

#include <tdrl/apps/models.h>

#include <tdrl/modules/convnet.h>
#include <tdrl/modules/recurrent.h>
#include <tensordict/nn.h>

#include "training/recipe_parts.h"

namespace tdrl::apps {

namespace tdnn = tensordict::nn;

namespace {

// What the heads read: the network's input, or the recurrent core's output.
NetworkInput head_input(const ModelSection& model, const EnvInfo& env,
                        const std::shared_ptr<modules::RecurrentModuleImpl>& core,
                        const std::string& role, const std::optional<NetworkInput>& given = {}) {
  auto in = given ? *given : network_input(model, env, role);
  if (core) {
    in.key = core->options().out_key();
    in.size = model.recurrent.hidden_size();
  }
  return in;
}

// `head` after the core, when there is one.
tdnn::ModulePtr<tdnn::TensorDictModuleBase> after_core(
    const std::shared_ptr<modules::RecurrentModuleImpl>& core,
    tdnn::ModulePtr<tdnn::TensorDictModuleBase> head) {
  if (!core) return head;
  return tdnn::TensorDictSequential(tdnn::TensorDictSequentialImpl::Modules{core, std::move(head)});
}

// The options of a network's pixel encoder.
modules::ConvNetOptions encoder_options(const ModelSection& model, const EnvInfo& env) {
  TORCH_INTERNAL_ASSERT(env.pixels_shape.size() == 3,
                        "the config check admits model.encoder convnet only with [C, H, W] pixels");
  auto options = model.convnet.options;
  options.in_channels(env.pixels_shape[0]).squash_last_layer(true);
  return options;
}

// network_input's key and size, without its encoder: a recurrent core needs only those, and
// building a ConvNet there would draw from the init RNG for a module nobody runs.
NetworkInput input_of(const ModelSection& model, const EnvInfo& env, const std::string& role) {
  if (model.encoder == "none") return {tensordict::NestedKey("observation"), env.obs_dim, nullptr};
  const int64_t size = modules::ConvNetImpl::output_shape(
      encoder_options(model, env), env.pixels_shape[1], env.pixels_shape[2])[0];
  return {tensordict::NestedKey(role.empty() ? "pixels_embed" : role + "_pixels_embed"), size,
          nullptr};
}

}  // namespace

NetworkInput network_input(const ModelSection& model, const EnvInfo& env, const std::string& role) {
  auto in = input_of(model, env, role);
  if (model.encoder == "none") return in;
  modules::ConvNet net(encoder_options(model, env));
  in.encoder = tdnn::TensorDictModule(
      net, tdnn::TensorDictModuleOptions().in_keys({"pixels"}).out_keys({in.key}));
  return in;
}

tdnn::ModulePtr<tdnn::TensorDictModuleBase> with_encoder(
    const NetworkInput& input, tdnn::ModulePtr<tdnn::TensorDictModuleBase> network) {
  if (!input.encoder) return network;
  return tdnn::TensorDictSequential(
      tdnn::TensorDictSequentialImpl::Modules{input.encoder, std::move(network)});
}

std::shared_ptr<modules::RecurrentModuleImpl> make_recurrent_core(
    const ModelSection& model, const EnvInfo& env, const std::string& role,
    const std::optional<NetworkInput>& input) {
  if (model.core == "mlp") return nullptr;
  // The losses read only the outputs of a sequence: LibTorch's fused call (the passes that need
  // every step's state ask for it themselves).
  auto options = model.recurrent;
  const auto in = input ? *input : input_of(model, env, role);
  options.input_size(in.size).in_key(in.key).out_key("embed").sequence_states(false);
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
    std::shared_ptr<modules::RecurrentModuleImpl> core, const std::optional<NetworkInput>& input) {
  const NetworkInput in = head_input(model, env, core, "", input);
  if (env.num_actions) {
    tdnn::TensorDictModule logits(
        detail::mlp(model, in.size, *env.num_actions, model.actor_cells, /*last_gain=*/0.01),
        tdnn::TensorDictModuleOptions().in_keys({in.key}).out_keys({"logits"}));
    return modules::ProbabilisticActor(
        with_encoder(in, after_core(core, logits)), env.action_spec,
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
      with_encoder(in, after_core(core, net)), env.action_spec,
      modules::ProbabilisticActorOptions()
          .distribution_class(tdnn::DistributionClass::tanh_normal(
              tdnn::TanhNormalOptions().low(env.bounded->low()).high(env.bounded->high())))
          .return_log_prob(true));
}

tdnn::ModulePtr<tdnn::TensorDictModuleBase> make_state_value(
    const ModelSection& model, const EnvInfo& env,
    std::shared_ptr<modules::RecurrentModuleImpl> core, const std::optional<NetworkInput>& input) {
  const NetworkInput in = head_input(model, env, core, "critic", input);
  modules::ValueOperator value(detail::mlp(model, in.size, 1, model.critic_cells),
                               modules::ValueOperatorOptions().in_keys({in.key}));
  return with_encoder(in, after_core(core, value));
}

}  // namespace tdrl::apps
