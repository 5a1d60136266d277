#pragma once

/// CollectorPolicy: what a collector runs to pick actions, and where its weights live.

#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <tensordict/nn/module_ptr.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::collectors {

using tensordict::TensorDict;

/// The policy of a collector: a call that reads the current root TensorDict and writes the
/// action into it (returning it), plus, optionally, the torch::nn::Module holding its weights
/// (used by update_policy_weights_ and to copy weights into worker copies).
///
/// Converts implicitly from:
/// - nullptr or a default-constructed value: no policy, random actions from the action spec;
/// - a TensorDictModuleBase subclass held by `std::shared_ptr` or a module holder
///   (`tensordict::nn::TensorDictModule`, `tdrl::modules::ProbabilisticActor`, ...): called
///   through `forward`, its weights are the module's parameters and buffers;
/// - any callable `TensorDict(TensorDict)`: called as is, without weights (pass the module as
///   the second argument of the explicit constructor to give it some).
///
/// Copying a CollectorPolicy shares the module (a handle, like a ModuleHolder).
class CollectorPolicy {
 public:
  /// A keyed module as a holder or a shared_ptr.
  using ModulePtr = tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase>;

  /// Random actions.
  CollectorPolicy() = default;
  /// Random actions.
  CollectorPolicy(std::nullptr_t) {}  // NOLINT(google-explicit-constructor)

  /// A keyed module held by shared_ptr (null means random actions).
  CollectorPolicy(std::shared_ptr<tensordict::nn::TensorDictModuleBase> module);  // NOLINT
  /// A keyed module as a module holder or a shared_ptr to a subclass (anything a
  /// tensordict::nn::ModulePtr takes; an empty holder means random actions). A template, not a
  /// ModulePtr parameter, so that `CollectorPolicy policy = actor;` needs one conversion only.
  /// (It delegates with a plain shared_ptr: given a ModulePtr, it would pick itself again.)
  template <class M, class = std::enable_if_t<std::is_convertible_v<const M&, ModulePtr>>>
  CollectorPolicy(const M& module)  // NOLINT(google-explicit-constructor)
      : CollectorPolicy(std::shared_ptr<tensordict::nn::TensorDictModuleBase>(ModulePtr(module))) {}

  /// A callable; its weights, when it has any, are `weights`' parameters and buffers.
  template <class F,
            class = std::enable_if_t<std::is_invocable_r_v<TensorDict, F&, TensorDict> &&
                                     !std::is_base_of_v<torch::nn::Module, std::decay_t<F>> &&
                                     !torch::detail::is_module_holder<std::decay_t<F>>::value &&
                                     !std::is_same_v<std::decay_t<F>, CollectorPolicy> &&
                                     !std::is_same_v<std::decay_t<F>, std::nullptr_t>>,
            class = void>
  CollectorPolicy(F fn, std::shared_ptr<torch::nn::Module> weights = nullptr)  // NOLINT
      : call_(std::function<TensorDict(TensorDict)>(std::move(fn))), weights_(std::move(weights)) {
    if (!call_) weights_ = nullptr;
  }

  /// True when the policy is random actions.
  bool is_random() const { return !call_; }
  /// The module holding the weights, or null.
  const std::shared_ptr<torch::nn::Module>& weights_module() const { return weights_; }
  /// Runs the policy (must not be random).
  TensorDict operator()(TensorDict td) const { return call_(std::move(td)); }

 private:
  std::function<TensorDict(TensorDict)> call_;
  std::shared_ptr<torch::nn::Module> weights_;
};

/// Builds a policy; collectors with workers call it once per worker (on the constructing
/// thread) to give each its own copy of the weights.
using PolicyFactory = std::function<CollectorPolicy()>;

/// The weights (parameters and buffers, detached) of `policy` as a TensorDict, aliasing the
/// module's tensors; an empty TensorDict for a policy without weights.
TensorDict policy_weights(const CollectorPolicy& policy);

/// Copies `weights` (as policy_weights returns them) into `policy`'s module, in place and
/// without recording gradients. Throws tensordict::KeyError naming the first leaf missing on
/// one side, ShapeError naming the first leaf whose shape or dtype differs (nothing is copied
/// then), and ValueError when
/// `policy` has no weights but `weights` is not empty.
void load_policy_weights(const CollectorPolicy& policy, const TensorDict& weights);

}  // namespace tdrl::collectors
