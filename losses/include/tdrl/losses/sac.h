#pragma once

/// SACLoss and DiscreteSACLoss: soft actor-critic for continuous actions (TorchRL's SACLoss,
/// version 2: twin Q-networks, no state-value network) and for discrete actions (TorchRL's
/// DiscreteSACLoss).

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>

#include <tdrl/losses/actor_qvalue_loss.h>
#include <tdrl/losses/functional/distance.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/temperature.h>
#include <tdrl/losses/value_estimators.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/fields.h>
#include <tensordict/nn/probabilistic.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::losses {

/// Options of SACLoss (TorchRL's constructor arguments). The temperature options
/// (alpha_init, min_alpha, max_alpha, fixed_alpha, target_entropy) come from
/// TemperatureOptions; the "auto" target entropy is -prod(action shape), the action shape taken
/// from action_spec, else from the actor's spec, else from the distribution's event shape at
/// the first forward.
/// Example: `SACLossOptions().alpha_init(0.2).target_entropy(-6.0)`
struct SACLossOptions : TemperatureOptions<SACLossOptions> {
  /// Distance between each Q_i(s, a) and the target: "l2", "l1" or "smooth_l1". Default
  /// "smooth_l1".
  TORCH_ARG(std::string, loss_function) = "smooth_l1";
  /// The action spec, for target_entropy "auto". Default none (see above).
  TORCH_ARG(specs::TensorSpecPtr, action_spec);
  /// Value the next state with target copies of the Q-networks. Default true.
  TORCH_ARG(bool, delay_qvalue) = true;

 public:
  /// The temperature options, loss_function and delay_qvalue (action_spec comes from the env).
  void fields(tensordict::fields::FieldVisitor& v) {
    TemperatureOptions::fields(v);
    v("loss_function", loss_function_,
      tensordict::fields::one_of(functional::distance_loss_names()),
      "distance between each Q_i(s, a) and the target");
    v("delay_qvalue", delay_qvalue_, "value the next state with target copies of the Q-networks");
  }
};

/// The SAC loss with N Q-value networks (TorchRL's num_qvalue_nets, usually 2) and a
/// learnt temperature alpha = exp(log_alpha):
/// - loss_actor = mean(alpha * log pi(a~|s) - min_i Q_i(s, a~)), a~ a reparametrised sample
///   of the actor's distribution: gradient to the actor only (the Q-networks' parameters are
///   held out of this term);
/// - loss_qvalue = sum_i mean(d(Q_i(s, a), y)), with `y = r + gamma * (1 - terminated) *
///   (min_i Q'_i(s', a') - alpha * log pi(a'|s'))`, a' sampled from the actor at s' without
///   gradient, Q'_i the target copies (TD(0) by default, see make_value_estimator):
///   gradient to the Q-networks only;
/// - loss_alpha = -mean(log_alpha * (log pi(a~|s) + target_entropy)) (log pi detached):
///   gradient to log_alpha only; 0 with fixed_alpha.
/// Diagnostics (detached): alpha, entropy (= -mean log pi(a~|s)).
///
/// The actor is a ProbabilisticActor (or any ProbabilisticTensorDictSequential) whose
/// distribution has rsample, usually a TanhNormal: its `get_dist` gives the distribution at
/// the batch's observations. The Q-networks read the observation keys and the "action" key
/// and write `[*B, 1]` under "state_action_value".
///
/// Twin Q-networks are N critic modules of the same architecture, one per Q-function, each
/// registered with its own parameters and target ("qvalue_network_0", ...); build them
/// independently so that they start different. The loss evaluates them one after the other:
/// one module cannot be run with N parameter sets and still send gradients to each set in
/// LibTorch, and the GEMMs dominate the time (docs/performance.md, bench_sac).
///
/// Keys (names for set_keys → defaults): "action" → action, "state_action_value" →
/// state_action_value, "reward" → ("next", "reward"), "done" → ("next", "done"),
/// "terminated" → ("next", "terminated"), "priority" → td_error, "priority_weight" →
/// _weight. Reads action, reward, done, terminated, the networks' in keys at the root and
/// under "next", priority_weight `[*B]` when present (weighting loss_qvalue per sample).
/// Writes into the batch only priority `[*B]` = max_i |Q_i(s, a) - y|, after everything
/// succeeded.
///
/// Networks: "actor_network" (no target: TorchRL's SAC samples the next action from the
/// actor itself), "qvalue_network_<i>" (targets when delay_qvalue). Parameters: also
/// "log_alpha" (a buffer with fixed_alpha).
///
/// Errors: the constructor throws ValueError for a null network, a network without
/// parameters, no Q-network or the same one twice, alpha_init <= 0, min_alpha > max_alpha,
/// an unknown loss_function. forward throws KeyError for a missing key (naming it and its
/// set_keys name), ValueError when a Q-network does not read the action key or write
/// state_action_value, or the distribution has no rsample, ShapeError when reward, done or
/// terminated differ in shape from Q(s, a) `[*B, 1]`.
///
/// Example:
/// ```
/// auto loss = std::make_shared<SACLoss>(actor, std::vector<ValueOperator>{q1, q2},
///                                       SACLossOptions());
/// SoftUpdate updater(loss, 0.005);
/// auto out = loss->forward(batch);
/// (out.get("loss_actor") + out.get("loss_qvalue") + out.get("loss_alpha")).backward();
/// ```
class SACLoss : public ActorQValueLoss<tensordict::nn::ProbabilisticTensorDictSequentialImpl> {
 public:
  SACLoss(Actor actor_network, QNetworks qvalue_networks, SACLossOptions options = {});

