#include <tdrl/losses/dqn.h>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/losses/functional/distance.h>
#include <tdrl/modules/q_value.h>
#include <tdrl/modules/recurrent.h>
#include <tensordict/errors.h>

#include "detail/off_policy.h"

namespace tdrl::losses {

using tensordict::ValueError;
namespace tdnn = tensordict::nn;

DQNLoss::DQNLoss(NetworkPtr value_network, DQNLossOptions options)
    : LossModule("DQNLoss",
                 detail::off_policy_default_keys({{"action_value", NestedKey("action_value")},
                                                  {"value", NestedKey("chosen_action_value")},
                                                  {"burn_in", NestedKey("burn_in")}}),
                 detail::off_policy_in_key_names()),
      value_network_(std::move(value_network)),
      options_(std::move(options)) {
  set_out_keys({"loss_value", "pred_value", "target_value"});
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
  TDRL_CHECK(values, ValueError, where, ": the value_network wrote no ", key.to_string(),
             " (the 'action_value' key); its out keys are ", detail::keys_str(out_keys),
             "; make it write the action values there or rename the key with set_keys");
  return *values;
}

}  // namespace

TensorDict DQNLoss::warm_state(const TensorDict& prefix, bool use_target, int64_t steps) {
  torch::NoGradGuard no_grad;
  auto inputs =
      detail::network_inputs(name(), "the value_network", prefix, value_network_->in_keys());
  {
    modules::RecurrentModeGuard sequence(recurrent_cores(), /*recurrent_mode=*/true,
                                         /*sequence_states=*/true);
    if (use_target) {
      with_target("value_network", [&] { value_network_->forward(inputs); });
    } else {
      value_network_->forward(inputs);
    }
  }
  const int64_t last = prefix.batch_size().back() - 1;
  TensorDict out = TensorDict::empty({});
  for (const auto& core : recurrent_cores()) {
    for (const auto& hidden : core->hidden_keys()) {
      // [N, K, L, H] -> the state after the prefix's last step, over the sequences' steps.
      const auto after = inputs.get(NestedKey{"next", hidden}).select(1, last).unsqueeze(1);
      auto sizes = after.sizes().vec();
      sizes[1] = steps;
      out.set(hidden, after.expand(sizes));
    }
  }
  return out;
}

