#pragma once

/// CQLLoss: conservative Q-learning for offline RL on top of SAC (Kumar et al. 2020, CQL(H);
/// TorchRL's CQLLoss).

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
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/temperature.h>
#include <tdrl/losses/value_estimators.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nn/probabilistic.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::losses {

/// Options of CQLLoss (TorchRL's constructor arguments).
/// SAC's temperature options come from TemperatureOptions ("auto" target entropy as SACLoss).
/// Example: `CQLLossOptions().min_q_weight(5.0).with_lagrange(true).lagrange_thresh(10.0)`
struct CQLLossOptions : TemperatureOptions<CQLLossOptions> {
  /// Distance between each Q_i(s, a) and its target. Default "smooth_l1".
  TORCH_ARG(std::string, loss_function) = "smooth_l1";
  /// The action spec: a Bounded spec's box is where the random actions of the penalty are
  /// drawn (uniformly), and its shape gives the "auto" target entropy. Default: the actor's
  /// spec if it has one; without a Bounded spec the box is [-1, 1] (a TanhNormal's).
  TORCH_ARG(specs::TensorSpecPtr, action_spec);
  /// Choose the next action with a target copy of the actor. Default false.
  TORCH_ARG(bool, delay_actor) = false;
  /// Value the next state with target copies of the Q-networks. Default true.
  TORCH_ARG(bool, delay_qvalue) = true;
  /// Temperature of the log-sum-exp in the penalty. Default 1.0.
  TORCH_ARG(double, temperature) = 1.0;
  /// Weight of the conservative penalty. Default 1.0.
  TORCH_ARG(double, min_q_weight) = 1.0;
  /// Target from the best of num_random sampled next actions (max over samples, then min over
  /// Q-networks), without entropy term. Default false.
  TORCH_ARG(bool, max_q_backup) = false;
  /// Leave the entropy term -alpha log pi(a'|s') out of the target. Default true.
  TORCH_ARG(bool, deterministic_backup) = true;
  /// Actions sampled per state for the penalty (each of: uniform, policy at s, policy at s').
  /// Default 10.
  TORCH_ARG(int64_t, num_random) = 10;
  /// Tune the penalty's weight alpha' by dual gradient descent (loss_alpha_prime) so that the
  /// penalty stays near lagrange_thresh. Default false.
  TORCH_ARG(bool, with_lagrange) = false;
  /// The penalty's target gap tau for with_lagrange. Default 0.0.
  TORCH_ARG(double, lagrange_thresh) = 0.0;
};

/// The CQL loss: SAC's actor, Q and temperature terms plus the conservative penalty
/// - loss_actor, loss_alpha: as SACLoss (actor only / log_alpha only);
/// - loss_qvalue = sum_i mean(d(Q_i(s, a), y)), `y = r + gamma * (1 - terminated) *
///   min_i Q'_i(s', a')` (minus alpha log pi(a'|s') without deterministic_backup; with
///   max_q_backup the max over num_random sampled a'): gradient to the Q-networks only;
/// - loss_cql = sum_i w * (T * mean logsumexp_k(q_ik / T) - mean Q_i(s, a)), the log-sum-exp
///   over 3 * num_random actions per state: uniform ones (q - log uniform density), ones
///   sampled from pi(.|s) and from pi(.|s') (q - log pi), all valued by Q_i at s, the actions
///   without gradient; w = min_q_weight, T = temperature. With with_lagrange each net's term
///   is `alpha' * (term - lagrange_thresh)`, alpha' = clamp(exp(log_alpha_prime), 0, 1e6)
///   detached: gradient to the Q-networks only;
/// - loss_alpha_prime (with_lagrange only) = -alpha' * sum_i (term_i - lagrange_thresh) / 2
///   with the terms detached: gradient to log_alpha_prime only.
/// Diagnostics: alpha, entropy (-mean log pi(a~|s)), and alpha_prime with with_lagrange.
///
/// Networks and keys as SACLoss ("actor_network" with a target when delay_actor,
/// "qvalue_network_<i>", parameters log_alpha and, with with_lagrange, log_alpha_prime).
/// The behaviour-cloning warm-up term TorchRL also returns (loss_actor_bc) is not computed:
/// every loss_* entry here is meant to be summed.
///
/// Errors: as SACLoss, plus ValueError for num_random < 1, temperature <= 0 or
/// min_q_weight < 0.
///
/// Example:
/// ```
/// auto loss = std::make_shared<CQLLoss>(actor, std::vector<ValueOperator>{q1, q2},
///                                       CQLLossOptions().min_q_weight(5.0));
/// ```
class CQLLoss : public ActorQValueLoss<tensordict::nn::ProbabilisticTensorDictSequentialImpl> {
 public:
  CQLLoss(Actor actor_network, QNetworks qvalue_networks, CQLLossOptions options = {});

  const CQLLossOptions& options() const { return options_; }
  const torch::Tensor& log_alpha() const { return temperature_.log_alpha(); }
  /// The current alpha, clamped to [min_alpha, max_alpha] (detached).
  torch::Tensor alpha() const { return temperature_.alpha(); }
  /// log alpha' (a parameter with with_lagrange, else a buffer at 0).
  const torch::Tensor& log_alpha_prime() const { return log_alpha_prime_; }
  /// The target entropy; nullopt while "auto" is unresolved (see SACLoss).
  std::optional<double> target_entropy() const { return temperature_.target_entropy(); }

  /// `CQLLoss(num_qvalue_nets=2, loss_function=smooth_l1, min_q_weight=1, temperature=1,
  /// num_random=10, with_lagrange=false, ...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  // The steps of forward_impl, in the order they draw random numbers.
  struct Policy {
    std::shared_ptr<tensordict::nn::Distribution> dist;  // pi(.|s)
    torch::Tensor action;                                // a reparametrised action at s
    torch::Tensor log_prob;                              // log pi(action|s), [*B, 1]
  };
  // pi(.|s) at the batch's states, a reparametrised action and its log-probability.
  Policy policy_at_states(const TensorDict& batch) const;
  // The backup's next-state value [*B, 1] (without gradient): min_i Q'_i(s', a') - alpha log
  // pi(a'|s'), or the max over num_random actions with max_q_backup; `next_dist` is set to
  // pi(.|s') of the online actor, for the penalty.
  torch::Tensor next_state_value(const TensorDict& next, const torch::Tensor& alpha,
                                 std::shared_ptr<tensordict::nn::Distribution>& next_dist);
  // The conservative penalty summed over Q-networks: log-sum-exp of Q at s over uniform and
  // policy actions (importance weighted by their densities) minus Q at the data's actions;
  // Lagrange-weighted with with_lagrange, when `gap_sum` collects the gaps to the threshold.
  torch::Tensor conservative_penalty(const TensorDict& batch,
                                     const std::vector<torch::Tensor>& preds, const Policy& policy,
                                     const tensordict::nn::Distribution& next_dist,
                                     torch::Tensor& gap_sum);

  CQLLossOptions options_;
  EntropyTemperature temperature_;
  torch::Tensor log_alpha_prime_;
  torch::Tensor low_;
  torch::Tensor high_;
};

}  // namespace tdrl::losses
