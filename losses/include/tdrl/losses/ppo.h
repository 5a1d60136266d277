#pragma once

/// Proximal policy optimisation losses (TorchRL's PPOLoss, ClipPPOLoss and KLPENPPOLoss).

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tdrl/losses/policy_gradient.h>

namespace tdrl::losses {

/// Options of PPOLoss (the actor-critic options every PPO loss has).
/// Example: `PPOLossOptions().entropy_coef(0.001).loss_critic_type("l2")`
struct PPOLossOptions : ActorCriticOptions<PPOLossOptions> {
  PPOLossOptions() = default;
  /// The PPO options of a ClipPPOLossOptions or KLPENPPOLossOptions.
  template <class D>
  explicit PPOLossOptions(const ActorCriticOptions<D>& other) {
    entropy_bonus(other.entropy_bonus())
        .samples_mc_entropy(other.samples_mc_entropy())
        .entropy_coef(other.entropy_coef())
        .critic_coef(other.critic_coef())
        .loss_critic_type(other.loss_critic_type())
        .normalize_advantage(other.normalize_advantage())
        .separate_losses(other.separate_losses())
        .clip_value(other.clip_value());
  }
};

/// Options of ClipPPOLoss: the PPO options and the ratio clip.
/// Example: `ClipPPOLossOptions().clip_epsilon(0.2).entropy_coef(0.01)`
struct ClipPPOLossOptions : ActorCriticOptions<ClipPPOLossOptions> {
  /// The importance ratio is clipped to [1 - clip_epsilon, 1 + clip_epsilon]; in (0, 1).
  /// Default 0.2.
  TORCH_ARG(double, clip_epsilon) = 0.2;

 public:
  /// The actor-critic options, then clip_epsilon.
  void fields(tensordict::fields::FieldVisitor& v) {
    ActorCriticOptions::fields(v);
    v("clip_epsilon", clip_epsilon_, tensordict::fields::greater_than(0).below(1),
      "PPO ratio clip: the importance ratio is clipped to [1 - clip_epsilon, 1 + clip_epsilon]");
  }
};

/// Options of KLPENPPOLoss: the PPO options and the adaptive KL penalty.
/// Example: `KLPENPPOLossOptions().dtarg(0.01).beta(1.0)`
struct KLPENPPOLossOptions : ActorCriticOptions<KLPENPPOLossOptions> {
  /// Target KL divergence (> 0). Default 0.01.
  TORCH_ARG(double, dtarg) = 0.01;
  /// Initial penalty coefficient (>= 0). Default 1.0.
  TORCH_ARG(double, beta) = 1.0;
  /// beta is multiplied by increment when the batch KL exceeds 1.5 * dtarg (>= 1). Default 2.
  TORCH_ARG(double, increment) = 2.0;
  /// beta is multiplied by decrement when the batch KL is below dtarg / 1.5 (in (0, 1]).
  /// Default 0.5.
  TORCH_ARG(double, decrement) = 0.5;
  /// Samples for the Monte-Carlo KL of distributions without a closed-form KL (>= 1).
  /// Default 1.
  TORCH_ARG(int64_t, samples_mc_kl) = 1;

 public:
  /// The actor-critic options, then the KL penalty's.
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    ActorCriticOptions::fields(v);
    v("dtarg", dtarg_, tf::greater_than(0), "target KL divergence");
    v("beta", beta_, tf::at_least(0), "initial KL penalty coefficient");
    v("increment", increment_, tf::at_least(1),
      "beta is multiplied by this when the batch KL exceeds 1.5 * dtarg");
    v("decrement", decrement_, tf::greater_than(0).up_to(1),
      "beta is multiplied by this when the batch KL is below dtarg / 1.5");
    v("samples_mc_kl", samples_mc_kl_, tf::at_least(1),
      "samples for the Monte-Carlo KL of distributions without a closed-form KL");
  }
};

/// The unclipped PPO loss (TorchRL's PPOLoss): the importance-weighted advantage
/// `r = exp(log_prob(action) - sample_log_prob)`, `loss_objective = -mean(r * advantage)`.
///
/// Reads (names for set_keys → defaults): "advantage" → advantage `[*B, 1]` and
/// "value_target" → value_target `[*B, 1]` (both estimated when the advantage is missing, see
/// PolicyGradientLoss), "value" → state_value `[*B, 1]` (written by the critic; read from the
/// batch only with clip_value), "sample_log_prob" → sample_log_prob `[*B]` (the collecting
/// policy's log-probability; must not require grad), "action" → action, "reward" →
/// ("next", "reward"), "done" → ("next", "done"), "terminated" → ("next", "terminated")
/// (the last three only to estimate the advantage), plus the actor's and critic's in keys.
///
/// Writes (batch []): loss_objective, loss_entropy (with entropy_bonus), loss_critic (with a
/// critic); diagnostics (detached) entropy, explained_variance (the critic's, 1 -
/// Var(value_target - value) / Var(value_target)), value_clip_fraction (with clip_value), ESS (the
/// normalised effective sample size of the importance weights, `(sum w)^2 / sum w^2 / N`
/// along the first batch dim, averaged over the others) and kl_approx
/// (`mean(sample_log_prob - log_prob)`).
///
/// Errors: the constructor throws ValueError for a null actor or critic, or an option out of
/// range (listing valid values); forward throws KeyError for a missing key (naming it and its
/// set_keys name), ShapeError when sample_log_prob and the actor's log-prob, or the
/// advantage `[*B, 1]` and the log-weight, or the critic's value and value_target differ in
/// shape, ValueError when sample_log_prob requires grad.
/// Example:
/// ```
/// auto loss = std::make_shared<PPOLoss>(actor, critic, PPOLossOptions().entropy_coef(0.0));
/// auto out = loss->forward(batch);
/// (out.get("loss_objective") + out.get("loss_critic") + out.get("loss_entropy")).backward();
/// ```
class PPOLoss : public PolicyGradientLoss {
 public:
  PPOLoss(ActorPtr actor, CriticPtr critic, PPOLossOptions options = {});