torch::Tensor DQNLoss::next_value(const TensorDict& batch, const TensorDict& online,
                                  const std::optional<TensorDict>& target_start) {
  torch::NoGradGuard no_grad;
  const auto next = detail::next_tensordict(name(), batch);
  const auto& in_keys = value_network_->in_keys();
  const auto& out_keys = value_network_->out_keys();
  const bool writes_greedy =
      detail::has_key(out_keys, key("value")) && detail::has_key(out_keys, key("action"));
  auto run = [&](bool use_target) {
    auto td = detail::network_inputs(name(), "the value_network on the next state", next, in_keys,
                                     {}, "next");
    auto forward = [&](const TensorDict& inputs) {
      if (use_target) {
        with_target("value_network", [&] { value_network_->forward(inputs); });
      } else {
        value_network_->forward(inputs);
      }
    };
    if (!recurrent_cores().empty()) {
      // Each next observation continues from the state after its own step: the online pass's,
      // or the target network's own pass over the sequences.
      TensorDict states = online;
      if (use_target) {
        states = detail::network_inputs(name(), "the value_network", batch, in_keys);
        if (target_start)
          for (const auto& [k, v] : target_start->items(true, true))
            states.set(k, std::get<torch::Tensor>(v));
        modules::RecurrentModeGuard sequence(recurrent_cores(), /*recurrent_mode=*/true,
                                             /*sequence_states=*/true);
        forward(states);
      }
      for (const auto& core : recurrent_cores()) {
        for (const auto& hidden : core->hidden_keys())
          td.set(hidden, states.get(NestedKey{"next", hidden}));
      }
      modules::RecurrentModeGuard step(recurrent_cores(), /*recurrent_mode=*/false);
      forward(td);
      return td;
    }
    forward(td);
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
  // The steps the loss trains on: the batch, or a recurrent batch after its burn-in, which only
  // warms each network's state up, without gradient (R2D2).
  TensorDict data = batch;
  std::optional<TensorDict> target_start;
  int64_t warm = 0;
  if (!recurrent_cores().empty()) {
    TDRL_CHECK(batch.batch_dims() >= 2, tensordict::ShapeError, name(),
               ": the value_network is recurrent, so the batch must be sequences [N, L] (time "
               "last), got batch_size ",
               tensordict::shape_str(batch.batch_size()),
               "; sample with a SliceSampler and reshape to [-1, slice_len]");
    warm = detail::burn_in_prefix(name(), batch, key("burn_in"));
    if (warm > 0) {
      namespace ix = torch::indexing;
      const int64_t rest = batch.batch_size().back() - warm;
      const auto prefix = batch.index({ix::Ellipsis, ix::Slice(0, warm)});
      data = batch.index({ix::Ellipsis, ix::Slice(warm, ix::None)});
      data.update(warm_state(prefix, /*use_target=*/false, rest));
      target_start = warm_state(prefix, /*use_target=*/true, rest);
    }
  }
  auto td = detail::network_inputs(name(), "the value_network", data, value_network_->in_keys());
  if (recurrent_cores().empty()) {
    value_network_->forward(td);
  } else {
    modules::RecurrentModeGuard sequence(recurrent_cores(), /*recurrent_mode=*/true,
                                         /*sequence_states=*/true);
    value_network_->forward(td);
  }
  const auto values = action_values(name(), td, key("action_value"), value_network_->out_keys());
  std::optional<detail::ActionSpace> space;
  if (!action_space_.empty()) space = detail::parse_action_space(name(), action_space_);
  const auto pred =
      detail::chosen_value(name(), values, get(data, "action"), data.batch_size(), space);

  const auto t = checked_transition(data, pred);
  const auto next = next_value(data, td, target_start);
  const auto target = td_target(data, t, pred, next, "the next state's value");

  // Flagged burn-in steps still in the data (a feed-forward network's) are out of the loss and
  // the diagnostics.
  const auto trained = detail::trained_steps(name(), data, key("burn_in"), pred);
  const auto loss = detail::reduce_td_loss(
      name(), functional::distance_loss(pred, target, options_.loss_function()),
      data.find(key("priority_weight")), trained);
  auto td_error = (pred.detach() - target).abs().squeeze(-1);
  if (warm > 0) {
    auto all = torch::zeros(batch.batch_size(), td_error.options());
    all.narrow(-1, warm, td_error.size(-1)).copy_(td_error);
    td_error = all;
  }
  TensorDict out({{"loss_value", loss},
                  {"pred_value", detail::masked_mean(pred.detach(), trained)},
                  {"target_value", detail::masked_mean(target, trained)}},
                 {});
  batch.set(key("priority"), td_error);
  return out;
}

// ---- DistributionalDQNLoss -----------------------------------------------------------------

DistributionalDQNLoss::DistributionalDQNLoss(NetworkPtr value_network,
                                             DistributionalDQNLossOptions options)
    : LossModule("DistributionalDQNLoss",
                 detail::off_policy_default_keys({{"action_value", NestedKey("action_value")}}),
                 detail::off_policy_in_key_names()),
      value_network_(std::move(value_network)),
      options_(std::move(options)) {
  set_out_keys({"loss_value"});
  detail::check_network("DistributionalDQNLoss", "the value_network", value_network_);
  const auto& support = options_.support();
  if (!support.defined() || support.dim() != 1 || support.size(0) < 2 ||
      !support.is_floating_point()) {
    throw ValueError(
        "DistributionalDQNLoss: the support must be a 1-D floating tensor of at least 2 atoms"
        "; got " +
        (support.defined() ? detail::shape_str(support.sizes()) : std::string("none")));
  }
  TDRL_CHECK((support.diff() > 0).all().item<bool>(), ValueError,
             "DistributionalDQNLoss: the support must be increasing (z_1 < ... < z_K)");
  if (options_.action_space()) {
    detail::parse_action_space("DistributionalDQNLoss", *options_.action_space());
  }
  support_ = register_buffer("support", support.detach().clone());
  convert_to_functional("value_network", value_network_, options_.delay_value());
  make_value_estimator(ValueEstimatorType::kTD0);
}

std::shared_ptr<ValueEstimatorBase> DistributionalDQNLoss::build_value_estimator(
    ValueEstimatorType type, const ValueEstimatorOptions& options) {
  TDRL_CHECK(type == ValueEstimatorType::kTD0, ValueError, name(),
             ": the distributional backup is one-step; only td0 is supported, "
             "got ",
             to_string(type));
  return LossModule::build_value_estimator(type, options);
}

void DistributionalDQNLoss::pretty_print(std::ostream& stream) const {
  stream << "DistributionalDQNLoss(num_atoms=" << support_.size(0)
         << ", v_min=" << support_[0].item<double>() << ", v_max=" << support_[-1].item<double>()
         << ", delay_value=" << (options_.delay_value() ? "true" : "false")
         << ", gamma=" << value_estimator_->options().gamma() << ")";
}

torch::Tensor DistributionalDQNLoss::log_probs(const TensorDict& td, int64_t batch_dims) const {
  const auto values = action_values(name(), td, key("action_value"), value_network_->out_keys());
  const int64_t k = support_.size(0);
  TDRL_CHECK(!(values.dim() != batch_dims + 2 || values.size(-2) != k), tensordict::ShapeError,
             name(), ": the action values have shape ", detail::shape_str(values.sizes()),
             "; expected log-probabilities [*B, num_atoms=", std::to_string(k), ", num_actions]");
  return values;
}

TensorDict DistributionalDQNLoss::forward_impl(const TensorDict& batch) {
  detail::check_batched(name(), batch);
  const auto& in_keys = value_network_->in_keys();
  auto td = detail::network_inputs(name(), "the value_network", batch, in_keys);
  value_network_->forward(td);
  const auto log_p = log_probs(td, batch.batch_dims());  // [*B, K, n]
  const int64_t k = log_p.size(-2);
  const int64_t n = log_p.size(-1);
  const auto action = get(batch, "action");
  std::optional<detail::ActionSpace> space;
  if (options_.action_space()) space = detail::parse_action_space(name(), *options_.action_space());
  // log p(z | s, a) `[*B, K]` of the taken action.
  torch::Tensor chosen;
  if (detail::resolve_action_space(name(), action, batch.batch_size(), n, log_p.sizes(), space) ==
      detail::ActionSpace::kOneHot) {
    chosen = (log_p * action.to(log_p.dtype()).unsqueeze(-2)).sum(-1);
  } else {
    auto index = detail::action_index(name(), action, n).unsqueeze(-1).unsqueeze(-1);
    std::vector<int64_t> shape(index.sizes().begin(), index.sizes().end());
    shape[shape.size() - 2] = k;
    chosen = log_p.gather(-1, index.expand(shape)).squeeze(-1);
  }

  std::vector<int64_t> value_shape(batch.batch_size().begin(), batch.batch_size().end());
  value_shape.push_back(1);
  const auto value_like = torch::empty(value_shape, torch::TensorOptions().device(torch::kMeta));
  const auto t = checked_transition(batch, value_like);

  torch::Tensor projected;  // m `[*B, K]`
  {
    torch::NoGradGuard no_grad;
    auto next = detail::next_inputs(name(), batch, "the value_network", in_keys);
    with_target_if(options_.delay_value(), "value_network",
                   [&] { return value_network_->forward(next.inputs); });
    const auto next_p = log_probs(next.inputs, batch.batch_dims()).exp();
    const auto support = support_.to(next_p.dtype());
    const auto q = (next_p * support.unsqueeze(-1)).sum(-2);   // [*B, n]
    auto best = q.argmax(-1, /*keepdim=*/true).unsqueeze(-1);  // [*B, 1, 1]
    std::vector<int64_t> shape(best.sizes().begin(), best.sizes().end());
    shape[shape.size() - 2] = k;
    const auto p = next_p.gather(-1, best.expand(shape)).squeeze(-1);  // [*B, K]
    // Each atom moved by the Bellman backup, clamped, then split between its neighbours.
    const double gamma = value_estimator_->options().gamma();
    const double v_min = support_[0].item<double>();
    const double v_max = support_[-1].item<double>();
    const double dz = (v_max - v_min) / static_cast<double>(k - 1);
    const auto not_terminated = 1.0 - t.terminated.to(p.dtype());
    const auto tz = (t.reward.to(p.dtype()) + gamma * not_terminated * support).clamp(v_min, v_max);
    const auto b = (tz - v_min) / dz;
    auto lower = b.floor();
    auto upper = b.ceil();
    // An atom landing exactly on z_j gives its mass to j (lower = upper); move one end so that
    // the two shares below sum to p.
    const auto exact = lower == upper;
    lower = torch::where(exact & (upper > 0), lower - 1, lower);
    upper = torch::where(exact & (lower == upper) & (lower < k - 1), upper + 1, upper);
    projected = torch::zeros_like(p)
                    .scatter_add_(-1, lower.to(torch::kLong), p * (upper - b))
                    .scatter_add_(-1, upper.to(torch::kLong), p * (b - lower));
  }
  const auto per_sample = -(projected * chosen).sum(-1, /*keepdim=*/true);  // [*B, 1]
  const auto loss = detail::reduce_td_loss(name(), per_sample, batch.find(key("priority_weight")));
  TensorDict out({{"loss_value", loss}}, {});
  batch.set(key("priority"), per_sample.detach().squeeze(-1));
  return out;
}

}  // namespace tdrl::losses
