// IQLLoss: implicit Q-learning (offline).

#include <tdrl/losses/iql.h>

#include <cmath>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/losses/functional/distance.h>
#include <tdrl/modules/actors.h>
#include <tensordict/errors.h>

#include "detail/off_policy.h"

namespace tdrl::losses {

using tensordict::ValueError;
namespace tdnn = tensordict::nn;

IQLLoss::IQLLoss(Actor actor_network, QNetworks qvalue_networks, NetworkPtr value_network,
                 IQLLossOptions options)
    : ActorQValueLoss(
          "IQLLoss",
          detail::off_policy_default_keys({{"state_action_value", NestedKey("state_action_value")},
                                           {"value", NestedKey("state_value")}}),
          detail::off_policy_in_key_names(), std::move(actor_network), std::move(qvalue_networks)),
      value_network_(std::move(value_network)),
      options_(std::move(options)) {
  set_out_keys({"loss_actor", "loss_qvalue", "loss_value", "entropy"});
  detail::check_network("IQLLoss", "the value_network", value_network_);
  for (size_t i = 0; i < qvalue_networks_.size(); ++i) {
    TDRL_CHECK(qvalue_networks_[i] != value_network_, ValueError, "IQLLoss: Q-value network ",
               std::to_string(i), " is the value_network; V(s) needs its own module");
  }
  functional::check_distance_loss_name("IQLLoss", "loss_function", options_.loss_function());
  TDRL_CHECK(options_.expectile() > 0.0 && options_.expectile() < 1.0, ValueError,
             "IQLLoss: expectile is ", std::to_string(options_.expectile()),
             "; it must be in (0, 1)");
  TDRL_CHECK(options_.temperature() >= 0.0, ValueError, "IQLLoss: temperature is ",
             std::to_string(options_.temperature()), "; it must be >= 0");
  convert_to_functional("actor_network", actor_network_, /*create_target=*/false);
  convert_qvalue_networks(qvalue_networks_, options_.delay_qvalue());
  convert_to_functional("value_network", value_network_, /*create_target=*/false);
  make_value_estimator(ValueEstimatorType::kTD0);
}

void IQLLoss::pretty_print(std::ostream& stream) const {
  stream << "IQLLoss(num_qvalue_nets=" << num_qvalue_nets()
         << ", loss_function=" << options_.loss_function()
         << ", temperature=" << options_.temperature() << ", expectile=" << options_.expectile()
         << ", delay_qvalue=" << detail::bool_str(options_.delay_qvalue())
         << ", value_estimator=" << value_estimator_->to_string() << ")";
}

TensorDict IQLLoss::forward_impl(const TensorDict& batch) {
  const auto keys = detail::checked_q_keys(*this, batch, qvalue_networks_);
  const NestedKey& v_key = key("value");
  detail::require_writes(name(), "the value_network", *value_network_, v_key, "value");
  const auto action = get(batch, "action");
  const auto t = transition(batch);

  // min_i Q'_i(s, a) at the batch's actions, without gradient.
  torch::Tensor min_q;
  {
    torch::NoGradGuard no_grad;
    const auto values =
        detail::run_q_networks(name(), qvalue_networks_, batch, "", keys.action, {}, keys.value,
                               qvalue_runner(qvalue_networks_, options_.delay_qvalue()));
    min_q = std::get<0>(torch::stack(values).min(0));
  }

  // Value term: expectile regression of V(s) on min_i Q'_i(s, a).
  auto value_td =
      detail::network_inputs(name(), "the value_network", batch, value_network_->in_keys());
  value_network_->forward(value_td);
  const auto value = value_td.get(v_key);
  check_same_shape("value loss", value, "V(s)", min_q, "min_i Q_i(s, a)");
  const auto diff = min_q - value;
  const auto weight = torch::where(diff < 0, 1.0 - options_.expectile(), options_.expectile());
  const auto loss_value = (weight * diff.pow(2)).mean();

  // Actor term: advantage-weighted log-likelihood of the batch's actions.
  auto actor_td =
      detail::network_inputs(name(), "the actor_network", batch, actor_network_->in_keys());
  const auto log_prob = actor_network_->get_dist(actor_td)->log_prob(action).unsqueeze(-1);
  check_same_shape("actor loss", log_prob, "log pi(a|s) (unsqueezed)", min_q, "min_i Q_i(s, a)");
  const auto advantage = min_q - value.detach();
  const auto exp_advantage = (advantage * options_.temperature()).exp().clamp_max(100.0);
  const auto loss_actor = -(exp_advantage * log_prob).mean();

  // Q term against r + gamma V(s').
  const auto preds = detail::q_values(name(), qvalue_networks_, batch, keys.action, keys.value);
  const auto& pred0 = preds.front();
  check_td_shapes(t, pred0);
  torch::Tensor next_value;
  {
    torch::NoGradGuard no_grad;
    auto next = detail::next_inputs(name(), batch, "the value_network", value_network_->in_keys());
    value_network_->forward(next.inputs);
    next_value = next.inputs.get(v_key);
  }
  const auto target = td_target(batch, t, pred0, next_value, "V(s')");
  const auto loss_qvalue = detail::sum_td_losses(name(), preds, target, options_.loss_function(),
                                                 batch.find(key("priority_weight")));

  TensorDict out({{"loss_actor", loss_actor},
                  {"loss_qvalue", loss_qvalue},
                  {"loss_value", loss_value},
                  {"entropy", -log_prob.detach().mean()}},
                 {});
  batch.set(key("priority"), detail::max_td_error(preds, target));
  return out;
}

}  // namespace tdrl::losses
