#pragma once

/// Q-value policies (TorchRL's QValueModule and QValueActor): the greedy action of a
/// Q-network's action values.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/pimpl.h>

#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nested_key.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>

namespace tdrl::modules {

using tensordict::NestedKey;

/// Options of QValueModule (and QValueActor).
/// Example: `QValueModuleOptions().action_space("categorical").action_mask_key("action_mask")`
struct QValueModuleOptions {
  /// "one_hot" (action `[*batch, n]`, one-hot) or "categorical" (action `[*batch]`, index).
  /// Default: taken from the spec (OneHot → "one_hot", Categorical → "categorical"), else
  /// "one_hot".
  TORCH_ARG(std::optional<std::string>, action_space);
  /// The action spec (OneHot or Categorical), or nullptr. Its dtype is the one-hot action's.
  TORCH_ARG(specs::TensorSpecPtr, spec);
  /// Read: the action values `[*batch, n]`. Default "action_value".
  TORCH_ARG(NestedKey, action_value_key) = NestedKey("action_value");
  /// Written: the greedy action. Default "action".
  TORCH_ARG(NestedKey, action_key) = NestedKey("action");
  /// Written: the value of the chosen action `[*batch, 1]`. Default "chosen_action_value".
  TORCH_ARG(NestedKey, chosen_action_value_key) = NestedKey("chosen_action_value");
  /// Read when set: bool `[*batch, n]`, true for allowed actions (the greedy action is the
  /// best allowed one). Default unset.
  TORCH_ARG(std::optional<NestedKey>, action_mask_key);
};

/// Reads action values `[*batch, n]` and writes the greedy action (argmax over allowed
/// actions; ties go to the lowest index), the action values (unchanged) and the chosen
/// action's value `[*batch, 1]`.
///
/// Keys: in `[action_value_key (, action_mask_key)]`; out `[action_key, action_value_key,
/// chosen_action_value_key]`.
/// Errors: the constructor throws ValueError for an action_space other than "one_hot" /
/// "categorical", one that contradicts the spec, or a spec that is neither OneHot nor
/// Categorical. forward throws KeyError for a missing key, ShapeError when the action values
/// are not `[*batch, n]` with n matching the spec or the mask's shape differs, ValueError
/// when a row of the mask allows no action; nothing is written on failure.
/// Example: `QValueModule qvalue(QValueModuleOptions().action_space("categorical"));`
class QValueModuleImpl : public tensordict::nn::TensorDictModuleBase {
 public:
  explicit QValueModuleImpl(QValueModuleOptions options = {});

  /// "one_hot" or "categorical".
  const std::string& action_space() const { return action_space_; }
  const QValueModuleOptions& options() const { return options_; }

 protected:
  void forward_impl(const tensordict::TensorDict& tensordict,
                    const tensordict::TensorDict& tensordict_out) override;
  void print_to(std::ostream& stream) const override;

 private:
  QValueModuleOptions options_;
  std::string action_space_;
};

/// Holder of QValueModuleImpl.
TORCH_MODULE(QValueModule);

/// Options of QValueActor: the Q-network's in keys and the QValueModule options.
/// Example: `QValueActorOptions().in_keys({"pixels"}).qvalue(QValueModuleOptions().spec(s))`
struct QValueActorOptions {
  /// Keys passed to the Q-network. Default {"observation"}.
  TORCH_ARG(std::vector<NestedKey>, in_keys) = std::vector<NestedKey>{"observation"};
  /// The QValueModule options (its action_value_key is where the network writes).
  TORCH_ARG(QValueModuleOptions, qvalue);
};

/// A Q-network wrapped in a TensorDictModule writing action values, followed by a
/// QValueModule: `observation` → `action_value`, `action`, `chosen_action_value`.
/// Errors as TensorDictModule and QValueModule.
/// Example: `QValueActor actor(MLP(MLPOptions(4, 2)), QValueActorOptions());`
class QValueActorImpl : public tensordict::nn::TensorDictSequentialImpl {
 public:
  /// `network`: anything TensorDictModule wraps (a module holder, shared_ptr or callable)
  /// mapping the in keys to action values `[*batch, n]`.
  template <typename M>
  QValueActorImpl(M network, const QValueActorOptions& options = {})
      : QValueActorImpl(
            Wrapped{std::make_shared<tensordict::nn::TensorDictModuleImpl>(
                std::move(network), tensordict::nn::TensorDictModuleOptions()
                                        .in_keys(options.in_keys())
                                        .out_keys({options.qvalue().action_value_key()}))},
            options) {}

  /// The QValueModule at the end.
  std::shared_ptr<QValueModuleImpl> qvalue_module() const;

 private:
  // The network already wrapped (a distinct type, so the template never matches it).
  struct Wrapped {
    std::shared_ptr<tensordict::nn::TensorDictModuleBase> module;
  };
  QValueActorImpl(Wrapped network, const QValueActorOptions& options);
};

/// Holder of QValueActorImpl.
TORCH_MODULE(QValueActor);

}  // namespace tdrl::modules
