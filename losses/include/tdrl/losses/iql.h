#pragma once

/// IQLLoss: implicit Q-learning for offline RL (Kostrikov et al. 2021; TorchRL's IQLLoss).

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>

#include <tdrl/losses/actor_qvalue_loss.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/value_estimators.h>
#include <tensordict/nn/probabilistic.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::losses {

/// Options of IQLLoss (TorchRL's constructor arguments).
/// Example: `IQLLossOptions().expectile(0.7).temperature(3.0)`
struct IQLLossOptions {
  /// Distance between each Q_i(s, a) and its target. Default "smooth_l1".
  TORCH_ARG(std::string, loss_function) = "smooth_l1";
  /// Inverse temperature beta of the advantage weights exp(beta * A), capped at 100. Default
  /// 1.0.
  TORCH_ARG(double, temperature) = 1.0;
  /// Expectile tau in (0, 1) of the value regression. Default 0.5 (TorchRL's; the paper uses
  /// 0.7 for locomotion).
  TORCH_ARG(double, expectile) = 0.5;
  /// Use target copies of the Q-networks for the value and actor terms. Default true.
  TORCH_ARG(bool, delay_qvalue) = true;
};

/// The IQL loss with N Q-networks, a state-value network V and a stochastic actor; every
/// term uses only the batch's actions (no action is sampled), so nothing is queried out of
/// the data's support:
/// - loss_value = mean(|tau - 1(u < 0)| u^2), u = min_i Q'_i(s, a) - V(s): gradient to V only;
/// - loss_qvalue = sum_i mean(d(Q_i(s, a), y)), `y = r + gamma * (1 - terminated) * V(s')`
///   (V without gradient; TD(0) by default, see make_value_estimator): gradient to the
///   Q-networks only;
/// - loss_actor = -mean(min(exp(beta * (min_i Q'_i(s, a) - V(s))), 100) * log pi(a|s))
///   (advantage-weighted regression): gradient to the actor only.
/// Diagnostic: entropy (= -mean log pi(a|s) of the batch's actions, TorchRL's).
///
/// Networks: the actor is a ProbabilisticActor (its get_dist scores the batch's action); the
/// Q-networks are N critic modules reading the observation and "action" keys and writing
/// "state_action_value" (registered "qvalue_network_<i>", targets with delay_qvalue); the
/// value network reads the observation keys and writes "value" → state_value `[*B, 1]`
/// ("value_network", no target).
///
/// Keys (names for set_keys → defaults): "action" → action, "state_action_value" →
/// state_action_value, "value" → state_value, "reward", "done", "terminated" (under "next"),
/// "priority" → td_error, "priority_weight" → _weight. Writes into the batch only priority
/// `[*B]` = max_i |Q_i(s, a) - y|, after everything succeeded.
///
/// Errors: the constructor throws ValueError for a null network or one without parameters,
/// no Q-network or the same one twice, an expectile outside (0, 1), a temperature < 0, an
/// unknown loss_function. forward throws KeyError for a missing key, ValueError when a
/// network does not read/write the keys above, ShapeError when reward, done, terminated or
/// V differ in shape from Q(s, a).
///
/// Example:
/// ```
/// auto loss = std::make_shared<IQLLoss>(actor, std::vector<ValueOperator>{q1, q2}, value,
///                                       IQLLossOptions().expectile(0.7));
/// ```
class IQLLoss : public ActorQValueLoss<tensordict::nn::ProbabilisticTensorDictSequentialImpl> {
 public:
  IQLLoss(Actor actor_network, QNetworks qvalue_networks, NetworkPtr value_network,
          IQLLossOptions options = {});

  const IQLLossOptions& options() const { return options_; }

  /// `IQLLoss(num_qvalue_nets=2, loss_function=smooth_l1, temperature=1, expectile=0.5, ...)`.
  void pretty_print(std::ostream& stream) const override;

 protected:
  TensorDict forward_impl(const TensorDict& batch) override;

 private:
  std::shared_ptr<tensordict::nn::TensorDictModuleBase> value_network_;
  IQLLossOptions options_;
};

}  // namespace tdrl::losses
