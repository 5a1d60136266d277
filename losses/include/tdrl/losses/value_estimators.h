#pragma once

/// Value estimators as keyed modules (TorchRL's TD0Estimator, TD1Estimator, TDLambdaEstimator
/// and GAE): read values, rewards and flags from a TensorDict of batch `[*B, T]` and write
/// `advantage` and `value_target`.

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tdrl/losses/networks.h>
#include <tensordict/fields.h>
#include <tensordict/nested_key.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::modules {
class RecurrentModuleImpl;
}  // namespace tdrl::modules

namespace tdrl::losses {

using tensordict::NestedKey;
using tensordict::TensorDict;

/// The estimators make_value_estimator builds.
enum class ValueEstimatorType { kTD0, kTD1, kTDLambda, kGAE };
/// "td0", "td1", "td_lambda", "gae" (the config names).
std::string to_string(ValueEstimatorType type);
/// Parses the config names (case-insensitive); ValueError listing them otherwise.
ValueEstimatorType value_estimator_type_from_string(const std::string& name);

/// Options of the value estimators.
/// Example: `ValueEstimatorOptions().gamma(0.99).lmbda(0.95)`
struct ValueEstimatorOptions {
  /// Discount in [0, 1]. Default 0.99.
  TORCH_ARG(double, gamma) = 0.99;
  /// TD(lambda) / GAE lambda in [0, 1]. Default 0.95.
  TORCH_ARG(double, lmbda) = 0.95;
  /// GAE only: standardise the advantage over the batch (mean 0, std 1). Default false.
  TORCH_ARG(bool, average_gae) = false;

 public:
  /// The options the estimator `type` reads: gamma for all, lmbda for TD(lambda) and GAE,
  /// average_gae for GAE.
  void fields(tensordict::fields::FieldVisitor& v, ValueEstimatorType type) {
    namespace tf = tensordict::fields;
    v("gamma", gamma_, tf::in_range(0, 1), "discount");
    if (type == ValueEstimatorType::kTDLambda || type == ValueEstimatorType::kGAE)
      v("lmbda", lmbda_, tf::in_range(0, 1),
        type == ValueEstimatorType::kGAE ? "GAE lambda" : "TD(lambda) lambda");
    if (type == ValueEstimatorType::kGAE)
      v("average_gae", average_gae_, "standardise the advantage over the collected batch");
  }
};

/// The base of the estimators. forward(td) on a TensorDict of batch `[*B, T]` (time = the
/// last batch dim):
/// 1. with a value network, runs it on `td` (writing the value key) and on `td["next"]`
///    (writing ("next", value key)), without gradient;
///    With recurrent cores in the network (recurrent_cores), the first run is in sequence mode
///    and the second in step mode (see there);
/// 2. reads value `[*B, T, 1]`, ("next", value), reward, done, terminated (the last three under
///    "next" by default) and writes `advantage` and `value_target` `[*B, T, 1]`.
///
/// Keys (names for set_keys → defaults): "advantage" → advantage, "value_target" →
/// value_target, "value" → state_value (the next value is ("next", <value key>)), "reward" →
/// ("next", "reward"), "done" → ("next", "done"), "terminated" → ("next", "terminated").
///
/// Errors: KeyError naming a missing key and its set_keys name; ShapeError when value,
/// reward and flags differ in shape (e.g. a `[B, T]` reward against `[B, T, 1]` values) or
/// the TensorDict has no time dim; ValueError for gamma/lmbda outside [0, 1].
class ValueEstimatorBase : public tensordict::nn::TensorDictModuleBase {
 public:
  /// Renames keys by name (see the class comment). Throws KeyError for an unknown name.
  ValueEstimatorBase& set_keys(const std::map<std::string, NestedKey>& keys);
  /// The key currently used for `name`.
  const NestedKey& key(const std::string& name) const;
  /// The value network (may be null: the values must then be in the TensorDict).
  const std::shared_ptr<tensordict::nn::TensorDictModuleBase>& value_network() const {
    return value_network_;
  }
  const ValueEstimatorOptions& options() const { return options_; }
  /// The recurrent cores (LSTMModule, GRUModule) inside the value network, found when it is
  /// built. A recurrent critic over a collected `[*B, T]` batch runs in sequence mode over
  /// `td` (from the stored state at each sequence's first step, reset wherever is_init is set;
  /// each core writes its state after every step under ("next", <hidden key>), replacing the
  /// stored ones), then in step mode over `td["next"]` from those states, so that each step's
  /// next value continues its own trajectory with the current weights (after a truncation
  /// too, where `td`'s next step belongs to another episode). The cores' modes are restored
  /// after.
  const std::vector<std::shared_ptr<modules::RecurrentModuleImpl>>& recurrent_cores() const {
    return recurrent_cores_;
  }
  /// The advantage and value target for `[*, T, *F]` tensors with time at `time_dim`.
  virtual std::pair<torch::Tensor, torch::Tensor> estimate(
      const torch::Tensor& value, const torch::Tensor& next_value, const torch::Tensor& reward,
      const torch::Tensor& done, const torch::Tensor& terminated, int64_t time_dim) const = 0;

