#pragma once

/// PolicyGradientLoss: the shared base of the on-policy losses (PPOLoss, ClipPPOLoss,
/// KLPENPPOLoss, A2CLoss, ReinforceLoss). It owns the actor, the optional critic and the value
/// estimator, and gives its subclasses the steps they share: the advantage (read or
/// estimated), the actor's distribution on the batch, the entropy bonus and the critic's
/// regression loss.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <tdrl/losses/functional/distance.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/value_estimators.h>
#include <tensordict/arg.h>
#include <tensordict/fields.h>
#include <tensordict/nn/distribution.h>
#include <tensordict/nn/probabilistic.h>
#include <tensordict/nn/tanh_normal.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::losses {

/// An actor whose `get_dist(td)` gives the current policy: a ProbabilisticActor (or any
/// ProbabilisticTensorDictSequential), as a holder or a shared_ptr.
using ActorPtr = tensordict::nn::ModulePtr<tensordict::nn::ProbabilisticTensorDictSequentialImpl>;
/// A critic writing the state value (e.g. tdrl::modules::ValueOperator), as a holder or a
/// shared_ptr; null where a loss takes no critic.
using CriticPtr = NetworkPtr;

/// The options of the actor-critic policy-gradient losses (A2CLoss and every PPO loss);
/// `Derived` is the concrete options struct, so chained calls keep its type
/// (`ClipPPOLossOptions().entropy_coef(0).clip_epsilon(0.1)`). `fields` declares them for
/// tensordict/fields.h readers (tdrl's config layer).
template <class Derived>
class ActorCriticOptions {
 public:
  /// Add the entropy bonus term loss_entropy (and the entropy diagnostic). Default true.
  TDRL_CRTP_ARG(Derived, bool, entropy_bonus) = true;
  /// Reparametrised samples for the Monte-Carlo entropy of distributions without a
  /// closed-form entropy (TanhNormal). At least 1. Default 1.
  TDRL_CRTP_ARG(Derived, int64_t, samples_mc_entropy) = 1;
  /// Weight of the entropy bonus: loss_entropy = -entropy_coef * mean(entropy). Default 0.01.
  TDRL_CRTP_ARG(Derived, double, entropy_coef) = 0.01;
  /// Weight of the critic loss: loss_critic = critic_coef * mean(distance). Default 1.0.
  TDRL_CRTP_ARG(Derived, double, critic_coef) = 1.0;
  /// "l1", "l2" or "smooth_l1" (see functional::distance_loss). Default "smooth_l1".
  TDRL_CRTP_ARG(Derived, std::string, loss_critic_type) = "smooth_l1";
  /// Standardise the advantage over the batch before use. Default false.
  TDRL_CRTP_ARG(Derived, bool, normalize_advantage) = false;
  /// Keep the critic loss out of parameters the critic shares with the actor. Default false.
  TDRL_CRTP_ARG(Derived, bool, separate_losses) = false;
  /// Clip the critic's change from the batch's (collection-time) value to ±clip_value and
  /// take the larger of the clipped and unclipped losses (needs the value key in the batch).
  /// Must be > 0. Default none.
  TDRL_CRTP_ARG(Derived, std::optional<double>, clip_value);

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    v("entropy_bonus", entropy_bonus_,
      "add the entropy bonus term loss_entropy, weighted by entropy_coef");
    v("samples_mc_entropy", samples_mc_entropy_, tf::at_least(1),
      "samples for the Monte-Carlo entropy of distributions without a closed form (TanhNormal)");
    v("entropy_coef", entropy_coef_, tf::at_least(0),
      "weight of the entropy bonus: loss_entropy = -entropy_coef * mean(entropy)");
    v("critic_coef", critic_coef_, tf::at_least(0), "weight of the critic loss");
    v("loss_critic_type", loss_critic_type_, tf::one_of(functional::distance_loss_names()),
      "critic loss: the distance between the value and its target");
    v("normalize_advantage", normalize_advantage_,
      "standardise the advantage over each (mini)batch before use");
    v("separate_losses", separate_losses_,
      "keep the critic loss out of parameters the critic shares with the actor");
    v("clip_value", clip_value_, tf::greater_than(0),
      "clip the critic's change from the batch's value to +-clip_value, taking the larger of "
      "the clipped and unclipped losses (null: no clip)");
  }
};

