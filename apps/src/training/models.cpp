// make_stochastic_actor: the stochastic actor of the built-in recipes.

#include <tdrl/apps/models.h>

#include <tensordict/nn.h>

#include "training/recipe_parts.h"

namespace tdrl::apps {

namespace tdnn = tensordict::nn;

modules::ProbabilisticActor make_stochastic_actor(const ModelSection& model, const EnvInfo& env) {
  if (env.num_actions) {
    tdnn::TensorDictModule logits(
        detail::mlp(model, env.obs_dim, *env.num_actions, model.actor_cells, /*last_gain=*/0.01),
        tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"logits"}));
    return modules::ProbabilisticActor(
        logits, env.action_spec,
        modules::ProbabilisticActorOptions()
            .in_keys({"logits"})
            .distribution_class(tdnn::DistributionClass::categorical())
            .return_log_prob(true));
  }
  TORCH_INTERNAL_ASSERT(env.bounded,
                        "the algorithm's check admits only discrete or Bounded actions");
  tdnn::TensorDictSequential net(
      tdnn::TensorDictModule(
          detail::mlp(model, env.obs_dim, 2 * env.action_dim, model.actor_cells,
                      /*last_gain=*/0.01),
          tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"params"})),
      tdnn::TensorDictModule(
          tdnn::NormalParamExtractor(),
          tdnn::TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"})));
  return modules::ProbabilisticActor(
      net, env.action_spec,
      modules::ProbabilisticActorOptions()
          .distribution_class(tdnn::DistributionClass::tanh_normal(
              tdnn::TanhNormalOptions().low(env.bounded->low()).high(env.bounded->high())))
          .return_log_prob(true));
}

}  // namespace tdrl::apps
