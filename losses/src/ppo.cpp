// PPOLoss, ClipPPOLoss and KLPENPPOLoss.

#include <tdrl/losses/ppo.h>

#include <cmath>
#include <sstream>
#include <typeinfo>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/losses/functional/distance.h>
#include <tensordict/errors.h>
#include <tensordict/nn/categorical.h>
#include <tensordict/nn/normal.h>

#include "detail/policy_gradient_util.h"

namespace tdrl::losses {

using tensordict::KeyError;
using tensordict::ValueError;
namespace tdnn = tensordict::nn;

using detail::optional_repr;

namespace {

const char* bool_repr(bool v) { return v ? "true" : "false"; }

}  // namespace

// ---- PPOLoss --------------------------------------------------------------------------------

PPOLoss::PPOLoss(ActorPtr actor, CriticPtr critic, PPOLossOptions options)
    : PPOLoss("PPOLoss", std::move(actor), std::move(critic), std::move(options)) {}

PPOLoss::PPOLoss(std::string name, ActorPtr actor, CriticPtr critic, PPOLossOptions options,
                 const std::vector<std::string>& extra_out_keys)
    : PolicyGradientLoss(std::move(name), std::move(actor), critic,
                         {{"sample_log_prob", NestedKey("sample_log_prob")}},
                         {"action", "sample_log_prob"}, /*critic_target=*/false,
                         options.separate_losses()),
      ppo_options_(std::move(options)) {
  auto out =
      actor_critic_out_keys("loss_objective", "loss_critic", /*entropy=*/true,
                            ppo_options_.entropy_bonus(), ppo_options_.clip_value().has_value());
  out.insert(out.end(), {"ESS", "kl_approx"});
  out.insert(out.end(), extra_out_keys.begin(), extra_out_keys.end());
  set_out_keys(std::move(out));
  TDRL_CHECK(critic, ValueError, this->name(),
             ": the critic is null; pass a value network writing the state value (e.g. "
             "a tdrl::modules::ValueOperator)");
  check_positive("samples_mc_entropy", static_cast<double>(ppo_options_.samples_mc_entropy()));
  functional::check_distance_loss_name(this->name(), "loss_critic_type",
                                       ppo_options_.loss_critic_type());
  if (ppo_options_.clip_value()) check_positive("clip_value", *ppo_options_.clip_value());
}

PPOLoss::LogWeight PPOLoss::log_weight(const TensorDict& td) const {
  const auto previous = get(td, "sample_log_prob");
  TDRL_CHECK(!previous.requires_grad(), ValueError, name(), ": the batch's ",
             key("sample_log_prob").to_string(),
             " (the 'sample_log_prob' key) requires grad; it must be the log-probability "
             "recorded at collection time: detach it, or collect under "
             "torch::NoGradGuard");
  auto dist = get_dist(td);
  const auto log_prob = action_log_prob(*dist, td);
  check_same_shape("importance weight", log_prob, "the actor's log-prob of the action", previous,
                   key("sample_log_prob").to_string());
  return {(log_prob - previous).unsqueeze(-1), std::move(dist), (previous - log_prob).unsqueeze(-1),
          log_prob};
}

torch::Tensor PPOLoss::checked_advantage(const TensorDict& td, const torch::Tensor& log_weight) {
  auto adv = advantage(td);
  check_same_shape("objective", adv, key("advantage").to_string(), log_weight,
                   "the log-weight (the log-prob unsqueezed to [*B, 1])");
  return ppo_options_.normalize_advantage() ? normalize(adv) : adv;
}

void PPOLoss::add_entropy_and_critic(const TensorDict& out, const TensorDict& td,
                                     const LogWeight& lw,
                                     const std::optional<torch::Tensor>& old_value) {
  write_entropy(out, *lw.dist, lw.log_prob, ppo_options_.entropy_bonus(),
                ppo_options_.entropy_coef(), ppo_options_.samples_mc_entropy());
  write_critic_loss(out, td, "loss_critic", ppo_options_.critic_coef(),
                    ppo_options_.loss_critic_type(), old_value, ppo_options_.clip_value());
}

void PPOLoss::add_weight_diagnostics(const TensorDict& out, const LogWeight& lw) {
  torch::NoGradGuard no_grad;
  const auto w = lw.log_weight.detach().squeeze(-1);
  if (w.dim() == 0) {
    out.set("ESS", torch::ones({}, w.options()));
  } else {
    // (sum w)^2 / sum w^2 along the first batch dim, in log space.
    const auto ess = (2 * w.logsumexp(0) - (2 * w).logsumexp(0)).exp();
    out.set("ESS", ess.mean() / static_cast<double>(w.size(0)));
  }
  out.set("kl_approx", lw.kl_approx.detach().mean());
}

TensorDict PPOLoss::forward_impl(const TensorDict& batch) {
  const auto old = old_value(batch, ppo_options_.clip_value());
  const TensorDict td = batch.clone(/*recurse=*/false);
  const auto lw = log_weight(td);
  const auto adv = checked_advantage(td, lw.log_weight);
  TensorDict out = TensorDict::empty({});
  out.set("loss_objective", -(lw.log_weight.exp() * adv).mean());
  add_entropy_and_critic(out, td, lw, old);
  add_weight_diagnostics(out, lw);
  return out;
}

void PPOLoss::print_ppo_options(std::ostream& stream) const {
  const auto& o = ppo_options_;
  stream << "entropy_bonus=" << bool_repr(o.entropy_bonus())
         << ", samples_mc_entropy=" << o.samples_mc_entropy()
         << ", entropy_coef=" << o.entropy_coef() << ", critic_coef=" << o.critic_coef()
         << ", loss_critic_type=" << o.loss_critic_type()
         << ", normalize_advantage=" << bool_repr(o.normalize_advantage())
         << ", separate_losses=" << bool_repr(o.separate_losses())
         << ", clip_value=" << optional_repr(o.clip_value());
}

void PPOLoss::pretty_print(std::ostream& stream) const {
  stream << "PPOLoss(";
  print_ppo_options(stream);
  stream << ")";
}

// ---- ClipPPOLoss ----------------------------------------------------------------------------

ClipPPOLoss::ClipPPOLoss(ActorPtr actor, CriticPtr critic, ClipPPOLossOptions options)
    : PPOLoss("ClipPPOLoss", std::move(actor), std::move(critic), PPOLossOptions(options),
              {"clip_fraction"}),
      options_(std::move(options)) {
  const double eps = options_.clip_epsilon();
  if (!(eps > 0.0 && eps < 1.0)) {
    std::ostringstream os;
    os << name() << ": clip_epsilon is " << eps << "; it must be in (0, 1)";
    throw ValueError(os.str());
  }
}

TensorDict ClipPPOLoss::forward_impl(const TensorDict& batch) {
  const auto old = old_value(batch, options_.clip_value());
  const TensorDict td = batch.clone(/*recurse=*/false);
  const auto lw = log_weight(td);
  const auto adv = checked_advantage(td, lw.log_weight);
  const double eps = options_.clip_epsilon();
  const auto clipped = lw.log_weight.clamp(std::log1p(-eps), std::log1p(eps));
  const auto gain = torch::min(lw.log_weight.exp() * adv, clipped.exp() * adv);
  TensorDict out = TensorDict::empty({});
  out.set("loss_objective", -gain.mean());
  {
    torch::NoGradGuard no_grad;
    out.set("clip_fraction", (clipped != lw.log_weight).to(clipped.scalar_type()).mean());
  }
  add_entropy_and_critic(out, td, lw, old);
  add_weight_diagnostics(out, lw);
  return out;
}

void ClipPPOLoss::pretty_print(std::ostream& stream) const {
  stream << "ClipPPOLoss(clip_epsilon=" << options_.clip_epsilon() << ", ";
  print_ppo_options(stream);
  stream << ")";
}

// ---- KLPENPPOLoss ---------------------------------------------------------------------------

KLPENPPOLoss::KLPENPPOLoss(ActorPtr actor, CriticPtr critic, KLPENPPOLossOptions options)
    : PPOLoss("KLPENPPOLoss", std::move(actor), std::move(critic), PPOLossOptions(options), {"kl"}),
      options_(std::move(options)) {
  const auto& o = options_;
  std::ostringstream problem;
  if (!(o.dtarg() > 0.0)) {
    problem << "dtarg is " << o.dtarg() << "; it must be > 0";
  } else if (!(o.beta() >= 0.0)) {
    problem << "beta is " << o.beta() << "; it must be >= 0";
  } else if (!(o.increment() >= 1.0)) {
    problem << "increment is " << o.increment() << "; it must be >= 1";
  } else if (!(o.decrement() > 0.0 && o.decrement() <= 1.0)) {
    problem << "decrement is " << o.decrement() << "; it must be in (0, 1]";
  } else if (o.samples_mc_kl() < 1) {
    problem << "samples_mc_kl is " << o.samples_mc_kl() << "; it must be >= 1";
  }
  TDRL_CHECK(problem.str().empty(), ValueError, name(), ": ", problem.str());
  beta_ = register_buffer("beta", torch::tensor(o.beta(), torch::kDouble));
}

double KLPENPPOLoss::beta() const { return beta_.item<double>(); }

torch::Tensor KLPENPPOLoss::kl(const tdnn::Distribution& previous,
                               const tdnn::Distribution& current) const {
  if (typeid(previous) == typeid(current) && previous.event_shape().equals(current.event_shape())) {
    if (const auto* p = dynamic_cast<const tdnn::Normal*>(&previous)) {
      const auto* q = dynamic_cast<const tdnn::Normal*>(&current);
      const auto var_ratio = (p->scale() / q->scale()).pow(2);
      const auto mean_term = ((p->loc() - q->loc()) / q->scale()).pow(2);
      auto elementwise = 0.5 * (var_ratio + mean_term - 1 - var_ratio.log());
      const int64_t event_dims = static_cast<int64_t>(previous.event_shape().size());
      if (event_dims == 0) return elementwise;
      std::vector<int64_t> dims;
      for (int64_t d = 1; d <= event_dims; ++d) dims.push_back(-d);
      return elementwise.sum(dims);
    }
    if (const auto* p = dynamic_cast<const tdnn::Categorical*>(&previous)) {
      const auto* q = dynamic_cast<const tdnn::Categorical*>(&current);
      const auto probs = p->probs();
      const auto terms = probs * (p->logits() - q->logits());
      return torch::where(probs > 0, terms, torch::zeros_like(terms)).sum(-1);
    }
  }
  const auto x = previous.sample({options_.samples_mc_kl()});
  return (previous.log_prob(x) - current.log_prob(x)).mean(0);
}

TensorDict KLPENPPOLoss::forward_impl(const TensorDict& batch) {
  const auto old = old_value(batch, options_.clip_value());
  // The collecting policy's distribution, from the parameters stored in the batch.
  const auto& prob = actor_network()->probabilistic_module();
  TensorDict previous_params = TensorDict::empty(batch.batch_size());
  for (const auto& entry : prob->dist_keys()) {
    auto found = batch.find(entry.second);
    TDRL_CHECK(found, KeyError, name(), ": the batch has no ", entry.second.to_string(), ", the '",
               entry.first,
               "' parameter of the collecting policy's distribution; KLPENPPOLoss needs "
               "the distribution parameters the actor wrote during collection");
    previous_params.set(entry.second, found->detach());
  }
  const auto previous = prob->get_dist(previous_params);

  const TensorDict td = batch.clone(/*recurse=*/false);
  const auto lw = log_weight(td);
  const auto adv = checked_advantage(td, lw.log_weight);
  const auto divergence = kl(*previous, *lw.dist).unsqueeze(-1);
  check_same_shape("KL penalty", divergence, "KL(previous || current) (unsqueezed)", adv,
                   key("advantage").to_string());
  const double beta = this->beta();
  TensorDict out = TensorDict::empty({});
  out.set("loss_objective", -(lw.log_weight.exp() * adv - beta * divergence).mean());
  const auto mean_kl = divergence.detach().mean();
  out.set("kl", mean_kl);
  add_entropy_and_critic(out, td, lw, old);
  add_weight_diagnostics(out, lw);
  // Adapt the penalty once the loss terms are built with the current beta.
  const double kl_value = mean_kl.item<double>();
  torch::NoGradGuard no_grad;
  if (kl_value > 1.5 * options_.dtarg()) {
    beta_.mul_(options_.increment());
  } else if (kl_value < options_.dtarg() / 1.5) {
    beta_.mul_(options_.decrement());
  }
  return out;
}

void KLPENPPOLoss::pretty_print(std::ostream& stream) const {
  stream << "KLPENPPOLoss(dtarg=" << options_.dtarg() << ", beta=" << beta()
         << ", increment=" << options_.increment() << ", decrement=" << options_.decrement()
         << ", samples_mc_kl=" << options_.samples_mc_kl() << ", ";
  print_ppo_options(stream);
  stream << ")";
}

}  // namespace tdrl::losses
