// TD3Loss: twin delayed DDPG.

#include <tdrl/losses/td3.h>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/losses/functional/distance.h>
#include <tensordict/errors.h>

#include "detail/off_policy.h"

namespace tdrl::losses {

using tensordict::ValueError;
namespace tdnn = tensordict::nn;

TD3Loss::TD3Loss(Actor actor_network, QNetworks qvalue_networks, TD3LossOptions options)
    : ActorQValueLoss("TD3Loss", detail::state_action_default_keys(),
                      detail::off_policy_in_key_names(), std::move(actor_network),
                      std::move(qvalue_networks)),
      options_(std::move(options)) {
  set_out_keys({"loss_actor", "loss_qvalue", "pred_value", "state_action_value_actor",
                "next_state_value", "target_value"});
  functional::check_distance_loss_name("TD3Loss", "loss_function", options_.loss_function());
  TDRL_CHECK(options_.policy_noise() >= 0.0 && options_.noise_clip() >= 0.0, ValueError,
             "TD3Loss: policy_noise is ", std::to_string(options_.policy_noise()),
             " and noise_clip ", std::to_string(options_.noise_clip()), "; both must be >= 0");
  const auto spec = detail::action_spec_of(options_.action_spec(), actor_network_);
  TDRL_CHECK(spec, ValueError,
             "TD3Loss: no action spec; the target action is clamped to its bounds: pass "
             "TD3LossOptions().action_spec(<a Bounded spec>)");
  auto bounded = std::dynamic_pointer_cast<specs::Bounded>(spec);
  TDRL_CHECK(bounded, ValueError, "TD3Loss: the action spec is a ", spec->type_name(),
             "; TD3 needs a Bounded one (its low/high clamp the smoothed target action)");
  low_ = register_buffer("action_low", bounded->low().clone());
  high_ = register_buffer("action_high", bounded->high().clone());
  convert_to_functional("actor_network", actor_network_, options_.delay_actor());
  convert_qvalue_networks(qvalue_networks_, options_.delay_qvalue());
  make_value_estimator(ValueEstimatorType::kTD0);
}

void TD3Loss::pretty_print(std::ostream& stream) const {
  stream << "TD3Loss(num_qvalue_nets=" << num_qvalue_nets()
         << ", policy_noise=" << options_.policy_noise() << ", noise_clip=" << options_.noise_clip()
         << ", loss_function=" << options_.loss_function()
         << ", delay_actor=" << detail::bool_str(options_.delay_actor())
         << ", delay_qvalue=" << detail::bool_str(options_.delay_qvalue())
         << ", value_estimator=" << value_estimator_->to_string() << ")";
}

TensorDict TD3Loss::forward_impl(const TensorDict& batch) {
  const auto keys = detail::checked_q_keys(*this, batch, qvalue_networks_);
  detail::require_writes(name(), "the actor_network", *actor_network_, keys.action, "action");
  const auto& actor_in = actor_network_->in_keys();

  // Actor term: -Q_0(s, mu(s)).
  const auto loss_actor =
      detail::deterministic_actor_loss(name(), *actor_network_, *qvalue_networks_.front(),
                                       "Q-value network 0", batch, keys.action, keys.value);

  // Q term: every Q_i(s, a) against the shared target.
  const auto preds = detail::q_values(name(), qvalue_networks_, batch, keys.action, keys.value);
  const auto& pred0 = preds.front();
  const auto t = checked_transition(batch, pred0);

  torch::Tensor next_value;
  {
    torch::NoGradGuard no_grad;
    auto next = detail::next_inputs(name(), batch, "the actor_network", actor_in);
    with_target_if(options_.delay_actor(), "actor_network",
                   [&] { return actor_network_->forward(next.inputs); });
    // Target policy smoothing: clipped Gaussian noise, then back into the action bounds.
    const auto next_action = next.inputs.get(keys.action);
    const auto noise = (torch::randn_like(next_action) * options_.policy_noise())
                           .clamp(-options_.noise_clip(), options_.noise_clip());
    const auto low = low_.to(next_action.dtype());
    const auto high = high_.to(next_action.dtype());
    const auto smoothed = torch::max(torch::min(next_action + noise, high), low);
    const auto next_values = detail::run_q_networks(
        name(), qvalue_networks_, next.td, "next", keys.action, smoothed, keys.value,
        qvalue_runner(qvalue_networks_, options_.delay_qvalue()));
    next_value = std::get<0>(torch::stack(next_values).min(0));
  }
  const auto target = td_target(batch, t, pred0, next_value, "min_i Q'_i(s', a')");

  for (const auto& pred : preds)
    check_same_shape("Q-value loss", pred, "Q_i(s, a)", pred0, "Q_0(s, a)");
  const auto loss_qvalue = detail::sum_td_losses(name(), preds, target, options_.loss_function(),
                                                 batch.find(key("priority_weight")));
  const auto pred_all = torch::stack(preds).detach();
  const auto td_error = detail::max_td_error(preds, target);
  TensorDict out({{"loss_actor", loss_actor},
                  {"loss_qvalue", loss_qvalue},
                  {"pred_value", pred_all.mean()},
                  {"state_action_value_actor", -loss_actor.detach()},  // mean Q(s, mu(s))
                  {"next_state_value", next_value.mean()},
                  {"target_value", target.mean()}},
                 {});
  batch.set(key("priority"), td_error);
  return out;
}

}  // namespace tdrl::losses
