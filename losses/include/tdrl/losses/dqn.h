#pragma once

/// DQNLoss: deep Q-learning (TorchRL's DQNLoss), with target network and double DQN; and
/// DistributionalDQNLoss (C51, TorchRL's DistributionalDQNLoss).

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tdrl/losses/functional/distance.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/value_estimators.h>
#include <tensordict/fields.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::losses {

/// Options of DQNLoss (TorchRL's constructor arguments).
/// Example: `DQNLossOptions().double_dqn(true).loss_function("smooth_l1")`
struct DQNLossOptions {
  /// Distance between Q(s, a) and its target: "l2" (squared error), "l1" or "smooth_l1"
  /// (Huber, beta 1). Default "l2".
  TORCH_ARG(std::string, loss_function) = "l2";
  /// Compute targets with a target copy of the Q-network (updated by SoftUpdate/HardUpdate).
  /// Without it the online network is used, without gradient. Default true.
  TORCH_ARG(bool, delay_value) = true;
  /// Double DQN: the online network picks the next action, the target network values it.
  /// Default false.
  TORCH_ARG(bool, double_dqn) = false;
  /// "one_hot" (action `[*B, n]`) or "categorical" (action `[*B]`, integer). Default: the
  /// value network's when it is a QValueActor given an action_space or a spec, else read from
  /// each batch's action shape.
  TORCH_ARG(std::optional<std::string>, action_space);

 public:
  /// loss_function, delay_value and double_dqn (action_space comes from the network or the
  /// batch, not from a config).
  void fields(tensordict::fields::FieldVisitor& v) {
    v("loss_function", loss_function_,
      tensordict::fields::one_of(functional::distance_loss_names()),
      "distance between Q(s, a) and its target");
    v("delay_value", delay_value_,
      "compute targets with a target copy of the Q-network (updated by algo.target_update)");
    v("double_dqn", double_dqn_,
      "double DQN: the online network picks the next action, the target network values it");
  }
};

/// The DQN loss: `loss = mean(d(Q(s, a), y))` with d the loss_function and the target
/// `y = r + gamma * (1 - terminated) * max_a' Q_target(s', a')` (TD(0) by default; see
/// make_value_estimator). With double_dqn, `a' = argmax Q(s', .)` of the online network and
/// `y` uses `Q_target(s', a')`.
///
/// The value network is a QValueActor, or any TensorDict module writing action values
/// `[*B, n]` under the "action_value" key. On the next state, when the network also writes
/// the "value" key (chosen_action_value) and the "action" key, as a QValueActor does, those
/// give the greedy value and action (so an action mask is honoured); otherwise they are the
/// max and argmax of the action values.
///
/// Keys (names for set_keys → defaults): "action" → action, "action_value" → action_value,
/// "value" → chosen_action_value, "reward" → ("next", "reward"), "done" → ("next", "done"),
/// "terminated" → ("next", "terminated"), "priority" → td_error, "priority_weight" →
/// _weight, "burn_in" → burn_in. Reads action, reward, done, terminated (`[*B, 1]`, like the
/// Q-value), the network's in keys at the root and under "next"; reads priority_weight `[*B]`
/// when present (it then weights each sample's loss, as prioritized replay asks) and burn_in
/// (bool `[*B]` or `[*B, 1]`, a SliceSampler's) when present: flagged steps are left out of
/// the loss and its diagnostics. Writes into the batch only priority `[*B]` = |Q(s, a) - y|
/// (detached), after everything else succeeded.
///
/// Recurrent Q-networks (R2D2): when the network holds recurrent cores (LSTMModule,
/// GRUModule), the batch is `[N, L]` sequences (a SliceSampler's, reshaped), time last. The
/// network runs in sequence mode over them (from the state stored at each sequence's first
/// step, or zeros where is_init is set), writing its state after every step; the next state's
/// values run in step mode from those states, the target network's from its own pass over the
/// sequences. With burn-in flags (the same first K steps of every sequence, a SliceSampler's),
/// those steps only warm each network's state up, without gradient, and the loss runs on the
/// rest from there (R2D2); their priorities are 0. A TD(lambda) or TD(1) estimator
/// (make_value_estimator) then runs along each sequence's time dim after the burn-in: multi-step
/// targets cut at episode ends and bootstrapped from the next value at a sequence's last step
/// (tdrl-train's algo.lmbda). The cores' modes are restored after.
///
/// Returns (batch size []): "loss_value" (TorchRL names it "loss"; every term here is
/// loss_*), and the detached
/// diagnostics "pred_value" (mean Q(s, a)) and "target_value" (mean y).
///
/// Networks: "value_network" (with a target when delay_value).
///
/// Errors: the constructor throws ValueError for a null network, one without parameters, an
/// unknown loss_function or action_space. forward throws KeyError for a missing key (naming
/// it and its set_keys name), ValueError when the network does not write "action_value",
/// ShapeError when the action fits neither action space or reward/done/terminated differ in
/// shape from Q(s, a) `[*B, 1]`; the batch is then unchanged.
///
/// Example:
/// ```
/// QValueActor actor(MLP(MLPOptions(4, 2)));
/// auto loss = std::make_shared<DQNLoss>(actor, DQNLossOptions().double_dqn(true));
/// loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(0.99));
/// HardUpdate updater(loss, 100);
/// auto out = loss->forward(batch);  out.get("loss_value").backward();
/// ```
class DQNLoss : public LossModule {
 public:
  DQNLoss(NetworkPtr value_network, DQNLossOptions options = {});

