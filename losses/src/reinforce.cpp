// ReinforceLoss: the REINFORCE policy-gradient loss, with an optional critic.

#include <tdrl/losses/reinforce.h>

#include <ostream>
#include <utility>

#include <torch/types.h>

#include <tdrl/losses/functional/distance.h>

#include "detail/policy_gradient_util.h"

namespace tdrl::losses {

using detail::optional_repr;

ReinforceLoss::ReinforceLoss(ActorPtr actor, CriticPtr critic, ReinforceLossOptions options)
    : PolicyGradientLoss("ReinforceLoss", std::move(actor), std::move(critic), {}, {"action"},
                         options.delay_value(), options.separate_losses()),
      options_(std::move(options)) {
  if (critic_network()) {
    set_out_keys(actor_critic_out_keys("loss_actor", "loss_value", /*entropy=*/false,
                                       /*entropy_bonus=*/false, options_.clip_value().has_value()));
  } else {
    set_out_keys({"loss_actor"});
  }
  functional::check_distance_loss_name(name(), "loss_critic_type", options_.loss_critic_type());
  if (options_.clip_value()) check_positive("clip_value", *options_.clip_value());
}

TensorDict ReinforceLoss::forward_impl(const TensorDict& batch) {
  const auto old = old_value(batch, options_.clip_value());
  const TensorDict td = batch.clone(/*recurse=*/false);
  TensorDict out = TensorDict::empty({});
  out.set("loss_actor", policy_gradient_term(td, advantage(td)).loss);
  if (critic_network()) {
    write_critic_loss(out, td, "loss_value", /*coef=*/1.0, options_.loss_critic_type(), old,
                      options_.clip_value());
  }
  return out;
}

void ReinforceLoss::pretty_print(std::ostream& stream) const {
  stream << "ReinforceLoss(delay_value=" << (options_.delay_value() ? "true" : "false")
         << ", loss_critic_type=" << options_.loss_critic_type()
         << ", separate_losses=" << (options_.separate_losses() ? "true" : "false")
         << ", clip_value=" << optional_repr(options_.clip_value())
         << ", critic=" << (critic_network() ? "true" : "false") << ")";
}

}  // namespace tdrl::losses