  const SACLossOptions& options() const { return options_; }
  /// log alpha (a parameter, or a buffer with fixed_alpha), a scalar tensor.
  const torch::Tensor& log_alpha() const { return temperature_.log_alpha(); }
  /// The current alpha, clamped to [min_alpha, max_alpha] (detached).
  torch::Tensor alpha() const { return temperature_.alpha(); }
  /// The target entropy; nullopt while "auto" is still unresolved (no spec; resolved at the
  /// first forward).
  std::optional<double> target_entropy() const { return temperature_.target_entropy(); }

  /// `SACLoss(num_qvalue_nets=2, loss_function=smooth_l1, alpha_init=1, fixed_alpha=false,
  /// target_entropy=-6, delay_qvalue=true, value_estimator=...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  SACLossOptions options_;
  EntropyTemperature temperature_;
};

/// Options of DiscreteSACLoss (TorchRL's constructor arguments); num_actions is required.
/// The temperature options come from TemperatureOptions; the "auto" target entropy is
/// target_entropy_weight * log(num_actions).
/// Example: `DiscreteSACLossOptions(4).target_entropy_weight(0.98)`
struct DiscreteSACLossOptions : TemperatureOptions<DiscreteSACLossOptions> {
  explicit DiscreteSACLossOptions(int64_t num_actions) : num_actions_(num_actions) {}
  /// The number of actions n (the last dim of the action values).
  TORCH_ARG(int64_t, num_actions);
  /// Distance between each Q_i(s, a) and the target. Default "smooth_l1".
  TORCH_ARG(std::string, loss_function) = "smooth_l1";
  /// "auto" target entropy = target_entropy_weight * log(num_actions). Default 0.98.
  TORCH_ARG(double, target_entropy_weight) = 0.98;
  /// "one_hot" (action `[*B, n]`) or "categorical" (action `[*B]`). Default: read from each
  /// batch's action shape.
  TORCH_ARG(std::optional<std::string>, action_space);
  /// Value the next state with target copies of the Q-networks. Default true.
  TORCH_ARG(bool, delay_qvalue) = true;
};

/// The discrete SAC loss (Christodoulou 2019) with N Q-networks mapping observations to action
/// values `[*B, n]`, expectations over the actor's categorical distribution pi(.|s):
/// - loss_actor = mean(sum_a pi(a|s) (alpha log pi(a|s) - min_i Q_i(s, a))): gradient to the
///   actor only;
/// - loss_qvalue = sum_i mean(d(Q_i(s, a), y)), `y = r + gamma * (1 - terminated) *
///   sum_a' pi(a'|s') (min_i Q'_i(s', a') - alpha log pi(a'|s'))` (no gradient): gradient to
///   the Q-networks only;
/// - loss_alpha = -mean(log_alpha * (target_entropy - H(pi(.|s)))) (H detached); 0 with
///   fixed_alpha.
/// Diagnostics: alpha, entropy (mean H(pi(.|s))). Masked actions (probability 0) add nothing.
///
/// The actor is a ProbabilisticActor whose distribution is a Categorical or
/// OneHotCategorical; its get_dist gives the probabilities. Q-networks (one module per
/// Q-function, as in SACLoss) read the observation keys and write "action_value".
///
/// Keys (names for set_keys → defaults): "action" → action, "action_value" →
/// action_value, "reward", "done", "terminated" (under "next"), "priority" → td_error,
/// "priority_weight" → _weight. Reads and writes as SACLoss.
///
/// Errors: as SACLoss; also ValueError for num_actions < 2 or a distribution that is not
/// categorical, ShapeError when the action values' last dim is not num_actions or the action
/// fits neither action space.
///
/// Example:
/// ```
/// auto loss = std::make_shared<DiscreteSACLoss>(actor, std::vector<TensorDictModule>{q1, q2},
///                                               DiscreteSACLossOptions(4));
/// ```
class DiscreteSACLoss
    : public ActorQValueLoss<tensordict::nn::ProbabilisticTensorDictSequentialImpl> {
 public:
  using Actor = SACLoss::Actor;

  DiscreteSACLoss(Actor actor_network, QNetworks qvalue_networks, DiscreteSACLossOptions options);

  const DiscreteSACLossOptions& options() const { return options_; }
  const torch::Tensor& log_alpha() const { return temperature_.log_alpha(); }
  /// The current alpha, clamped to [min_alpha, max_alpha] (detached).
  torch::Tensor alpha() const { return temperature_.alpha(); }
  double target_entropy() const { return *temperature_.target_entropy(); }

  /// `DiscreteSACLoss(num_actions=4, num_qvalue_nets=2, loss_function=smooth_l1, ...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  DiscreteSACLossOptions options_;
  EntropyTemperature temperature_;
};

}  // namespace tdrl::losses
