#pragma once

/// The advantage actor-critic loss (TorchRL's A2CLoss).

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>

#include <tdrl/losses/policy_gradient.h>

namespace tdrl::losses {

/// Options of A2CLoss.
/// Example: `A2CLossOptions().entropy_coef(0.01).critic_coef(0.5).loss_critic_type("l2")`
struct A2CLossOptions {
  /// Add the entropy bonus term loss_entropy (and the entropy diagnostic). Default true.
  TORCH_ARG(bool, entropy_bonus) = true;
  /// Reparametrised samples for the Monte-Carlo entropy of distributions without a
  /// closed-form entropy (TanhNormal). At least 1. Default 1.
  TORCH_ARG(int64_t, samples_mc_entropy) = 1;
  /// Weight of the entropy bonus: loss_entropy = -entropy_coef * mean(entropy). Default 0.01.
  TORCH_ARG(double, entropy_coef) = 0.01;
  /// Weight of the critic loss: loss_critic = critic_coef * mean(distance). Default 1.0.
  TORCH_ARG(double, critic_coef) = 1.0;
  /// "l1", "l2" or "smooth_l1" (see functional::distance_loss). Default "smooth_l1".
  TORCH_ARG(std::string, loss_critic_type) = "smooth_l1";
  /// Standardise the advantage over the batch forward gets (mean 0, std 1) before use.
  /// Default false.
  TORCH_ARG(bool, normalize_advantage) = false;
  /// Keep the critic loss out of parameters the critic shares with the actor. Default false.
  TORCH_ARG(bool, separate_losses) = false;
  /// Clip the critic's change from the batch's value to ±clip_value (see
  /// PolicyGradientLoss::write_critic_loss); > 0. Default none.
  TORCH_ARG(std::optional<double>, clip_value) = std::nullopt;
};

/// A2C (TorchRL's A2CLoss): `loss_objective = -mean(log_prob(action) * advantage)` with the
/// current policy's log-probability of the batch's action, the critic regressed on
/// value_target, and an entropy bonus.
///
/// Reads (names for set_keys → defaults): "advantage" → advantage `[*B, 1]` and
/// "value_target" → value_target `[*B, 1]` (estimated when the advantage is missing, see
/// PolicyGradientLoss), "value" → state_value `[*B, 1]` (written by the critic; read from the
/// batch only with clip_value), "action" → action, "reward" → ("next", "reward"), "done" →
/// ("next", "done"), "terminated" → ("next", "terminated") (the last three only to estimate
/// the advantage), plus the actor's and critic's in keys.
///
/// Writes (batch []): loss_objective, loss_entropy (with entropy_bonus), loss_critic;
/// diagnostics entropy and value_clip_fraction (with clip_value).
///
/// Errors: ValueError from the constructor for a null actor or critic, or an option out of
/// range; forward throws KeyError for a missing key (naming it and its set_keys name),
/// ShapeError when the advantage is not `[*B, 1]` for the log-prob `[*B]`, or the critic's
/// value and value_target differ in shape.
/// Example:
/// ```
/// auto loss = std::make_shared<A2CLoss>(actor, critic, A2CLossOptions().entropy_coef(0.01));
/// auto out = loss->forward(rollout);  // estimates the advantage with GAE if missing
/// ```
class A2CLoss : public PolicyGradientLoss {
 public:
  A2CLoss(ActorPtr actor, CriticPtr critic, A2CLossOptions options = {});

  const A2CLossOptions& options() const { return options_; }

  /// `A2CLoss(entropy_bonus=true, entropy_coef=0.01, critic_coef=1, ...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  A2CLossOptions options_;
};

}  // namespace tdrl::losses
