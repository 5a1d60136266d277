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
struct A2CLossOptions : ActorCriticOptions<A2CLossOptions> {};

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