 protected:
  ValueEstimatorBase(std::string name, NetworkPtr value_network, ValueEstimatorOptions options);
  void forward_impl(const TensorDict& tensordict, const TensorDict& tensordict_out) override;
  void print_to(std::ostream& stream) const override;

 private:
  void update_declared_keys();
  torch::Tensor read(const TensorDict& td, const std::string& key_name, const NestedKey& key) const;

  // Runs the value network on `td` and its "next" (see the class comment).
  void run_value_network(const TensorDict& td) const;

  std::shared_ptr<tensordict::nn::TensorDictModuleBase> value_network_;
  std::vector<std::shared_ptr<modules::RecurrentModuleImpl>> recurrent_cores_;
  ValueEstimatorOptions options_;
  std::vector<std::pair<std::string, NestedKey>> keys_;
};

/// One-step TD: value_target = r + gamma * (1 - terminated) * V(s').
class TD0EstimatorImpl : public ValueEstimatorBase {
 public:
  explicit TD0EstimatorImpl(NetworkPtr value_network = nullptr, ValueEstimatorOptions options = {});
  std::pair<torch::Tensor, torch::Tensor> estimate(
      const torch::Tensor& value, const torch::Tensor& next_value, const torch::Tensor& reward,
      const torch::Tensor& done, const torch::Tensor& terminated, int64_t time_dim) const override;
};
TORCH_MODULE(TD0Estimator);

/// Monte-Carlo returns bootstrapped at trajectory ends (TD(1)).
class TD1EstimatorImpl : public ValueEstimatorBase {
 public:
  explicit TD1EstimatorImpl(NetworkPtr value_network = nullptr, ValueEstimatorOptions options = {});
  std::pair<torch::Tensor, torch::Tensor> estimate(
      const torch::Tensor& value, const torch::Tensor& next_value, const torch::Tensor& reward,
      const torch::Tensor& done, const torch::Tensor& terminated, int64_t time_dim) const override;
};
TORCH_MODULE(TD1Estimator);

/// TD(lambda) returns.
class TDLambdaEstimatorImpl : public ValueEstimatorBase {
 public:
  explicit TDLambdaEstimatorImpl(NetworkPtr value_network = nullptr,
                                 ValueEstimatorOptions options = {});
  std::pair<torch::Tensor, torch::Tensor> estimate(
      const torch::Tensor& value, const torch::Tensor& next_value, const torch::Tensor& reward,
      const torch::Tensor& done, const torch::Tensor& terminated, int64_t time_dim) const override;
};
TORCH_MODULE(TDLambdaEstimator);

/// Generalized advantage estimation (average_gae standardises the advantage).
class GAEImpl : public ValueEstimatorBase {
 public:
  explicit GAEImpl(NetworkPtr value_network = nullptr, ValueEstimatorOptions options = {});
  std::pair<torch::Tensor, torch::Tensor> estimate(
      const torch::Tensor& value, const torch::Tensor& next_value, const torch::Tensor& reward,
      const torch::Tensor& done, const torch::Tensor& terminated, int64_t time_dim) const override;
};
TORCH_MODULE(GAE);

/// The estimator of `type` around `value_network` (may be null).
std::shared_ptr<ValueEstimatorBase> make_value_estimator(ValueEstimatorType type,
                                                         NetworkPtr value_network = nullptr,
                                                         ValueEstimatorOptions options = {});

}  // namespace tdrl::losses
