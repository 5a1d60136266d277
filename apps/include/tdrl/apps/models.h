#pragma once

/// The networks the built-in recipes build from the `model` section, for recipes of your own
/// (a plugin's algorithm) that want the same ones.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tdrl/apps/config.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/modules/actors.h>
#include <tdrl/specs/composite.h>
#include <tensordict/nn/module_ptr.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::modules {
class RecurrentModuleImpl;
}  // namespace tdrl::modules

namespace tdrl::apps {

/// What a network reads (network_input): the flat "observation", or the features of the
/// network's own pixel encoder.
struct NetworkInput {
  tensordict::NestedKey key;
  int64_t size = 0;
  /// With model.encoder convnet: a TensorDictModule of a modules::ConvNet (model.convnet, the
  /// channels of env.pixels_shape) reading "pixels" and writing `key`, to run before the
  /// network (with_encoder); null with model.encoder none.
  tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> encoder;
};

/// What the network of `role` reads: "observation" (env.obs_dim) with model.encoder none; with
/// convnet, a fresh encoder writing "pixels_embed" (role "") or "<role>_pixels_embed", whose
/// size is the ConvNet's output for env.pixels_shape. Each network gets its own encoder, as
/// SB3's off-policy algorithms do by default. The config check has made sure the env has what
/// the model reads.
NetworkInput network_input(const ModelSection& model, const EnvInfo& env,
                           const std::string& role = "");

/// `network` preceded by `input`'s encoder (`network` itself when there is none).
tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> with_encoder(
    const NetworkInput& input,
    tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> network);

/// The recurrent core of `model.core` ("lstm", "gru": an LSTMModule or GRUModule of
/// model.hidden_size and model.num_layers), in step mode, with sequence_states false (a loss
/// reads only a sequence's outputs), reading `input` (by default network_input(model, env,
/// role)'s key; the caller runs that input's encoder before it: make_stochastic_actor,
/// make_state_value); null for "mlp". `role` names its entries: "" (the actor's) writes "embed" and
/// keeps its state under the module's default hidden keys ("recurrent_state_h" and
/// "recurrent_state_c", or "recurrent_state"); "critic" writes "critic_embed" and keeps its state
/// under the same keys prefixed "critic_". The built-in ppo and a2c give actor and critic a core
/// each, as SB3's RecurrentPPO: with one shared core the critic's larger loss drowns the policy's
/// gradient in the core.
std::shared_ptr<modules::RecurrentModuleImpl> make_recurrent_core(
    const ModelSection& model, const EnvInfo& env, const std::string& role = "",
    const std::optional<NetworkInput>& input = std::nullopt);

/// The hidden-state entries of one unbatched step of `cores` together (their hidden_specs; null
/// cores are skipped), what Recipe::policy_state is for a policy running them; null when there
/// is none.
specs::CompositePtr hidden_state_specs(
    const std::vector<std::shared_ptr<modules::RecurrentModuleImpl>>& cores);

/// The stochastic actor of the built-in ppo, a2c and sac: for a discrete task (env.num_actions
/// set), categorical logits from an MLP; for a Bounded continuous one, a TanhNormal on the
/// action bounds whose loc and scale an MLP gives (NormalParamExtractor). The MLP has
/// model.actor_cells and model.layers (activation, layer_norm) and reads
/// network_input(model, env) ("observation" `[*batch, obs_dim]`, or its pixel encoder's
/// features, the encoder running first), or, with a recurrent `core` (make_recurrent_core),
/// runs after the core and reads its "embed". Writes "action" and "sample_log_prob" (and "logits",
/// or "loc" and "scale"; with a core, "embed" and the core's ("next", hidden) entries). The caller
/// checks the task first (an unbounded continuous action spec is a programming error here).
/// `input`, when given, is that network input, built by the caller to share its encoder (with
/// the critic, model.share_encoder); else one is made.
/// Example: `auto actor = make_stochastic_actor(context.model(), context.env);`
modules::ProbabilisticActor make_stochastic_actor(
    const ModelSection& model, const EnvInfo& env,
    std::shared_ptr<modules::RecurrentModuleImpl> core = nullptr,
    const std::optional<NetworkInput>& input = std::nullopt);

/// The state-value critic of the built-in ppo and a2c: an MLP of model.critic_cells writing
/// "state_value" `[*batch, 1]` from network_input(model, env, "critic"), or after a recurrent
/// `core` (the critic's, make_recurrent_core(model, env, "critic")) from its output. `input`,
/// when given, is that network input, built by the caller to share its encoder (with the
/// collectors' policy, which runs the critic's encoder and core to carry the core's state, or
/// with the actor, model.share_encoder); else one is made.
tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> make_state_value(
    const ModelSection& model, const EnvInfo& env,
    std::shared_ptr<modules::RecurrentModuleImpl> core = nullptr,
    const std::optional<NetworkInput>& input = std::nullopt);

}  // namespace tdrl::apps
