#pragma once

/// The networks the built-in recipes build from the `model` section, for recipes of your own
/// (a plugin's algorithm) that want the same ones.

#include <tdrl/apps/config.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/modules/actors.h>

namespace tdrl::apps {

/// The stochastic actor of the built-in ppo, a2c and sac: for a discrete task (env.num_actions
/// set), categorical logits from an MLP; for a Bounded continuous one, a TanhNormal on the
/// action bounds whose loc and scale an MLP gives (NormalParamExtractor). The MLP reads
/// "observation" ([*batch, obs_dim]) and has model.actor_cells and model.layers (activation,
/// layer_norm). Writes "action" and "sample_log_prob" (and "logits", or "loc" and
/// "scale"). The caller checks the task first (an unbounded continuous action spec is a
/// programming error here).
/// Example: `auto actor = make_stochastic_actor(context.model(), context.env);`
modules::ProbabilisticActor make_stochastic_actor(const ModelSection& model, const EnvInfo& env);

}  // namespace tdrl::apps
