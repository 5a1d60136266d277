#pragma once

/// DDPGLoss: deep deterministic policy gradient (TorchRL's DDPGLoss).

#include <memory>
#include <ostream>
#include <string>
#include <utility>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>

#include <tdrl/losses/functional/distance.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/value_estimators.h>
#include <tensordict/fields.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::losses {

/// Options of DDPGLoss (TorchRL's constructor arguments).
/// Example: `DDPGLossOptions().loss_function("smooth_l1").delay_actor(true)`
struct DDPGLossOptions {
  /// Distance between Q(s, a) and its target: "l2", "l1" or "smooth_l1". Default "l2".
  TORCH_ARG(std::string, loss_function) = "l2";
  /// Choose the next action with a target copy of the actor. Default false (TorchRL's): the
  /// actor itself, without gradient.
  TORCH_ARG(bool, delay_actor) = false;
  /// Value the next state with a target copy of the critic. Default true.
  TORCH_ARG(bool, delay_value) = true;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    v("loss_function", loss_function_,
      tensordict::fields::one_of(functional::distance_loss_names()),
      "distance between Q(s, a) and its target");
    v("delay_actor", delay_actor_, "choose the next action with a target copy of the actor");
    v("delay_value", delay_value_, "value the next state with a target copy of the critic");
  }
};

/// The DDPG loss:
/// - loss_actor = -mean(Q(s, mu(s))): gradient to the actor only (the critic's parameters are
///   held out of this term);
/// - loss_value = mean(d(Q(s, a), y)), `y = r + gamma * (1 - terminated) * Q'(s', mu'(s'))`
///   (TD(0) by default, see make_value_estimator), mu' and Q' the target copies (or the
///   networks themselves without delay, never differentiated): gradient to the critic only.
///
/// The actor is deterministic: a TensorDict module writing the "action" key (e.g. a
/// TensorDictModule over an MLP with a tanh head). The critic (value_network) is a
/// ValueOperator-like module reading the observation keys and the "action" key and writing
/// `[*B, 1]` under "state_action_value".
///
/// Keys (names for set_keys → defaults): "action" → action, "state_action_value" →
/// state_action_value, "reward" → ("next", "reward"), "done" → ("next", "done"),
/// "terminated" → ("next", "terminated"), "priority" → td_error, "priority_weight" →
/// _weight. Reads action, reward, done, terminated, the networks' in keys at the root and
/// under "next", and priority_weight `[*B]` when present (weighting loss_value per sample).
/// Writes into the batch only priority `[*B]` = |Q(s, a) - y|, after everything succeeded.
///
/// Returns (batch size []): loss_actor, loss_value, and detached diagnostics pred_value,
/// target_value (means), pred_value_max, target_value_max.
///
/// Networks: "actor_network" (target when delay_actor), "value_network" (target when
/// delay_value).
///
/// Errors: the constructor throws ValueError for a null network, one without parameters or
/// an unknown loss_function. forward throws KeyError for a missing key, ValueError when the
/// actor does not write the action key or the critic does not read it or write
/// state_action_value, ShapeError when reward/done/terminated differ in shape from Q(s, a).
///
/// Example:
/// ```
/// auto loss = std::make_shared<DDPGLoss>(actor, critic, DDPGLossOptions());
/// SoftUpdate updater(loss, 0.005);
/// auto out = loss->forward(batch);
/// (out.get("loss_actor") + out.get("loss_value")).backward();
/// ```
class DDPGLoss : public LossModule {
 public:
  DDPGLoss(NetworkPtr actor_network, NetworkPtr value_network, DDPGLossOptions options = {});

  const DDPGLossOptions& options() const { return options_; }

  /// `DDPGLoss(loss_function=l2, delay_actor=false, delay_value=true, value_estimator=...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  std::shared_ptr<tensordict::nn::TensorDictModuleBase> actor_network_;
  std::shared_ptr<tensordict::nn::TensorDictModuleBase> value_network_;
  DDPGLossOptions options_;
};

}  // namespace tdrl::losses
