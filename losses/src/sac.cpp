// Soft actor-critic losses: SACLoss (continuous actions) and DiscreteSACLoss.

#include <tdrl/losses/sac.h>

#include <cmath>
#include <functional>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/losses/functional/distance.h>
#include <tensordict/errors.h>
#include <tensordict/nn/categorical.h>

#include "detail/off_policy.h"

namespace tdrl::losses {

using tensordict::shape_str;
using tensordict::ValueError;
namespace tdnn = tensordict::nn;

namespace {

// The fields both SAC losses print, from num_qvalue_nets to the closing parenthesis.
template <class Options>
void print_sac_fields(std::ostream& stream, int64_t num_qvalue_nets, const Options& options,
                      const EntropyTemperature& temperature, const ValueEstimatorBase& estimator) {
  stream << "num_qvalue_nets=" << num_qvalue_nets << ", loss_function=" << options.loss_function()
         << ", alpha_init=" << options.alpha_init()
         << ", fixed_alpha=" << detail::bool_str(options.fixed_alpha())
         << ", target_entropy=" << temperature.target_entropy_repr()
         << ", delay_qvalue=" << detail::bool_str(options.delay_qvalue())
         << ", value_estimator=" << estimator.to_string() << ")";
}

}  // namespace

// ---- SACLoss -------------------------------------------------------------------------------

SACLoss::SACLoss(Actor actor_network, QNetworks qvalue_networks, SACLossOptions options)
    : ActorQValueLoss("SACLoss", detail::state_action_default_keys(),
                      detail::off_policy_in_key_names(), std::move(actor_network),
                      std::move(qvalue_networks)),
      options_(std::move(options)) {
  set_out_keys({"loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"});
  functional::check_distance_loss_name("SACLoss", "loss_function", options_.loss_function());
  const auto spec = detail::action_spec_of(options_.action_spec(), actor_network_);
  auto target_entropy = options_.target_entropy();
  if (!target_entropy && spec) target_entropy = -static_cast<double>(spec->numel());
  temperature_ = EntropyTemperature(*this, "SACLoss", options_, target_entropy);
  convert_to_functional("actor_network", actor_network_, /*create_target=*/false);
  convert_qvalue_networks(qvalue_networks_, options_.delay_qvalue());
  make_value_estimator(ValueEstimatorType::kTD0);
}

void SACLoss::pretty_print(std::ostream& stream) const {
  stream << "SACLoss(";
  print_sac_fields(stream, num_qvalue_nets(), options_, temperature_, *value_estimator_);
}

TensorDict SACLoss::forward_impl(const TensorDict& batch) {
  const auto keys = detail::checked_q_keys(*this, batch, qvalue_networks_);
  const auto& actor_in = actor_network_->in_keys();
  const auto t = transition(batch);

  // Actor term: a reparametrised action at s, valued by the Q-networks with their
  // parameters held out.
  auto actor_td = detail::network_inputs(name(), "the actor_network", batch, actor_in);
  const auto dist = actor_network_->get_dist(actor_td);
  TDRL_CHECK(dist->has_rsample(), ValueError, name(), ": the actor's distribution ", dist->name(),
             " has no rsample; SAC needs a reparametrisable one (e.g. TanhNormal)");
  const auto action = dist->rsample();
  const auto log_prob = dist->log_prob(action).unsqueeze(-1);  // [*B, 1]
  double action_numel = 1.0;
  for (auto d : dist->event_shape()) action_numel *= static_cast<double>(d);
  temperature_.resolve_target_entropy(action_numel);
  const auto alpha = temperature_.clamp();

  const auto actor_values =
      detail::run_q_networks(name(), qvalue_networks_, batch, "", keys.action, action, keys.value,
                             [&](size_t i, TensorDict& td) {
                               HoldOutParams hold(*qvalue_networks_[i]);
                               qvalue_networks_[i]->forward(td);
                             });
  const auto min_q_actor = std::get<0>(torch::stack(actor_values).min(0));
  check_same_shape("actor loss", log_prob, "log pi(a|s) (unsqueezed)", min_q_actor,
                   "min_i Q_i(s, a)");
  const auto loss_actor = (alpha * log_prob - min_q_actor).mean();

  // Q term: every Q_i(s, a) at the batch's action against the soft TD target.
  const auto preds = detail::q_values(name(), qvalue_networks_, batch, keys.action, keys.value);
  const auto& pred0 = preds.front();
  check_td_shapes(t, pred0);
  torch::Tensor next_value;
  {
    torch::NoGradGuard no_grad;
    auto next = detail::next_inputs(name(), batch, "the actor_network", actor_in);
    const auto next_dist = actor_network_->get_dist(next.inputs);
    const auto next_action = next_dist->sample();
    const auto next_log_prob = next_dist->log_prob(next_action).unsqueeze(-1);
    const auto next_values = detail::run_q_networks(
        name(), qvalue_networks_, next.td, "next", keys.action, next_action, keys.value,
        qvalue_runner(qvalue_networks_, options_.delay_qvalue()));
    next_value = std::get<0>(torch::stack(next_values).min(0)) - alpha * next_log_prob;
  }
  const auto target = td_target(batch, t, pred0, next_value, "the next state's soft value");
  for (const auto& pred : preds)
    check_same_shape("Q-value loss", pred, "Q_i(s, a)", pred0, "Q_0(s, a)");
  const auto loss_qvalue = detail::sum_td_losses(name(), preds, target, options_.loss_function(),
                                                 batch.find(key("priority_weight")));

  // Temperature term.
  const auto log_prob_detached = log_prob.detach();
  const auto loss_alpha = temperature_.loss(log_prob_detached + *temperature_.target_entropy());

  const auto td_error = detail::max_td_error(preds, target);
  TensorDict out({{"loss_actor", loss_actor},
                  {"loss_qvalue", loss_qvalue},
                  {"loss_alpha", loss_alpha},
                  {"alpha", alpha},
                  {"entropy", -log_prob_detached.mean()}},
                 {});
  batch.set(key("priority"), td_error);
  return out;
}

// ---- DiscreteSACLoss -----------------------------------------------------------------------

DiscreteSACLoss::DiscreteSACLoss(Actor actor_network, QNetworks qvalue_networks,
                                 DiscreteSACLossOptions options)
    : ActorQValueLoss(
          "DiscreteSACLoss",
          detail::off_policy_default_keys({{"action_value", NestedKey("action_value")}}),
          detail::off_policy_in_key_names(), std::move(actor_network), std::move(qvalue_networks)),
      options_(std::move(options)) {
  set_out_keys({"loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"});
  functional::check_distance_loss_name("DiscreteSACLoss", "loss_function",
                                       options_.loss_function());
  TDRL_CHECK(!(options_.num_actions() < 2), ValueError, "DiscreteSACLoss: num_actions is ",
             std::to_string(options_.num_actions()), "; it must be >= 2");
  if (options_.action_space()) {
    detail::parse_action_space("DiscreteSACLoss", *options_.action_space());
  }
  temperature_ = EntropyTemperature(
      *this, "DiscreteSACLoss", options_,
      options_.target_entropy().value_or(options_.target_entropy_weight() *
                                         std::log(static_cast<double>(options_.num_actions()))));
  convert_to_functional("actor_network", actor_network_, /*create_target=*/false);
  convert_qvalue_networks(qvalue_networks_, options_.delay_qvalue());
  make_value_estimator(ValueEstimatorType::kTD0);
}

void DiscreteSACLoss::pretty_print(std::ostream& stream) const {
  stream << "DiscreteSACLoss(num_actions=" << options_.num_actions() << ", ";
  print_sac_fields(stream, num_qvalue_nets(), options_, temperature_, *value_estimator_);
}

namespace {

// The actor's probabilities and log-probabilities `[*B, n]` at the states of `td`, the
// log-probabilities of impossible (masked) actions set to 0 so that p * log p stays 0.
std::pair<torch::Tensor, torch::Tensor> categorical_policy(const std::string& where,
                                                           const SACLoss::Actor& actor,
                                                           const TensorDict& td,
                                                           int64_t num_actions) {
  const auto dist = actor->get_dist(td);
  const auto categorical = std::dynamic_pointer_cast<tdnn::Categorical>(dist);
  TDRL_CHECK(categorical, ValueError, where, ": the actor's distribution is ", dist->name(),
             "; discrete SAC needs a Categorical or OneHotCategorical actor");
  const auto& log_probs = categorical->logits();
  TDRL_CHECK(log_probs.size(-1) == num_actions, tensordict::ShapeError, where,
             ": the actor's distribution has ", std::to_string(log_probs.size(-1)),
             " classes but num_actions is ", std::to_string(num_actions));
  const auto probs = log_probs.exp();
  const auto safe_log_probs = torch::where(probs > 0, log_probs, torch::zeros_like(log_probs));
  return {probs, safe_log_probs};
}

}  // namespace

TensorDict DiscreteSACLoss::forward_impl(const TensorDict& batch) {
  // The keys the networks must write, and the check of every action-value vector [*B, n].
  detail::check_batched(name(), batch);
  const NestedKey& action_key = key("action");
  const NestedKey& value_key = key("action_value");
  for (size_t i = 0; i < qvalue_networks_.size(); ++i) {
    detail::require_writes(name(), "Q-value network " + std::to_string(i), *qvalue_networks_[i],
                           value_key, "action_value");
  }
  const int64_t n = options_.num_actions();
  const auto check_values = [&](const std::vector<torch::Tensor>& values) {
    for (const auto& v : values) {
      TDRL_CHECK(!(v.dim() < 1 || v.size(-1) != n), tensordict::ShapeError, name(),
                 ": a Q-value network wrote action values of shape ", shape_str(v.sizes()),
                 "; their last dim must be "
                 "num_actions = ",
                 std::to_string(n));
    }
    return std::get<0>(torch::stack(values).min(0));
  };
  const auto& actor_in = actor_network_->in_keys();
  const auto t = transition(batch);

  // Actor term: the expectation over pi(.|s), the Q-networks' parameters held out.
  auto actor_td = detail::network_inputs(name(), "the actor_network", batch, actor_in);
  const auto [probs, log_probs] = categorical_policy(name(), actor_network_, actor_td, n);
  const auto alpha = temperature_.clamp();
  const auto held_out_values =
      detail::run_q_networks(name(), qvalue_networks_, batch, "", action_key, {}, value_key,
                             [&](size_t i, TensorDict& td) {
                               HoldOutParams hold(*qvalue_networks_[i]);
                               qvalue_networks_[i]->forward(td);
                             });
  const auto min_q_actor = check_values(held_out_values);
  check_same_shape("actor loss", probs, "pi(.|s)", min_q_actor, "min_i Q_i(s, .)");
  const auto loss_actor = (probs * (alpha * log_probs - min_q_actor)).sum(-1).mean();
  const auto entropy = -(probs * log_probs).sum(-1).detach();

  // Q term.
  const auto all_values = detail::q_values(name(), qvalue_networks_, batch, action_key, value_key);
  check_values(all_values);
  std::optional<detail::ActionSpace> space;
  if (options_.action_space()) space = detail::parse_action_space(name(), *options_.action_space());
  const auto action = get(batch, "action");
  std::vector<torch::Tensor> preds;
  for (const auto& values : all_values) {
    preds.push_back(detail::chosen_value(name(), values, action, batch.batch_size(), space));
  }
  const auto& pred0 = preds.front();
  check_td_shapes(t, pred0);
  // The soft value of the next state: E_pi'[min_i Q'_i(s', .) - alpha log pi'], no gradient.
  torch::Tensor next_value;
  {
    torch::NoGradGuard no_grad;
    auto next = detail::next_inputs(name(), batch, "the actor_network", actor_in);
    const auto [next_probs, next_log_probs] =
        categorical_policy(name(), actor_network_, next.inputs, n);
    const auto next_values =
        detail::run_q_networks(name(), qvalue_networks_, next.td, "next", action_key, {}, value_key,
                               qvalue_runner(qvalue_networks_, options_.delay_qvalue()));
    const auto min_next = check_values(next_values);
    next_value = (next_probs * (min_next - alpha * next_log_probs)).sum(-1, /*keepdim=*/true);
  }
  const auto target = td_target(batch, t, pred0, next_value, "the next state's soft value");
  const auto loss_qvalue = detail::sum_td_losses(name(), preds, target, options_.loss_function(),
                                                 batch.find(key("priority_weight")));

  // Temperature term, and the outputs with each sample's priority written back.
  const auto loss_alpha = temperature_.loss(*temperature_.target_entropy() - entropy);
  const auto td_error = detail::max_td_error(preds, target);
  TensorDict out({{"loss_actor", loss_actor},
                  {"loss_qvalue", loss_qvalue},
                  {"loss_alpha", loss_alpha},
                  {"alpha", alpha},
                  {"entropy", entropy.mean()}},
                 {});
  batch.set(key("priority"), td_error);
  return out;
}

}  // namespace tdrl::losses
