// The offline losses: IQLLoss and CQLLoss.

#include <tdrl/losses/cql.h>
#include <tdrl/losses/iql.h>

#include <cmath>

#include <torch/torch.h>

#include <tdrl/losses/functional/distance.h>
#include <tdrl/modules/actors.h>
#include <tensordict/errors.h>

#include "detail/off_policy.h"

namespace tdrl::losses {

using tensordict::ValueError;
namespace tdnn = tensordict::nn;

namespace {

const char* bool_str(bool v) { return v ? "true" : "false"; }

std::string qvalue_name(size_t i) { return "qvalue_network_" + std::to_string(i); }

void check_q_keys(const std::string& where, const detail::QNetworks& networks,
                  const NestedKey& action_key, const NestedKey& value_key) {
  for (size_t i = 0; i < networks.size(); ++i) {
    const std::string who = "Q-value network " + std::to_string(i);
    detail::require_reads(where, who, *networks[i], action_key, "action");
    detail::require_writes(where, who, *networks[i], value_key, "state_action_value");
  }
}

// Sum over networks of each network's reduced TD loss against `target`.
torch::Tensor sum_td_losses(const std::string& where, const std::vector<torch::Tensor>& preds,
                            const torch::Tensor& target, const std::string& loss_function,
                            const std::optional<torch::Tensor>& weight) {
  torch::Tensor total;
  for (const auto& pred : preds) {
    const auto term = detail::reduce_td_loss(
        where, functional::distance_loss(pred, target, loss_function), weight);
    total = total.defined() ? total + term : term;
  }
  return total;
}

// max_i |Q_i(s, a) - y| `[*B]`, detached.
torch::Tensor td_error(const std::vector<torch::Tensor>& preds, const torch::Tensor& target) {
  const auto all = torch::stack(preds).detach();
  return std::get<0>((all - target).abs().max(0)).squeeze(-1);
}

}  // namespace

// ---- IQLLoss -------------------------------------------------------------------------------

IQLLoss::IQLLoss(Actor actor_network, QNetworks qvalue_networks,
                 std::shared_ptr<tdnn::TensorDictModuleBase> value_network, IQLLossOptions options)
    : LossModule(
          "IQLLoss",
          detail::off_policy_default_keys({{"state_action_value", NestedKey("state_action_value")},
                                           {"value", NestedKey("state_value")}}),
          detail::off_policy_in_key_names()),
      actor_network_(std::move(actor_network)),
      qvalue_networks_(std::move(qvalue_networks)),
      value_network_(std::move(value_network)),
      options_(std::move(options)) {
  set_out_keys({"loss_actor", "loss_qvalue", "loss_value", "entropy"});
  detail::check_networks("IQLLoss", actor_network_, qvalue_networks_);
  detail::check_network("IQLLoss", "the value_network", value_network_);
  for (size_t i = 0; i < qvalue_networks_.size(); ++i) {
    if (qvalue_networks_[i] == value_network_) {
      throw ValueError("IQLLoss: Q-value network " + std::to_string(i) +
                       " is the value_network; V(s) needs its own module");
    }
  }
  functional::check_distance_loss_name("IQLLoss", "loss_function", options_.loss_function());
  if (!(options_.expectile() > 0.0 && options_.expectile() < 1.0)) {
    throw ValueError("IQLLoss: expectile is " + std::to_string(options_.expectile()) +
                     "; it must be in (0, 1)");
  }
  if (!(options_.temperature() >= 0.0)) {
    throw ValueError("IQLLoss: temperature is " + std::to_string(options_.temperature()) +
                     "; it must be >= 0");
  }
  convert_to_functional("actor_network", actor_network_, /*create_target=*/false);
  for (size_t i = 0; i < qvalue_networks_.size(); ++i) {
    convert_to_functional(qvalue_name(i), qvalue_networks_[i], options_.delay_qvalue());
  }
  convert_to_functional("value_network", value_network_, /*create_target=*/false);
  make_value_estimator(ValueEstimatorType::kTD0);
}

void IQLLoss::make_value_estimator(ValueEstimatorType type, ValueEstimatorOptions options) {
  value_estimator_ = detail::off_policy_estimator(name(), type, options);
}

void IQLLoss::pretty_print(std::ostream& stream) const {
  stream << "IQLLoss(num_qvalue_nets=" << num_qvalue_nets()
         << ", loss_function=" << options_.loss_function()
         << ", temperature=" << options_.temperature() << ", expectile=" << options_.expectile()
         << ", delay_qvalue=" << bool_str(options_.delay_qvalue())
         << ", value_estimator=" << value_estimator_->to_string() << ")";
}

TensorDict IQLLoss::forward_impl(const TensorDict& batch) {
  detail::check_batched(name(), batch);
  const NestedKey& action_key = key("action");
  const NestedKey& q_key = key("state_action_value");
  const NestedKey& v_key = key("value");
  check_q_keys(name(), qvalue_networks_, action_key, q_key);
  detail::require_writes(name(), "the value_network", *value_network_, v_key, "value");
  const auto action = get(batch, "action");
  const auto reward = get(batch, "reward");
  const auto done = get(batch, "done");
  const auto terminated = get(batch, "terminated");

  // min_i Q'_i(s, a) at the batch's actions, without gradient.
  torch::Tensor min_q;
  {
    torch::NoGradGuard no_grad;
    const auto values = detail::run_q_networks(
        name(), qvalue_networks_, batch, "", action_key, {}, q_key, [&](size_t i, TensorDict& td) {
          if (options_.delay_qvalue()) {
            with_target(qvalue_name(i), [&] { qvalue_networks_[i]->forward(td); });
          } else {
            qvalue_networks_[i]->forward(td);
          }
        });
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
  const auto preds =
      detail::run_q_networks(name(), qvalue_networks_, batch, "", action_key, {}, q_key,
                             [&](size_t i, TensorDict& td) { qvalue_networks_[i]->forward(td); });
  const auto& pred0 = preds.front();
  check_same_shape("TD target", reward, "reward", pred0, "Q(s, a)");
  check_same_shape("TD target", done, "done", pred0, "Q(s, a)");
  check_same_shape("TD target", terminated, "terminated", pred0, "Q(s, a)");
  torch::Tensor next_value;
  {
    torch::NoGradGuard no_grad;
    const auto next = detail::next_tensordict(name(), batch);
    auto next_td = detail::network_inputs(name(), "the value_network on the next state", next,
                                          value_network_->in_keys(), {}, "next");
    value_network_->forward(next_td);
    next_value = next_td.get(v_key);
  }
  check_same_shape("TD target", next_value, "V(s')", pred0, "Q(s, a)");
  const auto target = detail::td_target(*value_estimator_, pred0, next_value, reward, done,
                                        terminated, batch.batch_dims());
  const auto loss_qvalue = sum_td_losses(name(), preds, target, options_.loss_function(),
                                         batch.find(key("priority_weight")));

  TensorDict out({{"loss_actor", loss_actor},
                  {"loss_qvalue", loss_qvalue},
                  {"loss_value", loss_value},
                  {"entropy", -log_prob.detach().mean()}},
                 {});
  batch.set(key("priority"), td_error(preds, target));
  return out;
}

// ---- CQLLoss -------------------------------------------------------------------------------

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
      throw tensordict::KeyError(where + ": the batch has no " + shown.repr() + ", an input of " +
                                 who);
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
    : LossModule("CQLLoss",
                 detail::off_policy_default_keys(
                     {{"state_action_value", NestedKey("state_action_value")}}),
                 detail::off_policy_in_key_names()),
      actor_network_(std::move(actor_network)),
      qvalue_networks_(std::move(qvalue_networks)),
      options_(std::move(options)) {
  std::vector<std::string> out{"loss_actor", "loss_qvalue", "loss_cql",
                               "loss_alpha", "alpha",       "entropy"};
  if (options_.with_lagrange()) out.insert(out.end(), {"loss_alpha_prime", "alpha_prime"});
  set_out_keys(std::move(out));
  detail::check_networks("CQLLoss", actor_network_, qvalue_networks_);
  functional::check_distance_loss_name("CQLLoss", "loss_function", options_.loss_function());
  detail::check_alpha_options("CQLLoss", options_.alpha_init(), options_.min_alpha(),
                              options_.max_alpha());
  if (options_.num_random() < 1) {
    throw ValueError("CQLLoss: num_random is " + std::to_string(options_.num_random()) +
                     "; it must be >= 1");
  }
  if (!(options_.temperature() > 0.0)) {
    throw ValueError("CQLLoss: temperature is " + std::to_string(options_.temperature()) +
                     "; it must be > 0");
  }
  if (!(options_.min_q_weight() >= 0.0)) {
    throw ValueError("CQLLoss: min_q_weight is " + std::to_string(options_.min_q_weight()) +
                     "; it must be >= 0");
  }
  auto spec = options_.action_spec();
  if (!spec) {
    if (auto actor = std::dynamic_pointer_cast<modules::ProbabilisticActorImpl>(actor_network_)) {
      spec = actor->spec();
    }
  }
  target_entropy_ = options_.target_entropy();
  if (!target_entropy_ && spec) target_entropy_ = -static_cast<double>(spec->numel());
  torch::Tensor low = torch::tensor(-1.0f), high = torch::tensor(1.0f);
  if (auto bounded = std::dynamic_pointer_cast<envs::Bounded>(spec)) {
    low = bounded->low().to(torch::kFloat32);
    high = bounded->high().to(torch::kFloat32);
  }
  low_ = register_buffer("action_low", low.clone());
  high_ = register_buffer("action_high", high.clone());
  const auto log_alpha = torch::tensor(std::log(options_.alpha_init()), torch::kFloat32);
  log_alpha_ = options_.fixed_alpha() ? register_buffer("log_alpha", log_alpha)
                                      : register_parameter("log_alpha", log_alpha);
  const auto log_alpha_prime = torch::zeros({}, torch::kFloat32);
  log_alpha_prime_ = options_.with_lagrange()
                         ? register_parameter("log_alpha_prime", log_alpha_prime)
                         : register_buffer("log_alpha_prime", log_alpha_prime);
  convert_to_functional("actor_network", actor_network_, options_.delay_actor());
  for (size_t i = 0; i < qvalue_networks_.size(); ++i) {
    convert_to_functional(qvalue_name(i), qvalue_networks_[i], options_.delay_qvalue());
  }
  make_value_estimator(ValueEstimatorType::kTD0);
}

void CQLLoss::make_value_estimator(ValueEstimatorType type, ValueEstimatorOptions options) {
  value_estimator_ = detail::off_policy_estimator(name(), type, options);
}

torch::Tensor CQLLoss::alpha() const {
  return detail::clamp_log_alpha(log_alpha_, options_.min_alpha(), options_.max_alpha())
      .detach()
      .exp();
}

void CQLLoss::pretty_print(std::ostream& stream) const {
  stream << "CQLLoss(num_qvalue_nets=" << num_qvalue_nets()
         << ", loss_function=" << options_.loss_function()
         << ", min_q_weight=" << options_.min_q_weight()
         << ", temperature=" << options_.temperature() << ", num_random=" << options_.num_random()
         << ", max_q_backup=" << bool_str(options_.max_q_backup())
         << ", deterministic_backup=" << bool_str(options_.deterministic_backup())
         << ", with_lagrange=" << bool_str(options_.with_lagrange())
         << ", alpha_init=" << options_.alpha_init()
         << ", fixed_alpha=" << bool_str(options_.fixed_alpha())
         << ", value_estimator=" << value_estimator_->to_string() << ")";
}

TensorDict CQLLoss::forward_impl(const TensorDict& batch) {
  detail::check_batched(name(), batch);
  const NestedKey& action_key = key("action");
  const NestedKey& q_key = key("state_action_value");
  check_q_keys(name(), qvalue_networks_, action_key, q_key);
  const auto& actor_in = actor_network_->in_keys();
  const auto reward = get(batch, "reward");
  const auto done = get(batch, "done");
  const auto terminated = get(batch, "terminated");
  const auto batch_action = get(batch, "action");
  const int64_t r = options_.num_random();

  // SAC's actor and temperature terms.
  auto actor_td = detail::network_inputs(name(), "the actor_network", batch, actor_in);
  const auto dist = actor_network_->get_dist(actor_td);
  if (!dist->has_rsample()) {
    throw ValueError(name() + ": the actor's distribution " + dist->name() +
                     " has no rsample; CQL needs a reparametrisable one (e.g. TanhNormal)");
  }
  const auto action = dist->rsample();
  const auto log_prob = dist->log_prob(action).unsqueeze(-1);
  if (!target_entropy_) {
    double numel = 1.0;
    for (auto d : dist->event_shape()) numel *= static_cast<double>(d);
    target_entropy_ = -numel;
  }
  detail::clamp_log_alpha_(log_alpha_, options_.min_alpha(), options_.max_alpha());
  const auto alpha = log_alpha_.detach().exp();
  const auto actor_values =
      detail::run_q_networks(name(), qvalue_networks_, batch, "", action_key, action, q_key,
                             [&](size_t i, TensorDict& td) {
                               detail::HoldOutParams hold(*qvalue_networks_[i]);
                               qvalue_networks_[i]->forward(td);
                             });
  const auto min_q_actor = std::get<0>(torch::stack(actor_values).min(0));
  check_same_shape("actor loss", log_prob, "log pi(a|s) (unsqueezed)", min_q_actor,
                   "min_i Q_i(s, a)");
  const auto loss_actor = (alpha * log_prob - min_q_actor).mean();
  const auto loss_alpha = options_.fixed_alpha()
                              ? torch::zeros({}, log_alpha_.options())
                              : -(log_alpha_ * (log_prob.detach() + *target_entropy_)).mean();

  // Q term.
  const auto preds =
      detail::run_q_networks(name(), qvalue_networks_, batch, "", action_key, {}, q_key,
                             [&](size_t i, TensorDict& td) { qvalue_networks_[i]->forward(td); });
  const auto& pred0 = preds.front();
  check_same_shape("TD target", reward, "reward", pred0, "Q(s, a)");
  check_same_shape("TD target", done, "done", pred0, "Q(s, a)");
  check_same_shape("TD target", terminated, "terminated", pred0, "Q(s, a)");
  const auto next = detail::next_tensordict(name(), batch);
  auto run_target = [&](size_t i, TensorDict& td) {
    if (options_.delay_qvalue()) {
      with_target(qvalue_name(i), [&] { qvalue_networks_[i]->forward(td); });
    } else {
      qvalue_networks_[i]->forward(td);
    }
  };
  torch::Tensor next_value;
  std::shared_ptr<tdnn::Distribution> next_dist;  // pi(.|s') of the actor, for the penalty
  {
    torch::NoGradGuard no_grad;
    auto next_actor_td = detail::network_inputs(name(), "the actor_network on the next state", next,
                                                actor_in, {}, "next");
    next_dist = actor_network_->get_dist(next_actor_td);
    auto backup_dist = next_dist;
    if (options_.delay_actor()) {
      auto target_td = detail::network_inputs(name(), "the actor_network on the next state", next,
                                              actor_in, {}, "next");
      backup_dist =
          with_target("actor_network", [&] { return actor_network_->get_dist(target_td); });
    }
    std::vector<torch::Tensor> next_values;
    if (options_.max_q_backup()) {
      const auto actions = backup_dist->sample({r});  // [R, *B, *action]
      for (size_t i = 0; i < qvalue_networks_.size(); ++i) {
        auto td = repeated_inputs(name(), "Q-value network " + std::to_string(i), next,
                                  qvalue_networks_[i]->in_keys(), action_key, actions, "next");
        run_target(i, td);
        next_values.push_back(std::get<0>(td.get(q_key).max(0)));
      }
      next_value = std::get<0>(torch::stack(next_values).min(0));
    } else {
      const auto next_action = backup_dist->sample();
      next_values = detail::run_q_networks(name(), qvalue_networks_, next, "next", action_key,
                                           next_action, q_key, run_target);
      next_value = std::get<0>(torch::stack(next_values).min(0));
      if (!options_.deterministic_backup()) {
        next_value = next_value - alpha * backup_dist->log_prob(next_action).unsqueeze(-1);
      }
    }
  }
  check_same_shape("TD target", next_value, "the next state's value", pred0, "Q(s, a)");
  const auto target = detail::td_target(*value_estimator_, pred0, next_value, reward, done,
                                        terminated, batch.batch_dims());
  const auto loss_qvalue = sum_td_losses(name(), preds, target, options_.loss_function(),
                                         batch.find(key("priority_weight")));

  // Conservative penalty: log-sum-exp of Q at s over uniform and policy actions (importance
  // weighted by their densities), minus Q at the data's actions.
  torch::Tensor random_actions, current_actions, current_log_prob, next_actions, next_log_prob;
  double uniform_log_density = 0.0;
  {
    torch::NoGradGuard no_grad;
    std::vector<int64_t> shape{r};
    for (auto d : batch_action.sizes()) shape.push_back(d);
    const auto low = low_.to(action.dtype());
    const auto high = high_.to(action.dtype());
    random_actions = torch::rand(shape, action.options()) * (high - low) + low;
    std::vector<int64_t> event(batch_action.sizes().begin() + batch.batch_dims(),
                               batch_action.sizes().end());
    uniform_log_density = -(high - low).log().expand(event).sum().item<double>();
    current_actions = dist->sample({r});
    current_log_prob = dist->log_prob(current_actions).unsqueeze(-1);
    next_actions = next_dist->sample({r});
    next_log_prob = next_dist->log_prob(next_actions).unsqueeze(-1);
  }
  const double t = options_.temperature();
  const double w = options_.min_q_weight();
  const auto alpha_prime = log_alpha_prime_.detach().exp().clamp(0.0, 1e6);
  torch::Tensor loss_cql, gap_sum;
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

  TensorDict out({{"loss_actor", loss_actor},
                  {"loss_qvalue", loss_qvalue},
                  {"loss_cql", loss_cql},
                  {"loss_alpha", loss_alpha},
                  {"alpha", alpha},
                  {"entropy", -log_prob.detach().mean()}},
                 {});
  if (options_.with_lagrange()) {
    const auto prime = log_alpha_prime_.exp().clamp(0.0, 1e6);
    out.set("loss_alpha_prime", -0.5 * prime * gap_sum);
    out.set("alpha_prime", alpha_prime);
  }
  batch.set(key("priority"), td_error(preds, target));
  return out;
}

}  // namespace tdrl::losses
