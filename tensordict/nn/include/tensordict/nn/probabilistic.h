#pragma once

/// ProbabilisticTensorDictModule and ProbabilisticTensorDictSequential: modules that build a
/// distribution from TensorDict entries and write a value drawn from it (Python
/// tensordict.nn.ProbabilisticTensorDictModule / ProbabilisticTensorDictSequential).

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tensordict/nested_key.h>
#include <tensordict/nn/distribution.h>
#include <tensordict/nn/distribution_class.h>
#include <tensordict/nn/interaction_type.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>
#include <tensordict/tensor_dict.h>

namespace tensordict::nn {

/// The default key of the log-probability a probabilistic module writes.
inline const char* const kSampleLogProbKey = "sample_log_prob";

/// Options of ProbabilisticTensorDictModule.
/// Example:
/// `ProbabilisticTensorDictModuleOptions().in_keys({"loc", "scale"}).out_keys({"action"})
///      .return_log_prob(true)`
struct ProbabilisticTensorDictModuleOptions {
  /// Keys holding the distribution's parameters; the last element of each key names the
  /// parameter it feeds (`{"loc", "scale"}`, or `{{"params", "loc"}, {"params", "scale"}}`),
  /// as Python's list in_keys do.
  ProbabilisticTensorDictModuleOptions& in_keys(std::vector<NestedKey> keys) {
    in_keys_ = std::move(keys);
    in_keys_map_.clear();
    return *this;
  }
  /// Parameter name → key (Python's dict in_keys), e.g. `{{"logits", "logits"},
  /// {"mask", "action_mask"}}`. Entries are read in the map's (name) order.
  ProbabilisticTensorDictModuleOptions& in_keys_map(std::map<std::string, NestedKey> map) {
    in_keys_map_ = std::move(map);
    in_keys_.clear();
    return *this;
  }
  /// The key the drawn value is written to: exactly one key (required).
  TORCH_ARG(std::vector<NestedKey>, out_keys);
  /// Also write the value's log-probability under log_prob_key. Default false.
  TORCH_ARG(bool, return_log_prob) = false;
  /// Where the log-probability goes. Default "sample_log_prob".
  TORCH_ARG(NestedKey, log_prob_key){kSampleLogProbKey};
  /// The interaction type used when no SetInteractionType guard is live. Default
  /// kDeterministic (Python tensordict's default).
  TORCH_ARG(InteractionType, default_interaction_type) = InteractionType::kDeterministic;
  /// Samples averaged for kMean when the distribution has no closed-form mean. Default 1000.
  TORCH_ARG(int64_t, n_empirical_estimate) = 1000;

 public:
  const std::vector<NestedKey>& in_keys() const { return in_keys_; }
  const std::map<std::string, NestedKey>& in_keys_map() const { return in_keys_map_; }

 private:
  std::vector<NestedKey> in_keys_;
  std::map<std::string, NestedKey> in_keys_map_;
};

/// Reads distribution parameters from a TensorDict, builds a distribution with a
/// DistributionClass and writes a value drawn from it; it has no parameters of its own
/// (put the network producing the parameters before it in a ProbabilisticTensorDictSequential).
///
/// Keys: reads `in_keys()` (the parameters); writes the value under the single out key and,
/// with return_log_prob, its log-probability `[*batch]` (summed over event dims) under
/// log_prob_key, which is then part of `out_keys()`.
///
/// The value depends on the interaction type in force: the thread's SetInteractionType
/// setting if any, else default_interaction_type (see InteractionType). Under kRandom the
/// value is an rsample when the distribution has one, so gradients flow from the value (and
/// from its log-probability) to the parameters; the log-probability is of the written value.
///
/// Errors: the constructor throws ValueError when the in keys do not name every required
/// parameter of the distribution (or name one it does not take), when out_keys does not hold
/// exactly one key, when log_prob_key equals the out key, or for n_empirical_estimate < 1.
/// forward and get_dist throw KeyError for a missing in key (naming this module, the key and
/// the available keys) and the distribution's own errors for invalid parameters (e.g.
/// ValueError for a non-positive scale); kMode throws TypeError for a distribution without a
/// closed-form mode. A failed forward writes nothing.
///
/// Example:
/// ```
/// ProbabilisticTensorDictModule prob(
///     DistributionClass::normal(),
///     ProbabilisticTensorDictModuleOptions().in_keys({"loc", "scale"}).out_keys({"action"})
///         .return_log_prob(true));
/// prob(td);  // td["action"], td["sample_log_prob"]
/// ```
class ProbabilisticTensorDictModuleImpl : public TensorDictModuleBase {
 public:
  ProbabilisticTensorDictModuleImpl(DistributionClass distribution_class,
                                    ProbabilisticTensorDictModuleOptions options);

