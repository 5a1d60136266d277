// CQLLoss: conservative Q-learning (offline), SAC with a conservative penalty.

#include <tdrl/losses/cql.h>

#include <cmath>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/losses/functional/distance.h>
#include <tensordict/errors.h>

#include "detail/off_policy.h"

namespace tdrl::losses {

using tensordict::ValueError;
namespace tdnn = tensordict::nn;

namespace {

// The inputs of a Q-network for R actions per state: its other inputs from `source`
// `[*B, ...]` expanded to `[R, *B, ...]`, and `actions` `[R, *B, *action]` under `action_key`.
TensorDict repeated_inputs(const std::string& where, const std::string& who,
                           const TensorDict& source, const std::vector<NestedKey>& keys,
                           const NestedKey& action_key, const torch::Tensor& actions,
                           const std::string& prefix) {
  const int64_t r = actions.size(0);
  std::vector<int64_t> batch{r};
  for (auto d : source.batch_size()) batch.push_back(d);
  TensorDict out = TensorDict::empty(batch);
  for (const auto& key : keys) {
    if (key == action_key) continue;
    auto value = source.find(key);
    if (!value) {
      const NestedKey shown = prefix.empty() ? key : NestedKey{prefix, key};
      throw tensordict::KeyError(where + ": the batch has no " + shown.to_string() +
                                 ", an input of " + who);
    }
    std::vector<int64_t> shape{r};
    for (auto d : value->sizes()) shape.push_back(d);
    out.set(key, value->unsqueeze(0).expand(shape));
  }
  out.set(action_key, actions);
  return out;
}

}  // namespace

CQLLoss::CQLLoss(Actor actor_network, QNetworks qvalue_networks, CQLLossOptions options)
    : ActorQValueLoss("CQLLoss", detail::state_action_default_keys(),
                      detail::off_policy_in_key_names(), std::move(actor_network),
                      std::move(qvalue_networks)),
      options_(std::move(options)) {
  std::vector<std::string> out{"loss_actor", "loss_qvalue", "loss_cql",
                               "loss_alpha", "alpha",       "entropy"};
  if (options_.with_lagrange()) out.insert(out.end(), {"loss_alpha_prime", "alpha_prime"});
  set_out_keys(std::move(out));
  functional::check_distance_loss_name("CQLLoss", "loss_function", options_.loss_function());
  TDRL_CHECK(!(options_.num_random() < 1), ValueError, "CQLLoss: num_random is ",
             std::to_string(options_.num_random()), "; it must be >= 1");
  TDRL_CHECK(options_.temperature() > 0.0, ValueError, "CQLLoss: temperature is ",
             std::to_string(options_.temperature()), "; it must be > 0");
  TDRL_CHECK(options_.min_q_weight() >= 0.0, ValueError, "CQLLoss: min_q_weight is ",
             std::to_string(options_.min_q_weight()), "; it must be >= 0");
  const auto spec = detail::action_spec_of(options_.action_spec(), actor_network_);
  auto target_entropy = options_.target_entropy();
  if (!target_entropy && spec) target_entropy = -static_cast<double>(spec->numel());
  torch::Tensor low = torch::tensor(-1.0f), high = torch::tensor(1.0f);
  if (auto bounded = std::dynamic_pointer_cast<specs::Bounded>(spec)) {
    low = bounded->low().to(torch::kFloat32);
    high = bounded->high().to(torch::kFloat32);
  }
  low_ = register_buffer("action_low", low.clone());
  high_ = register_buffer("action_high", high.clone());
  temperature_ = EntropyTemperature(*this, "CQLLoss", options_, target_entropy);
  const auto log_alpha_prime = torch::zeros({}, torch::kFloat32);
  log_alpha_prime_ = options_.with_lagrange()
                         ? register_parameter("log_alpha_prime", log_alpha_prime)
                         : register_buffer("log_alpha_prime", log_alpha_prime);
  convert_to_functional("actor_network", actor_network_, options_.delay_actor());
  convert_qvalue_networks(qvalue_networks_, options_.delay_qvalue());
  make_value_estimator(ValueEstimatorType::kTD0);
}

void CQLLoss::pretty_print(std::ostream& stream) const {
  stream << "CQLLoss(num_qvalue_nets=" << num_qvalue_nets()
         << ", loss_function=" << options_.loss_function()
         << ", min_q_weight=" << options_.min_q_weight()
         << ", temperature=" << options_.temperature() << ", num_random=" << options_.num_random()
         << ", max_q_backup=" << detail::bool_str(options_.max_q_backup())
         << ", deterministic_backup=" << detail::bool_str(options_.deterministic_backup())
         << ", with_lagrange=" << detail::bool_str(options_.with_lagrange())
         << ", alpha_init=" << options_.alpha_init()
         << ", fixed_alpha=" << detail::bool_str(options_.fixed_alpha())
         << ", value_estimator=" << value_estimator_->to_string() << ")";
}

CQLLoss::Policy CQLLoss::policy_at_states(const TensorDict& batch) const {
  auto actor_td =
      detail::network_inputs(name(), "the actor_network", batch, actor_network_->in_keys());
  Policy policy;
  policy.dist = actor_network_->get_dist(actor_td);
  TDRL_CHECK(policy.dist->has_rsample(), ValueError, name(), ": the actor's distribution ",
             policy.dist->name(),
             " has no rsample; CQL needs a reparametrisable one (e.g. TanhNormal)");
  policy.action = policy.dist->rsample();
  policy.log_prob = policy.dist->log_prob(policy.action).unsqueeze(-1);
  return policy;
}

torch::Tensor CQLLoss::next_state_value(const TensorDict& next, const torch::Tensor& alpha,
                                        std::shared_ptr<tdnn::Distribution>& next_dist) {
  torch::NoGradGuard no_grad;
  const NestedKey& action_key = key("action");
  const NestedKey& q_key = key("state_action_value");
  const auto& actor_in = actor_network_->in_keys();
  auto run_target = qvalue_runner(qvalue_networks_, options_.delay_qvalue());
  auto next_actor_td = detail::network_inputs(name(), "the actor_network on the next state", next,
                                              actor_in, {}, "next");
  next_dist = actor_network_->get_dist(next_actor_td);
  auto backup_dist = next_dist;
  if (options_.delay_actor()) {
    auto target_td = detail::network_inputs(name(), "the actor_network on the next state", next,
                                            actor_in, {}, "next");
    backup_dist = with_target("actor_network", [&] { return actor_network_->get_dist(target_td); });
  }
  std::vector<torch::Tensor> next_values;
  if (options_.max_q_backup()) {
    const auto actions = backup_dist->sample({options_.num_random()});  // [R, *B, *action]
    for (size_t i = 0; i < qvalue_networks_.size(); ++i) {
      auto td = repeated_inputs(name(), "Q-value network " + std::to_string(i), next,
                                qvalue_networks_[i]->in_keys(), action_key, actions, "next");
      run_target(i, td);
      next_values.push_back(std::get<0>(td.get(q_key).max(0)));
    }
    return std::get<0>(torch::stack(next_values).min(0));
  }
  const auto next_action = backup_dist->sample();
  next_values = detail::run_q_networks(name(), qvalue_networks_, next, "next", action_key,
                                       next_action, q_key, run_target);
  auto value = std::get<0>(torch::stack(next_values).min(0));
  if (!options_.deterministic_backup()) {
    value = value - alpha * backup_dist->log_prob(next_action).unsqueeze(-1);
  }
  return value;
}

torch::Tensor CQLLoss::conservative_penalty(const TensorDict& batch,
                                            const std::vector<torch::Tensor>& preds,
                                            const Policy& policy,
                                            const tdnn::Distribution& next_dist,
                                            torch::Tensor& gap_sum) {
  const NestedKey& action_key = key("action");
  const NestedKey& q_key = key("state_action_value");
  const auto batch_action = get(batch, "action");
  const int64_t r = options_.num_random();

  // The sampled actions and their log-densities: uniform in the box, pi(.|s), pi(.|s').
  torch::Tensor random_actions, current_actions, current_log_prob, next_actions, next_log_prob;
  double uniform_log_density = 0.0;
  {
    torch::NoGradGuard no_grad;
    std::vector<int64_t> shape{r};
    for (auto d : batch_action.sizes()) shape.push_back(d);
    const auto low = low_.to(policy.action.dtype());
    const auto high = high_.to(policy.action.dtype());
    random_actions = torch::rand(shape, policy.action.options()) * (high - low) + low;
    std::vector<int64_t> event(batch_action.sizes().begin() + batch.batch_dims(),
                               batch_action.sizes().end());
    uniform_log_density = -(high - low).log().expand(event).sum().item<double>();
    current_actions = policy.dist->sample({r});
    current_log_prob = policy.dist->log_prob(current_actions).unsqueeze(-1);
    next_actions = next_dist.sample({r});
    next_log_prob = next_dist.log_prob(next_actions).unsqueeze(-1);
  }

  // One term per Q-network.
  const double t = options_.temperature();
  const double w = options_.min_q_weight();
  const auto alpha_prime = log_alpha_prime_.detach().exp().clamp(0.0, 1e6);
  torch::Tensor loss_cql;
  for (size_t i = 0; i < qvalue_networks_.size(); ++i) {
    const auto& q = qvalue_networks_[i];
    const std::string who = "Q-value network " + std::to_string(i);
    auto value_at = [&](const torch::Tensor& actions) {
      auto td = repeated_inputs(name(), who, batch, q->in_keys(), action_key, actions, "");
      q->forward(td);
      return td.get(q_key);  // [R, *B, 1]
    };
    const auto cat = torch::cat(
        {value_at(random_actions) - uniform_log_density, value_at(next_actions) - next_log_prob,
         value_at(current_actions) - current_log_prob},
        0);
    auto term = (torch::logsumexp(cat / t, 0).mean() * t - preds[i].mean()) * w;
    if (options_.with_lagrange()) {
      const auto gap = term.detach() - options_.lagrange_thresh();
      gap_sum = gap_sum.defined() ? gap_sum + gap : gap;
      term = alpha_prime * (term - options_.lagrange_thresh());
    }
    loss_cql = loss_cql.defined() ? loss_cql + term : term;
  }
  return loss_cql;
}

TensorDict CQLLoss::forward_impl(const TensorDict& batch) {
  const auto keys = detail::checked_q_keys(*this, batch, qvalue_networks_);
  const auto t = transition(batch);

  // SAC's actor and temperature terms, the Q-networks' parameters held out of the actor's.
  const auto policy = policy_at_states(batch);
  double action_numel = 1.0;
  for (auto d : policy.dist->event_shape()) action_numel *= static_cast<double>(d);
  temperature_.resolve_target_entropy(action_numel);
  const auto alpha = temperature_.clamp();
  const auto actor_values =
      detail::run_q_networks(name(), qvalue_networks_, batch, "", keys.action, policy.action,
                             keys.value, [&](size_t i, TensorDict& td) {
                               HoldOutParams hold(*qvalue_networks_[i]);
                               qvalue_networks_[i]->forward(td);
                             });
  const auto min_q_actor = std::get<0>(torch::stack(actor_values).min(0));
  check_same_shape("actor loss", policy.log_prob, "log pi(a|s) (unsqueezed)", min_q_actor,
                   "min_i Q_i(s, a)");
  const auto loss_actor = (alpha * policy.log_prob - min_q_actor).mean();
  const auto loss_alpha =
      temperature_.loss(policy.log_prob.detach() + *temperature_.target_entropy());

  // Q term against the soft TD target.
  const auto preds = detail::q_values(name(), qvalue_networks_, batch, keys.action, keys.value);
  const auto& pred0 = preds.front();
  check_td_shapes(t, pred0);
  std::shared_ptr<tdnn::Distribution> next_dist;
  const auto next_value =
      next_state_value(detail::next_tensordict(name(), batch), alpha, next_dist);
  const auto target = td_target(batch, t, pred0, next_value, "the next state's value");
  const auto loss_qvalue = detail::sum_td_losses(name(), preds, target, options_.loss_function(),
                                                 batch.find(key("priority_weight")));

  // Conservative term.
  torch::Tensor gap_sum;
  const auto loss_cql = conservative_penalty(batch, preds, policy, *next_dist, gap_sum);

  TensorDict out({{"loss_actor", loss_actor},
                  {"loss_qvalue", loss_qvalue},
                  {"loss_cql", loss_cql},
                  {"loss_alpha", loss_alpha},
                  {"alpha", alpha},
                  {"entropy", -policy.log_prob.detach().mean()}},
                 {});
  if (options_.with_lagrange()) {
    const auto prime = log_alpha_prime_.exp().clamp(0.0, 1e6);
    out.set("loss_alpha_prime", -0.5 * prime * gap_sum);
    out.set("alpha_prime", log_alpha_prime_.detach().exp().clamp(0.0, 1e6));
  }
  batch.set(key("priority"), detail::max_td_error(preds, target));
  return out;
}

}  // namespace tdrl::losses
