#pragma once

/// DistributionClass: how a probabilistic module builds a distribution from named tensors
/// read from a TensorDict (the C++ form of Python's `distribution_class` +
/// `distribution_kwargs`).

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tensordict/nn/categorical.h>
#include <tensordict/nn/delta.h>
#include <tensordict/nn/distribution.h>
#include <tensordict/nn/normal.h>
#include <tensordict/nn/tanh_normal.h>
#include <tensordict/nn/truncated_normal.h>

namespace tensordict::nn {

/// Distribution parameters by name ("loc", "scale", "logits", "mask", ...).
using DistributionParams = std::map<std::string, torch::Tensor>;

/// A named recipe for a distribution: the parameter names it takes (required, then optional)
/// and a function building it from them. Copyable; the predefined ones capture their
/// options by value.
///
/// Parameter names are the ones Python's classes take as keyword arguments, so that
/// a ProbabilisticTensorDictModule with in_keys `{"loc", "scale"}` feeds a TanhNormal.
///
/// Example:
/// ```
/// auto tanh_normal = DistributionClass::tanh_normal(TanhNormalOptions().low(-2).high(2));
/// // a user distribution:
/// DistributionClass mine("Mine", {"loc", "scale"}, [](const DistributionParams& p) {
///   return std::make_shared<Normal>(p.at("loc"), p.at("scale") * 2);
/// });
/// ```
class DistributionClass {
 public:
  /// Builds the distribution from parameters; only called with every required name present.
  using Make = std::function<std::shared_ptr<Distribution>(const DistributionParams&)>;

  /// `name` is printed and named in errors; `param_names` must all be given to `make`;
  /// `optional_param_names` may be. Throws ValueError for an empty name, no required
  /// parameter, a duplicate name or an empty `make`.
  DistributionClass(std::string name, std::vector<std::string> param_names, Make make,
                    std::vector<std::string> optional_param_names = {});

  /// Normal(loc, scale), elementwise.
  static DistributionClass normal();
  /// IndependentNormal(loc, scale) over the last `options.event_dims()` dims.
  static DistributionClass independent_normal(IndependentNormalOptions options = {});
  /// TanhNormal(loc, scale) on [low, high] from `options`.
  static DistributionClass tanh_normal(TanhNormalOptions options = {});
  /// TruncatedNormal(loc, scale) on [low, high] from `options`.
  static DistributionClass truncated_normal(TruncatedNormalOptions options = {});
  /// Categorical(logits) with an optional "mask" parameter (bool `[*batch, n]`, read per
  /// call, e.g. from an "action_mask" key); a mask in `options` applies when none is given.
  static DistributionClass categorical(CategoricalOptions options = {});
  /// OneHotCategorical(logits), with an optional "mask" parameter like categorical().
  static DistributionClass one_hot_categorical(CategoricalOptions options = {});
  /// Bernoulli(logits).
  static DistributionClass bernoulli();
  /// Delta(param).
  static DistributionClass delta(DeltaOptions options = {});
  /// TanhDelta(param).
  static DistributionClass tanh_delta(TanhDeltaOptions options = {});

  /// The name, e.g. "TanhNormal".
  const std::string& name() const { return name_; }
  /// The required parameter names, in order.
  const std::vector<std::string>& param_names() const { return param_names_; }
  /// The optional parameter names.
  const std::vector<std::string>& optional_param_names() const { return optional_param_names_; }
  /// True when `name` is a required or optional parameter.
  bool accepts(const std::string& name) const;

  /// Builds the distribution. Throws ValueError naming the missing required parameters or
  /// an unknown one (listing the accepted names), and whatever the distribution's
  /// constructor throws for invalid values.
  std::shared_ptr<Distribution> make(const DistributionParams& params) const;

 private:
  std::string name_;
  std::vector<std::string> param_names_;
  std::vector<std::string> optional_param_names_;
  Make make_;
};

/// Prints `TanhNormal(loc, scale)` (optional parameters in brackets: `Categorical(logits[,
/// mask])`).
std::ostream& operator<<(std::ostream& stream, const DistributionClass& distribution_class);

}  // namespace tensordict::nn