  /// The distribution given by `tensordict`'s parameter entries (read, not copied, so
  /// gradients flow back to them). Throws as forward does.
  std::shared_ptr<Distribution> get_dist(const TensorDict& tensordict) const;
  /// The log-probability `[*batch]` of the value already under the out key, under the
  /// distribution given by `tensordict`. Throws KeyError when the value is missing.
  torch::Tensor log_prob(const TensorDict& tensordict) const;
  /// The value `dist` gives under `type` (see InteractionType), as forward draws it.
  torch::Tensor draw(const Distribution& dist, InteractionType type) const;

  /// The interaction type forward uses now on this thread.
  InteractionType effective_interaction_type() const;

  const DistributionClass& distribution_class() const { return distribution_class_; }
  /// Distribution parameter name → key, as read.
  const std::vector<std::pair<std::string, NestedKey>>& dist_keys() const { return dist_keys_; }
  /// The key the value is written to.
  const NestedKey& sample_key() const { return options_.out_keys().front(); }
  bool return_log_prob() const { return options_.return_log_prob(); }
  const NestedKey& log_prob_key() const { return options_.log_prob_key(); }
  InteractionType default_interaction_type() const { return options_.default_interaction_type(); }

 protected:
  void forward_impl(const TensorDict& tensordict, const TensorDict& tensordict_out) override;
  /// `ProbabilisticTensorDictModule(\n    in_keys=[...],\n    out_keys=[...],\n
  /// distribution_class=Normal(loc, scale),\n    default_interaction_type=DETERMINISTIC,\n
  /// return_log_prob=False)`.
  void print_to(std::ostream& stream) const override;

 private:
  std::string where() const;

  DistributionClass distribution_class_;
  ProbabilisticTensorDictModuleOptions options_;
  std::vector<std::pair<std::string, NestedKey>> dist_keys_;
};

/// Holder of ProbabilisticTensorDictModuleImpl.
TORCH_MODULE(ProbabilisticTensorDictModule);

/// A TensorDictSequential whose last module is a ProbabilisticTensorDictModule: the modules
/// before it (the deterministic part) compute the distribution's parameters, the last draws
/// the value. forward, keys, selection and partial_tolerant are TensorDictSequential's.
///
/// Errors: the constructor throws ValueError when the sequence is empty or its last module
/// is not a ProbabilisticTensorDictModule (naming the last module's type).
///
/// Example:
/// ```
/// ProbabilisticTensorDictSequential actor(
///     TensorDictModule(net, TensorDictModuleOptions().in_keys({"obs"}).out_keys({"loc",
///     "scale"})), ProbabilisticTensorDictModule(DistributionClass::tanh_normal(), ...));
/// auto dist = actor->get_dist(td);  // runs net, then builds the TanhNormal
/// ```
class ProbabilisticTensorDictSequentialImpl : public TensorDictSequentialImpl {
 public:
  explicit ProbabilisticTensorDictSequentialImpl(Modules modules,
                                                 TensorDictSequentialOptions options = {});

  /// The modules as TensorDictSequential takes them, the last being probabilistic.
  template <typename... Args, typename = std::enable_if_t<(detail::kIsSequentialArg<Args> && ...)>>
  explicit ProbabilisticTensorDictSequentialImpl(Args&&... args)
      : ProbabilisticTensorDictSequentialImpl(collect(std::forward<Args>(args)...)) {}

  /// Runs the deterministic part on `tensordict` (writing its outputs into it) and returns
  /// the distribution the last module builds from them.
  std::shared_ptr<Distribution> get_dist(const TensorDict& tensordict) const;
  /// Runs the deterministic part, then returns the log-probability `[*batch]` of the value
  /// already under the sample key. Throws KeyError when it is missing.
  torch::Tensor log_prob(const TensorDict& tensordict) const;
  /// The last module.
  std::shared_ptr<ProbabilisticTensorDictModuleImpl> probabilistic_module() const {
    return probabilistic_;
  }

 private:
  using Collected = std::pair<Modules, TensorDictSequentialOptions>;
  template <typename... Args>
  static Collected collect(Args&&... args) {
    Collected collected;
    (add_arg(collected.first, collected.second, std::forward<Args>(args)), ...);
    return collected;
  }
  explicit ProbabilisticTensorDictSequentialImpl(Collected collected)
      : ProbabilisticTensorDictSequentialImpl(std::move(collected.first),
                                              std::move(collected.second)) {}

  // Runs every module but the last on `tensordict`, skipping (when partial_tolerant) those
  // whose inputs are missing.
  void run_deterministic_part(const TensorDict& tensordict) const;

  std::shared_ptr<ProbabilisticTensorDictModuleImpl> probabilistic_;
};

/// Holder of ProbabilisticTensorDictSequentialImpl.
TORCH_MODULE(ProbabilisticTensorDictSequential);

}  // namespace tensordict::nn
