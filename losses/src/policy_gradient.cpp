// PolicyGradientLoss: the shared plumbing of the on-policy losses (A2CLoss, ReinforceLoss, PPO).

#include <tdrl/losses/policy_gradient.h>

#include <cmath>
#include <sstream>
#include <unordered_set>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/losses/functional/distance.h>
#include <tensordict/errors.h>
#include <tensordict/nn/tanh_normal.h>

namespace tdrl::losses {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;
namespace tdnn = tensordict::nn;

namespace {

std::vector<std::pair<std::string, NestedKey>> policy_gradient_keys(
    std::vector<std::pair<std::string, NestedKey>> extra) {
  std::vector<std::pair<std::string, NestedKey>> keys = {
      {"advantage", NestedKey("advantage")},
      {"value_target", NestedKey("value_target")},
      {"value", NestedKey("state_value")}};
  for (auto& k : extra) keys.push_back(std::move(k));
  keys.push_back({"action", NestedKey("action")});
  keys.push_back({"reward", NestedKey{"next", "reward"}});
  keys.push_back({"done", NestedKey{"next", "done"}});
  keys.push_back({"terminated", NestedKey{"next", "terminated"}});
  return keys;
}

// Turns requires_grad off on the given leaves for the length of a scope (so that what is
// computed meanwhile sends them no gradient) and back on afterwards.
class FreezeParams {
 public:
  explicit FreezeParams(const std::vector<torch::Tensor>& params) {
    for (const auto& p : params) {
      if (!p.requires_grad()) continue;
      p.requires_grad_(false);
      frozen_.push_back(p);
    }
  }
  ~FreezeParams() {
    for (const auto& p : frozen_) p.requires_grad_(true);
  }
  FreezeParams(const FreezeParams&) = delete;
  FreezeParams& operator=(const FreezeParams&) = delete;

