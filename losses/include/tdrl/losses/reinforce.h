#pragma once

/// The REINFORCE loss with an optional baseline critic (TorchRL's ReinforceLoss).

#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>

#include <tdrl/losses/policy_gradient.h>

namespace tdrl::losses {

/// Options of ReinforceLoss.
/// Example: `ReinforceLossOptions().delay_value(true).loss_critic_type("l2")`
struct ReinforceLossOptions {
  /// Keep target parameters for the critic ("critic_network" target, updated with
  /// SoftUpdate/HardUpdate), used for the next-state values of the advantage estimate.
  /// Needs a critic. Default false.
  TORCH_ARG(bool, delay_value) = false;
  /// "l1", "l2" or "smooth_l1" (see functional::distance_loss). Default "smooth_l1".
  TORCH_ARG(std::string, loss_critic_type) = "smooth_l1";
  /// Keep the critic loss out of parameters the critic shares with the actor. Default false.
  TORCH_ARG(bool, separate_losses) = false;
  /// Clip the critic's change from the batch's value to ±clip_value (see
  /// PolicyGradientLoss::write_critic_loss); > 0. Default none.
  TORCH_ARG(std::optional<double>, clip_value) = std::nullopt;
};

/// REINFORCE (TorchRL's ReinforceLoss): `loss_actor = -mean(log_prob(action) * advantage)`
/// with the current policy's log-probability of the batch's action, and, with a critic,
/// `loss_value = mean(distance(value_target, value))` (no coefficient, as TorchRL).
///
/// The critic is optional (nullptr): without it the batch must hold the advantage (e.g.
/// Monte-Carlo returns minus a baseline computed elsewhere) and no loss_value is written.
///
/// Reads (names for set_keys → defaults): "advantage" → advantage `[*B, 1]` and
/// "value_target" → value_target `[*B, 1]` (estimated when the advantage is missing, see
/// PolicyGradientLoss), "value" → state_value `[*B, 1]` (written by the critic; read from the
/// batch only with clip_value), "action" → action, "reward" → ("next", "reward"), "done" →
/// ("next", "done"), "terminated" → ("next", "terminated") (the last three only to estimate
/// the advantage), plus the actor's and critic's in keys.
///
/// Writes (batch []): loss_actor, loss_value (with a critic); value_clip_fraction (with
/// clip_value).
///
/// Errors: ValueError from the constructor for a null actor, delay_value without a critic, or
/// an option out of range; forward throws as A2CLoss.
/// Example:
/// ```
/// auto loss = std::make_shared<ReinforceLoss>(actor, critic,
///                                             ReinforceLossOptions().delay_value(true));
/// SoftUpdate updater(loss, 0.01);
/// ```
class ReinforceLoss : public PolicyGradientLoss {
 public:
  ReinforceLoss(ActorPtr actor, CriticPtr critic, ReinforceLossOptions options = {});

  const ReinforceLossOptions& options() const { return options_; }

  /// `ReinforceLoss(delay_value=false, loss_critic_type=smooth_l1, ...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  ReinforceLossOptions options_;
};

}  // namespace tdrl::losses
