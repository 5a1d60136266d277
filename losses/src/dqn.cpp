#include <tdrl/losses/dqn.h>

#include <torch/torch.h>

#include <tdrl/losses/functional/distance.h>
#include <tdrl/modules/q_value.h>
#include <tensordict/errors.h>

#include "detail/off_policy.h"

namespace tdrl::losses {

using tensordict::ValueError;
namespace tdnn = tensordict::nn;

DQNLoss::DQNLoss(std::shared_ptr<tdnn::TensorDictModuleBase> value_network, DQNLossOptions options)
    : LossModule("DQNLoss",
                 {{"action", NestedKey("action")},
                  {"action_value", NestedKey("action_value")},
                  {"value", NestedKey("chosen_action_value")},
                  {"reward", NestedKey{"next", "reward"}},
                  {"done", NestedKey{"next", "done"}},
                  {"terminated", NestedKey{"next", "terminated"}},
                  {"priority", NestedKey("td_error")},
                  {"priority_weight", NestedKey("_weight")}},
                 {"action", "reward", "done", "terminated"}),
      value_network_(std::move(value_network)),
      options_(std::move(options)) {
  detail::check_network("DQNLoss", "the value_network", value_network_);
  functional::check_distance_loss_name("DQNLoss", "loss_function", options_.loss_function());
  if (options_.action_space()) {
    detail::parse_action_space("DQNLoss", *options_.action_space());
    action_space_ = *options_.action_space();
  } else if (auto q = std::dynamic_pointer_cast<modules::QValueActorImpl>(value_network_)) {
    // Only a space the actor was given (or read from its spec); its fallback is a guess.
    const auto& q_options = q->qvalue_module()->options();
    if (q_options.action_space() || q_options.spec()) {
      action_space_ = q->qvalue_module()->action_space();
    }
  }
  convert_to_functional("value_network", value_network_, options_.delay_value());
  make_value_estimator(ValueEstimatorType::kTD0);
}

void DQNLoss::make_value_estimator(ValueEstimatorType type, ValueEstimatorOptions options) {
  value_estimator_ = detail::off_policy_estimator(name(), type, options);
}

void DQNLoss::pretty_print(std::ostream& stream) const {
  stream << "DQNLoss(loss_function=" << options_.loss_function()
         << ", delay_value=" << (options_.delay_value() ? "true" : "false")
         << ", double_dqn=" << (options_.double_dqn() ? "true" : "false")
         << ", action_space=" << (action_space_.empty() ? "from batch" : action_space_)
         << ", value_estimator=" << value_estimator_->to_string() << ")";
}

namespace {

torch::Tensor action_values(const std::string& where, const TensorDict& td, const NestedKey& key,
                            const std::vector<NestedKey>& out_keys) {
  auto values = td.find(key);
  if (!values) {
    throw ValueError(where + ": the value_network wrote no " + key.repr() +
                     " (the 'action_value' key); its out keys are " + detail::keys_str(out_keys) +
                     "; make it write the action values there or rename the key with set_keys");
  }
  return *values;
}

}  // namespace

torch::Tensor DQNLoss::next_value(const TensorDict& batch) {
  torch::NoGradGuard no_grad;
  const auto next = detail::next_tensordict(name(), batch);
  const auto& in_keys = value_network_->in_keys();
  const auto& out_keys = value_network_->out_keys();
  const bool writes_greedy =
      detail::has_key(out_keys, key("value")) && detail::has_key(out_keys, key("action"));
  auto run = [&](bool use_target) {
    auto td = detail::network_inputs(name(), "the value_network on the next state", next, in_keys,
                                     {}, "next");
    if (use_target) {
      with_target("value_network", [&] { value_network_->forward(td); });
    } else {
      value_network_->forward(td);
    }
    return td;
  };
  const auto target_td = run(options_.delay_value());
  const auto target_values = action_values(name(), target_td, key("action_value"), out_keys);
  if (!options_.double_dqn()) {
    if (writes_greedy) return target_td.get(key("value"));
    return std::get<0>(target_values.max(-1, /*keepdim=*/true));
  }
  // Double DQN: the online network chooses, the target network values the choice.
  const auto online_td = options_.delay_value() ? run(false) : target_td;
  if (writes_greedy) {
    return detail::chosen_value(name(), target_values, online_td.get(key("action")),
                                batch.batch_size(), std::nullopt);
  }
  const auto online_values = action_values(name(), online_td, key("action_value"), out_keys);
  return target_values.gather(-1, online_values.argmax(-1, /*keepdim=*/true));
}

TensorDict DQNLoss::forward_impl(const TensorDict& batch) {
  detail::check_batched(name(), batch);
  auto td = detail::network_inputs(name(), "the value_network", batch, value_network_->in_keys());
  value_network_->forward(td);
  const auto values = action_values(name(), td, key("action_value"), value_network_->out_keys());
  std::optional<detail::ActionSpace> space;
  if (!action_space_.empty()) space = detail::parse_action_space(name(), action_space_);
  const auto pred =
      detail::chosen_value(name(), values, get(batch, "action"), batch.batch_size(), space);

  const auto reward = get(batch, "reward");
  const auto done = get(batch, "done");
  const auto terminated = get(batch, "terminated");
  check_same_shape("TD target", reward, "reward", pred, "Q(s, a)");
  check_same_shape("TD target", done, "done", pred, "Q(s, a)");
  check_same_shape("TD target", terminated, "terminated", pred, "Q(s, a)");
  const auto next = next_value(batch);
  check_same_shape("TD target", next, "the next state's value", pred, "Q(s, a)");
  const auto target = detail::td_target(*value_estimator_, pred, next, reward, done, terminated,
                                        batch.batch_dims());

  const auto loss = detail::reduce_td_loss(
      name(), functional::distance_loss(pred, target, options_.loss_function()),
      batch.find(key("priority_weight")));
  const auto td_error = (pred.detach() - target).abs().squeeze(-1);
  TensorDict out(
      {{"loss", loss}, {"pred_value", pred.detach().mean()}, {"target_value", target.mean()}}, {});
  batch.set(key("priority"), td_error);
  return out;
}

}  // namespace tdrl::losses