/// Base of the policy-gradient losses. Not a loss by itself (its constructor is protected);
/// derive from it to write another on-policy loss with the same plumbing.
///
/// Networks: the actor is registered as "actor_network", the critic (when there is one) as
/// "critic_network" (with target parameters when the subclass asks for them, e.g.
/// ReinforceLoss's delay_value), so `params("actor_network")` and `loss->parameters()` see
/// them. An actor and a critic that share modules (a shared trunk) share parameters: with
/// separate_losses the critic loss does not reach the shared ones (they are trained by the
/// actor's terms only). Note that `loss->parameters()` then lists a shared parameter once per
/// network; give the optimiser each parameter once.
///
/// Keys (names for set_keys → defaults; docs/keys.md): "advantage" → advantage,
/// "value_target" → value_target, "value" → state_value (what the critic writes),
/// subclass keys (e.g. "sample_log_prob"), "action" → action, "reward" → ("next", "reward"),
/// "done" → ("next", "done"), "terminated" → ("next", "terminated"). The actor's and the
/// critic's own in keys are read too (they throw KeyError naming the module and the key).
///
/// Value estimation: when the batch (`[*B, T]`, time the last batch dim) has no advantage,
/// forward evaluates the critic without gradient on the batch and on batch["next"] (with the
/// target parameters for the next state when the critic has a target), and the value
/// estimator (GAE with gamma 0.99, lmbda 0.95 by default, as TorchRL) writes advantage and
/// value_target into a shallow copy of the batch: the caller's batch is never written to.
///
/// Thread safety: like any torch::nn::Module. forward writes only its own outputs and a shallow
/// copy of the batch, but it toggles requires_grad of shared parameters (separate_losses) and
/// KLPENPPOLoss adapts its beta: do not run two forwards of one loss concurrently.
class PolicyGradientLoss : public LossModule {
 public:
  /// The actor.
  const ActorPtr& actor_network() const { return actor_; }
  /// The critic, or nullptr.
  const CriticPtr& critic_network() const { return critic_; }

 protected:
  /// The out_keys of an actor-critic loss: `objective`, then "entropy" when the loss reports
  /// it (`entropy`) and "loss_entropy" with an entropy bonus, `critic`, "explained_variance",
  /// and "value_clip_fraction" with a clipped value loss.
  static std::vector<std::string> actor_critic_out_keys(const std::string& objective,
                                                        const std::string& critic, bool entropy,
                                                        bool entropy_bonus, bool clip_value);

  /// `extra_keys` are declared after "value" (see the class comment for the order);
  /// `in_key_names` are checked present before forward_impl runs. Throws ValueError for a
  /// null actor, or `critic_target` without a critic.
  PolicyGradientLoss(std::string name, ActorPtr actor, CriticPtr critic,
                     std::vector<std::pair<std::string, NestedKey>> extra_keys,
                     std::vector<std::string> in_key_names, bool critic_target,
                     bool separate_losses);

  void on_keys_changed() override;
  /// GAE (gamma 0.99, lmbda 0.95), as TorchRL.
  ValueEstimatorType default_value_estimator() const override { return ValueEstimatorType::kGAE; }
  /// Any estimator, around the critic; its keys follow this loss's keys (also after set_keys),
  /// and `value_estimator()->forward(rollout)` writes advantage and value_target into
  /// `rollout` with the critic's current parameters. Throws ValueError when the loss has no
  /// critic, and what the estimator throws (ValueError for gamma or lmbda outside [0, 1]).
  std::shared_ptr<ValueEstimatorBase> build_value_estimator(
      ValueEstimatorType type, const ValueEstimatorOptions& options) override;

  /// The advantage `[*B, 1]` (detached): `td`'s, or, when it has none, estimated and written
  /// with value_target into `td` (pass a shallow copy of the batch, `batch.clone(false)`).
  /// Throws KeyError naming the advantage key when it is missing and there is no critic,
  /// ShapeError when estimation needs a time dim the batch lacks, and what the estimator
  /// throws (KeyError naming a missing reward/done/terminated key, ShapeError for mismatched
  /// shapes).
  torch::Tensor advantage(const TensorDict& td);
  /// `advantage` standardised over all its elements (mean 0, std 1, std clamped at 1e-6);
  /// unchanged when it has a single element.
  static torch::Tensor normalize(const torch::Tensor& advantage);

