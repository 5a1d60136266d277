// A2CLoss: the advantage actor-critic loss.

#include <tdrl/losses/a2c.h>

#include <ostream>
#include <utility>

#include <torch/types.h>

#include <tdrl/losses/functional/distance.h>
#include <tensordict/errors.h>

#include "detail/policy_gradient_util.h"

namespace tdrl::losses {

using tensordict::ValueError;

using detail::optional_repr;

A2CLoss::A2CLoss(ActorPtr actor, CriticPtr critic, A2CLossOptions options)
    : PolicyGradientLoss("A2CLoss", std::move(actor), critic, {}, {"action"},
                         /*critic_target=*/false, options.separate_losses()),
      options_(std::move(options)) {
  set_out_keys(actor_critic_out_keys("loss_objective", "loss_critic", /*entropy=*/true,
                                     options_.entropy_bonus(), options_.clip_value().has_value()));
  TDRL_CHECK(critic, ValueError,
             "A2CLoss: the critic is null; pass a value network writing the state value (e.g. a "
             "tdrl::modules::ValueOperator)");
  check_positive("samples_mc_entropy", static_cast<double>(options_.samples_mc_entropy()));
  functional::check_distance_loss_name(name(), "loss_critic_type", options_.loss_critic_type());
  if (options_.clip_value()) check_positive("clip_value", *options_.clip_value());
}

TensorDict A2CLoss::forward_impl(const TensorDict& batch) {
  const auto old = old_value(batch, options_.clip_value());
  const TensorDict td = batch.clone(/*recurse=*/false);
  const auto adv = options_.normalize_advantage() ? normalize(advantage(td)) : advantage(td);
  const auto term = policy_gradient_term(td, adv);
  TensorDict out = TensorDict::empty({});
  out.set("loss_objective", term.loss);
  write_entropy(out, *term.dist, term.log_prob.squeeze(-1), options_.entropy_bonus(),
                options_.entropy_coef(), options_.samples_mc_entropy());
  write_critic_loss(out, td, "loss_critic", options_.critic_coef(), options_.loss_critic_type(),
                    old, options_.clip_value());
  return out;
}

void A2CLoss::pretty_print(std::ostream& stream) const {
  stream << "A2CLoss(entropy_bonus=" << (options_.entropy_bonus() ? "true" : "false")
         << ", samples_mc_entropy=" << options_.samples_mc_entropy()
         << ", entropy_coef=" << options_.entropy_coef()
         << ", critic_coef=" << options_.critic_coef()
         << ", loss_critic_type=" << options_.loss_critic_type()
         << ", normalize_advantage=" << (options_.normalize_advantage() ? "true" : "false")
         << ", separate_losses=" << (options_.separate_losses() ? "true" : "false")
         << ", clip_value=" << optional_repr(options_.clip_value()) << ")";
}

}  // namespace tdrl::losses
