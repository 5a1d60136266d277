#pragma once

/// TD3Loss: twin delayed deep deterministic policy gradient (TorchRL's TD3Loss).

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>

#include <tdrl/losses/actor_qvalue_loss.h>
#include <tdrl/losses/functional/distance.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/value_estimators.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/fields.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::losses {

/// Options of TD3Loss (TorchRL's constructor arguments).
/// Example: `TD3LossOptions().action_spec(spec).policy_noise(0.2).noise_clip(0.5)`
struct TD3LossOptions {
  /// The action spec, a Bounded one: its low/high bound the smoothed target actions. Default:
  /// the actor's spec when the actor is a ProbabilisticActor with one; otherwise required.
  TORCH_ARG(specs::TensorSpecPtr, action_spec);
  /// Std of the Gaussian noise added to the target action (target policy smoothing), in
  /// action units. Default 0.2.
  TORCH_ARG(double, policy_noise) = 0.2;
  /// The noise is clipped to [-noise_clip, noise_clip]. Default 0.5.
  TORCH_ARG(double, noise_clip) = 0.5;
  /// Distance between each Q_i(s, a) and the target: "l2", "l1" or "smooth_l1". Default
  /// "smooth_l1".
  TORCH_ARG(std::string, loss_function) = "smooth_l1";
  /// Choose the next action with a target copy of the actor. Default true.
  TORCH_ARG(bool, delay_actor) = true;
  /// Value the next state with target copies of the Q-networks. Default true.
  TORCH_ARG(bool, delay_qvalue) = true;

 public:
  /// Every option but action_spec (which comes from the env).
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    v("policy_noise", policy_noise_, tf::at_least(0),
      "std of the target policy smoothing noise, in action units");
    v("noise_clip", noise_clip_, tf::at_least(0), "clip of the smoothing noise");
    v("loss_function", loss_function_, tf::one_of(functional::distance_loss_names()),
      "distance between each Q_i(s, a) and the target");
    v("delay_actor", delay_actor_, "choose the next action with a target copy of the actor");
    v("delay_qvalue", delay_qvalue_, "value the next state with target copies of the Q-networks");
  }
};

/// The TD3 loss with N Q-value networks (TorchRL's num_qvalue_nets; twin critics = 2):
/// - loss_actor = -mean(Q_0(s, mu(s))): gradient to the actor only;
/// - loss_qvalue = sum_i mean(d(Q_i(s, a), y)), `y = r + gamma * (1 - terminated) *
///   min_i Q'_i(s', a')` with `a' = clamp(mu'(s') + clamp(N(0, policy_noise), -noise_clip,
///   noise_clip), low, high)` (TD(0) by default, see make_value_estimator): gradient to the
///   Q-networks only. Delaying actor updates is the trainer's business (call the actor's
///   optimiser every k steps).
///
/// Twin critics are N critic modules of the same architecture, one per Q-function, each
/// registered with its own parameters and target (networks "qvalue_network_0", ...). Build
/// them independently so that they are initialised independently. (One module evaluated
/// with N parameter sets would need a functional call that LibTorch modules lack; the
/// networks' GEMMs dominate the time, so a loop over modules costs little, see
/// docs/performance.md.)
///
/// The actor is deterministic, writing the "action" key; each Q-network reads the
/// observation keys and the "action" key and writes `[*B, 1]` under "state_action_value".
///
/// Keys (names for set_keys → defaults): "action" → action, "state_action_value" →
/// state_action_value, "reward" → ("next", "reward"), "done" → ("next", "done"),
/// "terminated" → ("next", "terminated"), "priority" → td_error, "priority_weight" →
/// _weight. Reads action, reward, done, terminated, the networks' in keys at the root and
/// under "next", priority_weight `[*B]` when present. Writes into the batch only priority
/// `[*B]` = max_i |Q_i(s, a) - y|, after everything succeeded.
///
/// Returns (batch size []): loss_actor, loss_qvalue, and detached diagnostics pred_value
/// (mean of Q_i(s, a)), state_action_value_actor (mean Q_0(s, mu(s))), next_state_value
/// and target_value (means).
///
/// Errors: the constructor throws ValueError for a null network, a network without
/// parameters, no Q-network or the same one twice, no action spec or one that is not
/// Bounded, a negative policy_noise/noise_clip, an unknown loss_function. forward throws as
/// DDPGLoss does.
///
/// Example:
/// ```
/// auto loss = std::make_shared<TD3Loss>(actor, std::vector<ValueOperator>{q1, q2},
///                                       TD3LossOptions().action_spec(action_spec));
/// ```
class TD3Loss : public ActorQValueLoss<tensordict::nn::TensorDictModuleBase> {
 public:
  TD3Loss(Actor actor_network, QNetworks qvalue_networks, TD3LossOptions options = {});

  const TD3LossOptions& options() const { return options_; }

  /// `TD3Loss(num_qvalue_nets=2, policy_noise=0.2, noise_clip=0.5, loss_function=smooth_l1,
  /// delay_actor=true, delay_qvalue=true, value_estimator=...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  TD3LossOptions options_;
  torch::Tensor low_;
  torch::Tensor high_;
};

}  // namespace tdrl::losses
