#pragma once

/// The networks the built-in recipes build from the `model` section, for recipes of your own
/// (a plugin's algorithm) that want the same ones.

#include <memory>
#include <string>
#include <vector>

#include <tdrl/apps/config.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/modules/actors.h>
#include <tdrl/specs/composite.h>

namespace tdrl::modules {
class RecurrentModuleImpl;
}  // namespace tdrl::modules

namespace tdrl::apps {

/// The recurrent core of `model.core` ("lstm", "gru": an LSTMModule or GRUModule of
/// model.hidden_size and model.num_layers), in step mode, with sequence_states false (a loss
/// reads only a sequence's outputs), reading "observation"; null for
/// "mlp". `role` names its entries: "" (the actor's) writes "embed" and keeps its state under
/// the module's default hidden keys ("recurrent_state_h" and "recurrent_state_c", or
/// "recurrent_state"); "critic" writes "critic_embed" and keeps its state under the same keys
/// prefixed "critic_". The built-in ppo and a2c give actor and critic a core each, as SB3's
/// RecurrentPPO: with one shared core the critic's larger loss drowns the policy's gradient in
/// the core.
std::shared_ptr<modules::RecurrentModuleImpl> make_recurrent_core(const ModelSection& model,
                                                                  const EnvInfo& env,
                                                                  const std::string& role = "");

/// The hidden-state entries of one unbatched step of `cores` together (their hidden_specs; null
/// cores are skipped), what Recipe::policy_state is for a policy running them; null when there
/// is none.
specs::CompositePtr hidden_state_specs(
    const std::vector<std::shared_ptr<modules::RecurrentModuleImpl>>& cores);

/// The stochastic actor of the built-in ppo, a2c and sac: for a discrete task (env.num_actions
/// set), categorical logits from an MLP; for a Bounded continuous one, a TanhNormal on the
/// action bounds whose loc and scale an MLP gives (NormalParamExtractor). The MLP has
/// model.actor_cells and model.layers (activation, layer_norm) and reads "observation"
/// ([*batch, obs_dim]), or, with a recurrent `core` (make_recurrent_core), runs after the core
/// and reads its "embed". Writes "action" and "sample_log_prob" (and "logits", or "loc" and
/// "scale"; with a core, "embed" and the core's ("next", hidden) entries). The caller checks
/// the task first (an unbounded continuous action spec is a programming error here).
/// Example: `auto actor = make_stochastic_actor(context.model(), context.env);`
modules::ProbabilisticActor make_stochastic_actor(
    const ModelSection& model, const EnvInfo& env,
    std::shared_ptr<modules::RecurrentModuleImpl> core = nullptr);

/// The state-value critic of the built-in ppo and a2c: an MLP of model.critic_cells writing
/// "state_value" `[*batch, 1]` from "observation", or after a recurrent `core` (the critic's,
/// make_recurrent_core(model, env, "critic")) from its output.
tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> make_state_value(
    const ModelSection& model, const EnvInfo& env,
    std::shared_ptr<modules::RecurrentModuleImpl> core = nullptr);

}  // namespace tdrl::apps