  const DQNLossOptions& options() const { return options_; }
  /// "one_hot", "categorical", or "" when read from each batch's action.
  const std::string& action_space() const { return action_space_; }

  /// `DQNLoss(loss_function=l2, delay_value=true, double_dqn=false, action_space=one_hot,
  /// value_estimator=TD0Estimator(gamma=0.99, ...))`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  // The next state's value `[*B, 1]` (no gradient). `online` holds the online network's pass
  // over the batch (its states after each step, for a recurrent network); `target_start`, the
  // target network's own state at the batch's first steps (after a burn-in).
  torch::Tensor next_value(const TensorDict& batch, const TensorDict& online,
                           const std::optional<TensorDict>& target_start);
  // A recurrent network's state after running over `prefix` (sequences [N, K], no gradient), as
  // each hidden entry for sequences of `steps` steps that start there.
  TensorDict warm_state(const TensorDict& prefix, bool use_target, int64_t steps);

  std::shared_ptr<tensordict::nn::TensorDictModuleBase> value_network_;
  DQNLossOptions options_;
  std::string action_space_;  // "" when read from each batch
};

/// Options of DistributionalDQNLoss; the support is required.
/// Example: `DistributionalDQNLossOptions(torch::linspace(-10, 10, 51))`
struct DistributionalDQNLossOptions {
  explicit DistributionalDQNLossOptions(torch::Tensor support) : support_(std::move(support)) {}
  /// The atoms z_1 < ... < z_K `[K]`, evenly spaced (TorchRL's DistributionalQValueActor
  /// support), K >= 2.
  TORCH_ARG(torch::Tensor, support);
  /// Compute targets with a target copy of the network. Default true.
  TORCH_ARG(bool, delay_value) = true;
  /// "one_hot" or "categorical"; default read from each batch's action shape.
  TORCH_ARG(std::optional<std::string>, action_space);
};

/// The categorical distributional DQN loss (C51, Bellemare et al. 2017). The value network
/// writes, under "action_value", log-probabilities `[*B, K, n]` over the K atoms of the
/// support for each of the n actions (log-softmax over dim -2, TorchRL's
/// DistributionalQValueActor layout). With p' the target network's distribution at s' for
/// the greedy action a' = argmax_a sum_k z_k p'(z_k | s', a), each atom is moved to
/// `Tz_k = r + gamma * (1 - terminated) * z_k`, clamped to [z_1, z_K] and split between its two
/// neighbouring atoms (the projection m); `loss = mean(-sum_k m_k log p(z_k | s, a))`.
///
/// Keys (names for set_keys → defaults): "action" → action, "action_value" → action_value,
/// "reward", "done", "terminated" (under "next", `[*B, 1]`), "priority" → td_error,
/// "priority_weight" → _weight. Writes into the batch only priority `[*B]` = each sample's
/// cross-entropy (TorchRL's), after everything succeeded. Returns "loss_value" (batch size []).
///
/// Value estimator: TD(0) only (the projection is a one-step backup); its gamma is used.
///
/// Errors: the constructor throws ValueError for a null network or one without parameters, a
/// support that is not 1-D, has fewer than 2 atoms or is not increasing, an unknown
/// action_space. forward throws KeyError for a missing key, ShapeError when the action
/// values are not `[*B, K, n]` or reward/terminated are not `[*B, 1]`.
/// Example:
/// ```
/// auto loss = std::make_shared<DistributionalDQNLoss>(
///     net, DistributionalDQNLossOptions(torch::linspace(-10, 10, 51)));
/// ```
class DistributionalDQNLoss : public LossModule {
 public:
  DistributionalDQNLoss(NetworkPtr value_network, DistributionalDQNLossOptions options);

  const DistributionalDQNLossOptions& options() const { return options_; }

  /// `DistributionalDQNLoss(num_atoms=51, v_min=-10, v_max=10, delay_value=true, gamma=0.99)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;
  /// Only TD0 (the distributional backup is one-step); ValueError otherwise.
  std::shared_ptr<ValueEstimatorBase> build_value_estimator(
      ValueEstimatorType type, const ValueEstimatorOptions& options) override;

 private:
  // The network's log-probabilities `[*B, K, n]` on `td`, checked.
  torch::Tensor log_probs(const TensorDict& td, int64_t batch_dims) const;

  std::shared_ptr<tensordict::nn::TensorDictModuleBase> value_network_;
  DistributionalDQNLossOptions options_;
  torch::Tensor support_;
};

}  // namespace tdrl::losses
