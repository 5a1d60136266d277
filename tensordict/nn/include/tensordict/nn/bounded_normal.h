#pragma once

/// BoundedNormal: the base of the Gaussians on an interval [low, high] (TanhNormal,
/// TruncatedNormal), for a distribution of your own of the same family.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <tensordict/nn/bounded_options.h>
#include <tensordict/nn/distribution.h>

namespace tensordict::nn {

/// A distribution built from a Gaussian N(loc, scale) and an interval [low, high], the last
/// `event_dims` dims of loc forming one event. Holds the checked parameters and prints them; a
/// subclass gives the law (sampling, log_prob, ...).
///
/// The constructor checks, naming the subclass's constructor: loc and scale floating
/// (TypeError) and broadcastable (ShapeError), scale > 0 (ValueError), event_dims in
/// [0, loc.dim()] (ValueError; default 1, or 0 for a scalar loc), low and high floating and
/// broadcastable with loc (TypeError, ShapeError) with low < high everywhere (ValueError).
class BoundedNormal : public Distribution {
 public:
  /// loc of the underlying Gaussian, broadcast to `[*batch, *event]`.
  const torch::Tensor& loc() const { return loc_; }
  /// scale of the underlying Gaussian, broadcast to `[*batch, *event]`.
  const torch::Tensor& scale() const { return scale_; }
  /// The lower bound, in loc's dtype.
  const torch::Tensor& low() const { return low_; }
  /// The upper bound, in loc's dtype.
  const torch::Tensor& high() const { return high_; }

 protected:
  /// `name` is the subclass's name ("TanhNormal"); throws as the class documents.
  template <class Options>
  BoundedNormal(const std::string& name, const torch::Tensor& loc, const torch::Tensor& scale,
                const BoundedOptions<Options>& options)
      : BoundedNormal(name, loc, scale, options.low(), options.high(), options.event_dims()) {}
  BoundedNormal(const std::string& name, const torch::Tensor& loc, const torch::Tensor& scale,
                const torch::Tensor& low, const torch::Tensor& high,
                std::optional<int64_t> event_dims);

  /// loc, scale, low and high.
  std::vector<std::pair<std::string, torch::Tensor>> printed_params() const override;

  torch::Tensor loc_;
  torch::Tensor scale_;
  torch::Tensor low_;
  torch::Tensor high_;
  int64_t event_dims_ = 0;
};

}  // namespace tensordict::nn
