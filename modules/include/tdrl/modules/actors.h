#pragma once

/// Actors and critics over TensorDicts (TorchRL's ProbabilisticActor, ValueOperator and
/// ActorValueOperator).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/pimpl.h>

#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nested_key.h>
#include <tensordict/nn/module_ptr.h>
#include <tensordict/nn/probabilistic.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>

namespace tdrl::modules {

using tensordict::NestedKey;

/// Options of ProbabilisticActor.
/// Example: `ProbabilisticActorOptions().in_keys({"loc", "scale"}).return_log_prob(true)`
struct ProbabilisticActorOptions {
  /// Distribution parameter keys (see ProbabilisticTensorDictModuleOptions::in_keys).
  /// Default {"loc", "scale"}.
  TORCH_ARG(std::vector<NestedKey>, in_keys) = std::vector<NestedKey>{"loc", "scale"};
  /// The action key. Default {"action"}.
  TORCH_ARG(std::vector<NestedKey>, out_keys) = std::vector<NestedKey>{"action"};
  /// How the distribution is built. Default TanhNormal on [-1, 1]; build one from the spec's
  /// bounds with `DistributionClass::tanh_normal(TanhNormalOptions().low(...).high(...))`.
  TORCH_ARG(tensordict::nn::DistributionClass,
            distribution_class) = tensordict::nn::DistributionClass::tanh_normal();
  /// Also write the action's log-probability under log_prob_key. Default false.
  TORCH_ARG(bool, return_log_prob) = false;
  /// Default "sample_log_prob".
  TORCH_ARG(NestedKey, log_prob_key) = NestedKey(tensordict::nn::kSampleLogProbKey);
  /// Used when no SetInteractionType guard is live. Default kDeterministic (TorchRL).
  TORCH_ARG(tensordict::nn::InteractionType,
            default_interaction_type) = tensordict::nn::InteractionType::kDeterministic;
  /// Project actions that fall outside the spec into it (after the log-prob is computed, as
  /// TorchRL's safe modules do). Default false.
  TORCH_ARG(bool, safe) = false;
};

/// A policy: `module` (a TensorDict module writing the distribution parameters) followed by
/// a ProbabilisticTensorDictModule writing the action. It is a
/// ProbabilisticTensorDictSequential, so `get_dist(td)` and `log_prob(td)` work.
///
/// Spec: when `spec` is given, every forward checks that the action's trailing shape is the
/// spec's shape (ShapeError naming the key, expected and got), and with `safe` projects
/// out-of-spec actions into it. nullptr = no spec.
///
/// Keys: reads module's in keys; writes its out keys, the action and optionally the
/// log-probability.
/// Errors: the constructor throws what ProbabilisticTensorDictModule's throws; ValueError for
/// `safe` without a spec.
/// Example:
/// ```
/// ProbabilisticActor actor(param_net, action_spec,
///     ProbabilisticActorOptions().return_log_prob(true));
/// { SetInteractionType random(InteractionType::kRandom); actor(td); }
/// ```
class ProbabilisticActorImpl : public tensordict::nn::ProbabilisticTensorDictSequentialImpl {
 public:
  /// `module`: any TensorDict module (TensorDictModule, TensorDictSequential, ...), as a
  /// holder or a shared_ptr.
  ProbabilisticActorImpl(tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> module,
                         specs::TensorSpecPtr spec, ProbabilisticActorOptions options = {});

  /// The action spec, or nullptr.
  const specs::TensorSpecPtr& spec() const { return spec_; }

 protected:
  void forward_impl(const tensordict::TensorDict& tensordict,
                    const tensordict::TensorDict& tensordict_out) override;

 private:
  specs::TensorSpecPtr spec_;
  bool safe_;
};

/// Holder of ProbabilisticActorImpl.
TORCH_MODULE(ProbabilisticActor);

/// Options of ValueOperator.
/// Example: `ValueOperatorOptions().in_keys({"observation", "action"})`
struct ValueOperatorOptions {
  /// Keys passed to the module, in order. Default {"observation"}.
  TORCH_ARG(std::vector<NestedKey>, in_keys) = std::vector<NestedKey>{"observation"};
  /// Keys written. Default: {"state_action_value"} when in_keys contains "action", else
  /// {"state_value"} (TorchRL's rule).
  TORCH_ARG(std::vector<NestedKey>, out_keys);
};

/// A critic: a TensorDictModule whose default keys are those of a value network
/// (`observation` → `state_value`, or `state_action_value` when it reads `action`).
/// Shapes: the module maps `[*batch, ...]` inputs to `[*batch, 1]` values. Errors as
/// TensorDictModule.
/// Example: `ValueOperator critic(MLP(MLPOptions(17, 1)));  critic(td);  // td["state_value"]`
class ValueOperatorImpl : public tensordict::nn::TensorDictModuleImpl {
 public:
  template <typename M>
  explicit ValueOperatorImpl(M module, const ValueOperatorOptions& options = {})
      : tensordict::nn::TensorDictModuleImpl(std::move(module), module_options(options)) {}

  /// The TensorDictModule options ValueOperatorOptions stand for (defaults resolved).
  static tensordict::nn::TensorDictModuleOptions module_options(const ValueOperatorOptions& o);
};

/// Holder of ValueOperatorImpl.
TORCH_MODULE(ValueOperator);

/// A shared trunk with a policy head and a value head (TorchRL's ActorValueOperator): runs
/// common, then policy, then value. `get_policy_operator()` and `get_value_operator()` give
/// trunk+head sequences sharing the modules (so training one trains the trunk of both).
/// When the policy head is a ProbabilisticTensorDictSequential (e.g. a ProbabilisticActor),
/// the policy operator is a ProbabilisticTensorDictSequential of the trunk and the head's
/// modules, so `get_dist` works on it.
/// Example:
/// ```
/// ActorValueOperator agent(trunk, actor_head, value_head);
/// auto policy = agent->get_policy_operator();  // trunk + actor head
/// ```
class ActorValueOperatorImpl : public tensordict::nn::TensorDictSequentialImpl {
 public:
  /// Each module as a holder or a shared_ptr.
  ActorValueOperatorImpl(tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> common,
                         tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> policy,
                         tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase> value);

  /// Trunk + policy head (a ProbabilisticTensorDictSequential when the head is one).
  tensordict::nn::TensorDictSequential get_policy_operator() const;
  /// Trunk + value head.
  tensordict::nn::TensorDictSequential get_value_operator() const;
  /// The trunk.
  std::shared_ptr<tensordict::nn::TensorDictModuleBase> get_common_operator() const;
  /// The policy head alone.
  std::shared_ptr<tensordict::nn::TensorDictModuleBase> get_policy_head() const;
  /// The value head alone.
  std::shared_ptr<tensordict::nn::TensorDictModuleBase> get_value_head() const;
};

/// Holder of ActorValueOperatorImpl.
TORCH_MODULE(ActorValueOperator);

}  // namespace tdrl::modules