 private:
  std::vector<torch::Tensor> frozen_;
};

}  // namespace

// ---- PolicyGradientLoss ---------------------------------------------------------------------

PolicyGradientLoss::PolicyGradientLoss(std::string name, ActorPtr actor, CriticPtr critic,
                                       std::vector<std::pair<std::string, NestedKey>> extra_keys,
                                       std::vector<std::string> in_key_names, bool critic_target,
                                       bool separate_losses)
    : LossModule(std::move(name), policy_gradient_keys(std::move(extra_keys)),
                 std::move(in_key_names)),
      actor_(std::move(actor)),
      critic_(std::move(critic)) {
  TDRL_CHECK(actor_, ValueError, this->name(),
             ": the actor is null; pass a ProbabilisticTensorDictSequential (e.g. a "
             "tdrl::modules::ProbabilisticActor)");
  TDRL_CHECK(!(critic_target && !critic_), ValueError, this->name(),
             ": delay_value needs a critic (target parameters are the critic's); pass a "
             "critic or set delay_value(false)");
  convert_to_functional("actor_network", actor_, /*create_target=*/false);
  if (!critic_) return;
  convert_to_functional("critic_network", critic_, critic_target);
  if (separate_losses) {
    std::unordered_set<const void*> actor_params;
    for (const auto& p : actor_->parameters()) actor_params.insert(p.unsafeGetTensorImpl());
    for (const auto& p : critic_->parameters()) {
      if (actor_params.count(p.unsafeGetTensorImpl())) shared_params_.push_back(p);
    }
  }
  make_value_estimator();
}

std::shared_ptr<ValueEstimatorBase> PolicyGradientLoss::build_value_estimator(
    ValueEstimatorType type, const ValueEstimatorOptions& options) {
  TDRL_CHECK(critic_, ValueError, name(),
             ": make_value_estimator: the loss has no critic to estimate values "
             "with; pass a critic, or put the advantage in the batch");
  return tdrl::losses::make_value_estimator(type, critic_, options);
}

void PolicyGradientLoss::on_keys_changed() {
  if (!value_estimator_) return;
  std::map<std::string, NestedKey> keys;
  for (const char* k : {"advantage", "value_target", "value", "reward", "done", "terminated"}) {
    keys.emplace(k, key(k));
  }
  value_estimator_->set_keys(keys);
}

torch::Tensor PolicyGradientLoss::advantage(const TensorDict& td) {
  const auto& advantage_key = key("advantage");
  if (auto found = td.find(advantage_key)) return found->detach();
  TDRL_CHECK(critic_, KeyError, name(), ": the batch has no ", advantage_key.to_string(),
             " (the 'advantage' key) and the loss has no critic to estimate it; compute "
             "it beforehand or rename it with set_keys({{\"advantage\", <your key>}})");
  estimate(td);
  return td.get(advantage_key);
}

void PolicyGradientLoss::estimate(const TensorDict& td) {
  TDRL_CHECK(!(td.batch_dims() < 1), ShapeError, name(),
             ": the batch has no advantage and batch_size []; estimating it needs a "
             "time dim (batch [*B, T], e.g. a rollout); compute the advantage "
             "beforehand or pass a rollout");
  TDRL_CHECK(td.contains("next"), KeyError, name(),
             ": the batch has no advantage and no \"next\" entry to estimate it "
             "from (the critic is evaluated on batch[\"next\"]); pass a rollout "
             "or compute the advantage beforehand");
  torch::Tensor value, next_value;
  {
    torch::NoGradGuard no_grad;
    critic_->forward(td);
    const auto next = td.get_tensordict("next");
    if (has_target("critic_network")) {
      with_target("critic_network", [&] { critic_->forward(next); });
    } else {
      critic_->forward(next);
    }
    value = critic_value(td);
    next_value = critic_value(next);
  }
  const auto reward = get(td, "reward");
  const auto done = get(td, "done");
  const auto terminated = get(td, "terminated");
  auto [adv, target] =
      value_estimator_->estimate(value, next_value, reward, done, terminated, td.batch_dims() - 1);
  td.set(key("advantage"), adv);
  td.set(key("value_target"), target);
}

torch::Tensor PolicyGradientLoss::critic_value(const TensorDict& td) const {
  const NestedKey& value_key = key("value");
  auto found = td.find(value_key);
  TDRL_CHECK(found, KeyError, name(), ": the critic writes ", tdnn::keys_repr(critic_->out_keys()),
             " but the loss reads the value from ", value_key.to_string(),
             "; make them agree with set_keys({{\"value\", <the critic's out key>}})");
  return *found;
}

torch::Tensor PolicyGradientLoss::normalize(const torch::Tensor& advantage) {
  if (advantage.numel() <= 1) return advantage;
  return (advantage - advantage.mean()) / advantage.std().clamp_min(1e-6);
}

std::shared_ptr<tdnn::Distribution> PolicyGradientLoss::get_dist(const TensorDict& td) const {
  return actor_->get_dist(td);
}

torch::Tensor PolicyGradientLoss::action_log_prob(const tdnn::Distribution& dist,
                                                  const TensorDict& td) const {
  return dist.log_prob(get(td, "action"));
}

torch::Tensor PolicyGradientLoss::entropy(const tdnn::Distribution& dist, int64_t samples) const {
  if (dist.has_entropy()) return dist.entropy().unsqueeze(-1);
  TDRL_CHECK(dist.has_rsample(), TypeError, name(), ": the actor's ", dist.name(),
             " distribution has no closed-form entropy and no rsample to estimate it "
             "with; set entropy_bonus(false)");
  if (const auto* tanh_normal = dynamic_cast<const tdnn::TanhNormal*>(&dist)) {
    return tanh_normal_entropy(*tanh_normal, samples);
  }
  const auto x = dist.rsample({samples});
  return (-dist.log_prob(x).mean(0)).unsqueeze(-1);
}

void PolicyGradientLoss::write_entropy(const TensorDict& out, const tdnn::Distribution& dist,
                                       const torch::Tensor& log_prob, bool bonus, double coef,
                                       int64_t samples) const {
  if (bonus) {
    const auto ent = entropy(dist, samples);
    out.set("entropy", ent.detach().mean());
    out.set("loss_entropy", -coef * ent.mean());
    return;
  }
  torch::NoGradGuard no_grad;
  out.set("entropy", dist.has_entropy() ? dist.entropy().mean() : -log_prob.mean());
}

torch::Tensor PolicyGradientLoss::tanh_normal_entropy(const tdnn::TanhNormal& dist,
                                                      int64_t samples) {
  // log p(y) at y = m(tanh(u)), u = loc + scale * eps, from u directly (the density of u minus
  // log|dy/du|), instead of mapping y back through atanh: fewer ops, and no clamping near the
  // bounds.
  const auto& loc = dist.loc();
  const auto& scale = dist.scale();
  std::vector<int64_t> shape{samples};
  shape.insert(shape.end(), loc.sizes().begin(), loc.sizes().end());
  const auto eps = torch::randn(shape, loc.options());
  const auto u = loc + scale * eps;
  const double half_log_2pi = 0.5 * std::log(2 * M_PI);
  const auto log_half_width = ((dist.high() - dist.low()) * 0.5).log();
  auto log_p = -0.5 * eps * eps - scale.log() - half_log_2pi - log_half_width -
               2.0 * (std::log(2.0) - u - torch::softplus(-2.0 * u));
  const int64_t event_dims = static_cast<int64_t>(dist.event_shape().size());
  if (event_dims > 0) {
    std::vector<int64_t> dims;
    for (int64_t d = 1; d <= event_dims; ++d) dims.push_back(-d);
    log_p = log_p.sum(dims);
  }
  return (-log_p.mean(0)).unsqueeze(-1);
}

std::optional<torch::Tensor> PolicyGradientLoss::old_value(
    const TensorDict& batch, const std::optional<double>& clip_value) const {
  if (!clip_value || !critic_) return std::nullopt;
  const auto& value_key = key("value");
  auto found = batch.find(value_key);
  TDRL_CHECK(found, KeyError, name(), ": clip_value is set but the batch has no ",
             value_key.to_string(),
             " (the 'value' key), the critic's value at collection time; write it into "
             "the batch, rename it with set_keys({{\"value\", <your key>}}) or unset "
             "clip_value");
  return found->detach();
}

PolicyGradientLoss::PolicyGradientTerm PolicyGradientLoss::policy_gradient_term(
    const TensorDict& td, const torch::Tensor& advantage) const {
  PolicyGradientTerm out;
  out.dist = get_dist(td);
  out.log_prob = action_log_prob(*out.dist, td).unsqueeze(-1);
  check_same_shape("objective", advantage, key("advantage").to_string(), out.log_prob,
                   "the log-prob of the action (unsqueezed to [*B, 1])");
  out.loss = -(out.log_prob * advantage).mean();
  return out;
}

void PolicyGradientLoss::write_critic_loss(const TensorDict& out, const TensorDict& td,
                                           const std::string& term, double coef,
                                           const std::string& loss_critic_type,
                                           const std::optional<torch::Tensor>& old_value,
                                           const std::optional<double>& clip_value) {
  const auto target = get(td, "value_target").detach();
  {
    FreezeParams freeze(shared_params_);
    critic_->forward(td);
  }
  const auto value = critic_value(td);
  const NestedKey& value_key = key("value");
  check_same_shape("critic loss", target, key("value_target").to_string(), value,
                   value_key.to_string());
  auto loss = functional::distance_loss(target, value, loss_critic_type);
  torch::Tensor explained_variance;
  {
    torch::NoGradGuard no_grad;
    explained_variance =
        1 - (target - value).var(/*unbiased=*/false) / target.var(/*unbiased=*/false);
  }
  // TorchRL's pessimistic clipped value loss.
  std::optional<torch::Tensor> clip_fraction;
  if (clip_value) {
    const auto& old = *old_value;
    check_same_shape("clipped critic loss", old, "the batch's " + value_key.to_string(), value,
                     "the critic's value");
    const auto change = value - old;
    const auto clipped = change.clamp(-*clip_value, *clip_value);
    {
      torch::NoGradGuard no_grad;
      clip_fraction = (change != clipped).to(value.scalar_type()).mean();
    }
    const auto clipped_loss = functional::distance_loss(target, old + clipped, loss_critic_type);
    loss = torch::max(loss, clipped_loss);
  }
  out.set(term, coef * loss.mean());
  out.set("explained_variance", explained_variance);
  if (clip_fraction) out.set("value_clip_fraction", *clip_fraction);
}

void PolicyGradientLoss::check_positive(const std::string& option, double value) const {
  if (!(value > 0.0)) {
    std::ostringstream os;
    os << name() << ": " << option << " is " << value << "; it must be > 0";
    throw ValueError(os.str());
  }
}

std::vector<std::string> PolicyGradientLoss::actor_critic_out_keys(const std::string& objective,
                                                                   const std::string& critic,
                                                                   bool entropy, bool entropy_bonus,
                                                                   bool clip_value) {
  std::vector<std::string> out{objective};
  if (entropy || entropy_bonus) out.push_back("entropy");
  if (entropy_bonus) out.push_back("loss_entropy");
  out.push_back(critic);
  out.push_back("explained_variance");
  if (clip_value) out.push_back("value_clip_fraction");
  return out;
}

}  // namespace tdrl::losses