  /// The actor's distribution on `td` (running its deterministic part, which writes the
  /// distribution parameters into `td`).
  std::shared_ptr<tensordict::nn::Distribution> get_dist(const TensorDict& td) const;
  /// The log-probability `[*B]` of `td`'s action under `dist`.
  torch::Tensor action_log_prob(const tensordict::nn::Distribution& dist,
                                const TensorDict& td) const;
  /// What policy_gradient_term computes.
  struct PolicyGradientTerm {
    std::shared_ptr<tensordict::nn::Distribution> dist;  ///< the actor's distribution on `td`
    torch::Tensor log_prob;  ///< `[*B, 1]`: the batch's actions under `dist`
    torch::Tensor loss;      ///< scalar: -mean(log_prob * advantage)
  };
  /// The vanilla policy-gradient term of A2C and REINFORCE, -mean(log pi(a|s) * advantage),
  /// with the distribution and log-prob it used (for the entropy terms). Throws ShapeError
  /// when `advantage` is not `[*B, 1]` like the log-prob.
  PolicyGradientTerm policy_gradient_term(const TensorDict& td,
                                          const torch::Tensor& advantage) const;
  /// The entropy `[*B, 1]` of `dist`: closed-form when it has one, else the Monte-Carlo
  /// estimate `-mean(log_prob(x))` over `samples` reparametrised draws x (gradients flow
  /// through them). Throws TypeError for a distribution with neither (no closed form, no
  /// rsample), suggesting entropy_bonus(false).
  torch::Tensor entropy(const tensordict::nn::Distribution& dist, int64_t samples) const;
  /// The Monte-Carlo entropy `[*B, 1]` of a TanhNormal over `samples` reparametrised draws,
  /// with each draw's log-density computed from its Gaussian pre-image (what `entropy` uses
  /// for TanhNormal).
  static torch::Tensor tanh_normal_entropy(const tensordict::nn::TanhNormal& dist, int64_t samples);
  /// Writes "entropy" into `out` (the batch mean, detached) and, with `bonus`, "loss_entropy"
  /// = -coef * the mean entropy (gradients flow). With the bonus the entropy is
  /// entropy(dist, samples). Without it, "entropy" is a diagnostic only: the closed form where
  /// `dist` has one, else -mean `log_prob` (the batch's actions' log-prob under `dist`, which
  /// the caller has computed for its objective; the actions were drawn by the policy that
  /// collected them, so this is exact in expectation before the first update). No sample is
  /// drawn: the training's random stream stays what it is without the diagnostic.
  void write_entropy(const TensorDict& out, const tensordict::nn::Distribution& dist,
                     const torch::Tensor& log_prob, bool bonus, double coef, int64_t samples) const;

  /// The batch's value (the critic's output at collection time) when `clip_value` is set, for
  /// write_critic_loss; nullopt otherwise. Throws KeyError naming the value key when it is missing.
  std::optional<torch::Tensor> old_value(const TensorDict& batch,
                                         const std::optional<double>& clip_value) const;
  /// Runs the critic on `td` (with gradient, except into parameters shared with the actor
  /// under separate_losses) and writes the critic's entries of actor_critic_out_keys into
  /// `out`:
  /// - `term` = coef * the mean of `distance_loss(value_target, value, loss_critic_type)`;
  ///   with `clip_value` c, of TorchRL's pessimistic clipped loss
  ///   `max(loss, distance(value_target, old + clamp(value - old, -c, c)))`;
  /// - "explained_variance" (detached): 1 - Var(target - value) / Var(target) over the batch
  ///   (1: the critic explains the targets; 0: no better than their mean; NaN when the targets
  ///   are constant);
  /// - with clip_value, "value_clip_fraction" (detached): the fraction of clipped values.
  /// Throws KeyError for a missing value_target, or when the critic does not write the value
  /// key; ShapeError when value_target, the value and the old value differ in shape.
  void write_critic_loss(const TensorDict& out, const TensorDict& td, const std::string& term,
                         double coef, const std::string& loss_critic_type,
                         const std::optional<torch::Tensor>& old_value,
                         const std::optional<double>& clip_value);

  /// Throws ValueError unless `value` > 0 (`option` names it).
  void check_positive(const std::string& option, double value) const;

 private:
  // Writes advantage and value_target into `td`.
  void estimate(const TensorDict& td);
  // The value the critic wrote into `td`; KeyError when it writes another key.
  torch::Tensor critic_value(const TensorDict& td) const;

  ActorPtr actor_;
  CriticPtr critic_;
  // The critic's parameters that are also the actor's, frozen for the critic loss under
  // separate_losses (empty otherwise).
  std::vector<torch::Tensor> shared_params_;
};

}  // namespace tdrl::losses