  const PPOLossOptions& ppo_options() const { return ppo_options_; }

  /// `PPOLoss(entropy_bonus=true, entropy_coef=0.01, critic_coef=1, loss_critic_type=smooth_l1,
  /// normalize_advantage=false, separate_losses=false, clip_value=None)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  /// For subclasses: `name` starts error messages; `extra_out_keys` are the subclass's own
  /// entries (out_keys lists them after PPOLoss's).
  PPOLoss(std::string name, ActorPtr actor, CriticPtr critic, PPOLossOptions options,
          const std::vector<std::string>& extra_out_keys = {});

  TensorDict forward_impl(const TensorDict& batch) override;

  /// The importance log-weight `[*B, 1]`, the current distribution and kl_approx `[*B, 1]`.
  struct LogWeight {
    torch::Tensor log_weight;
    std::shared_ptr<tensordict::nn::Distribution> dist;
    torch::Tensor kl_approx;
    torch::Tensor log_prob;  ///< `[*B]`, the action's log-prob under `dist`
  };
  /// The log-weight of `td`'s action (running the actor on `td`, a shallow copy).
  LogWeight log_weight(const TensorDict& td) const;
  /// The advantage `[*B, 1]` checked against `log_weight`'s shape, normalised when asked.
  torch::Tensor checked_advantage(const TensorDict& td, const torch::Tensor& log_weight);
  /// Writes loss_entropy/entropy and loss_critic/value_clip_fraction into `out`.
  void add_entropy_and_critic(const TensorDict& out, const TensorDict& td, const LogWeight& lw,
                              const std::optional<torch::Tensor>& old_value);
  /// Writes ESS and kl_approx into `out`.
  static void add_weight_diagnostics(const TensorDict& out, const LogWeight& lw);
  /// Prints the PPO options (without the enclosing name and parentheses).
  void print_ppo_options(std::ostream& stream) const;

 private:
  PPOLossOptions ppo_options_;
};

/// PPO with a clipped surrogate (TorchRL's ClipPPOLoss): with the log-weight lw and its clip
/// `lw_c = clamp(lw, log(1 - eps), log(1 + eps))`,
/// `loss_objective = -mean(min(exp(lw) * advantage, exp(lw_c) * advantage))`.
/// Keys and errors as PPOLoss; writes, in addition, the clip_fraction diagnostic (the
/// fraction of log-weights outside the clip range). ValueError for clip_epsilon outside (0, 1).
/// Example:
/// ```
/// auto loss = std::make_shared<ClipPPOLoss>(actor, critic,
///                                           ClipPPOLossOptions().clip_epsilon(0.2));
/// loss->make_value_estimator(ValueEstimatorType::kGAE, ValueEstimatorOptions().lmbda(0.95));
/// ```
class ClipPPOLoss : public PPOLoss {
 public:
  ClipPPOLoss(ActorPtr actor, CriticPtr critic, ClipPPOLossOptions options = {});

  const ClipPPOLossOptions& options() const { return options_; }

  /// `ClipPPOLoss(clip_epsilon=0.2, entropy_bonus=true, ...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  ClipPPOLossOptions options_;
};

/// PPO with an adaptive KL penalty (TorchRL's KLPENPPOLoss):
/// `loss_objective = -mean(exp(lw) * advantage - beta * KL(pi_old || pi))`, where pi_old is
/// built from the distribution parameters stored in the batch (the actor's parameter keys,
/// e.g. loc and scale, as written during collection) and pi from the actor on the batch. The
/// KL is closed-form for Normal/IndependentNormal and Categorical/OneHotCategorical pairs,
/// else a Monte-Carlo estimate over samples_mc_kl draws of pi_old. After each forward, beta
/// (a buffer, saved with the loss) is multiplied by increment when mean KL > 1.5 * dtarg and
/// by decrement when mean KL < dtarg / 1.5.
///
/// Keys as PPOLoss, plus the actor's distribution parameter keys (read from the batch: a
/// missing one throws KeyError naming it). Writes, in addition, the kl diagnostic (mean KL).
/// ValueError for dtarg <= 0, beta < 0, increment < 1, decrement outside (0, 1] or
/// samples_mc_kl < 1.
/// Example: `auto loss = std::make_shared<KLPENPPOLoss>(actor, critic,
///                                                      KLPENPPOLossOptions().dtarg(0.01));`
class KLPENPPOLoss : public PPOLoss {
 public:
  KLPENPPOLoss(ActorPtr actor, CriticPtr critic, KLPENPPOLossOptions options = {});

  const KLPENPPOLossOptions& options() const { return options_; }
  /// The current penalty coefficient.
  double beta() const;

  /// `KLPENPPOLoss(dtarg=0.01, beta=1, increment=2, decrement=0.5, samples_mc_kl=1, ...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  // KL(previous || current) `[*B]`.
  torch::Tensor kl(const tensordict::nn::Distribution& previous,
                   const tensordict::nn::Distribution& current) const;

  KLPENPPOLossOptions options_;
  torch::Tensor beta_;
};

}  // namespace tdrl::losses
