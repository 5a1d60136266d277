// DDPGLoss: the deterministic actor-critic loss.

#include <tdrl/losses/ddpg.h>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/losses/functional/distance.h>
#include <tdrl/modules/actors.h>
#include <tensordict/errors.h>

#include "detail/off_policy.h"

namespace tdrl::losses {

using tensordict::ValueError;
namespace tdnn = tensordict::nn;

DDPGLoss::DDPGLoss(NetworkPtr actor_network, NetworkPtr value_network, DDPGLossOptions options)
    : LossModule("DDPGLoss", detail::state_action_default_keys(),
                 detail::off_policy_in_key_names()),
      actor_network_(std::move(actor_network)),
      value_network_(std::move(value_network)),
      options_(std::move(options)) {
  set_out_keys({"loss_actor", "loss_value", "pred_value", "target_value", "pred_value_max",
                "target_value_max"});
  detail::check_network("DDPGLoss", "the actor_network", actor_network_);
  detail::check_network("DDPGLoss", "the value_network", value_network_);
  TDRL_CHECK(actor_network_ != value_network_, ValueError,
             "DDPGLoss: the actor_network and the value_network are the same module");
  functional::check_distance_loss_name("DDPGLoss", "loss_function", options_.loss_function());
  convert_to_functional("actor_network", actor_network_, options_.delay_actor());
  convert_to_functional("value_network", value_network_, options_.delay_value());
  make_value_estimator(ValueEstimatorType::kTD0);
}

void DDPGLoss::pretty_print(std::ostream& stream) const {
  stream << "DDPGLoss(loss_function=" << options_.loss_function()
         << ", delay_actor=" << detail::bool_str(options_.delay_actor())
         << ", delay_value=" << detail::bool_str(options_.delay_value())
         << ", value_estimator=" << value_estimator_->to_string() << ")";
}

TensorDict DDPGLoss::forward_impl(const TensorDict& batch) {
  detail::check_batched(name(), batch);
  const NestedKey& action_key = key("action");
  const NestedKey& value_key = key("state_action_value");
  detail::require_writes(name(), "the actor_network", *actor_network_, action_key, "action");
  detail::require_reads(name(), "the value_network", *value_network_, action_key, "action");
  detail::require_writes(name(), "the value_network", *value_network_, value_key,
                         "state_action_value");
  const auto& actor_in = actor_network_->in_keys();
  const auto& critic_in = value_network_->in_keys();

  const auto loss_actor = detail::deterministic_actor_loss(
      name(), *actor_network_, *value_network_, "the value_network", batch, action_key, value_key);

  // Value term: Q(s, a) against the TD target.
  auto value_td = detail::network_inputs(name(), "the value_network", batch, critic_in);
  value_network_->forward(value_td);
  const auto pred = value_td.get(value_key);
  const auto t = checked_transition(batch, pred);

  torch::Tensor next_value;
  {
    torch::NoGradGuard no_grad;
    auto next = detail::next_inputs(name(), batch, "the actor_network", actor_in);
    with_target_if(options_.delay_actor(), "actor_network",
                   [&] { return actor_network_->forward(next.inputs); });
    auto next_critic_td = detail::network_inputs(name(), "the value_network on the next state",
                                                 next.td, critic_in, {action_key}, "next");
    next_critic_td.set(action_key, next.inputs.get(action_key));
    with_target_if(options_.delay_value(), "value_network",
                   [&] { value_network_->forward(next_critic_td); });
    next_value = next_critic_td.get(value_key);
  }
  const auto target = td_target(batch, t, pred, next_value, "Q(s', a')");
  const auto loss_value = detail::reduce_td_loss(
      name(), functional::distance_loss(pred, target, options_.loss_function()),
      batch.find(key("priority_weight")));

  const auto pred_detached = pred.detach();
  TensorDict out({{"loss_actor", loss_actor},
                  {"loss_value", loss_value},
                  {"pred_value", pred_detached.mean()},
                  {"target_value", target.mean()},
                  {"pred_value_max", pred_detached.max()},
                  {"target_value_max", target.max()}},
                 {});
  batch.set(key("priority"), (pred_detached - target).abs().squeeze(-1));
  return out;
}

}  // namespace tdrl::losses
