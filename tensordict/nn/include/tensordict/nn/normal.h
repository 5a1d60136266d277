#pragma once

/// Normal (Gaussian) distributions: `Normal` with scalar events and `IndependentNormal`,
/// which treats the last `event_dims` dims as one event (TorchRL's IndependentNormal).

#include <torch/arg.h>

#include <tensordict/nn/distribution.h>

namespace tensordict::nn {

/// Elementwise Gaussian N(loc, scale): batch_shape is the broadcast shape of loc and scale,
/// event_shape is `[]`. Supports rsample (loc + scale * eps), entropy, mean and mode (loc);
/// deterministic_sample is the mean.
/// Example: `Normal dist(torch::zeros({4, 2}), torch::ones({4, 2}));`
class Normal : public Distribution {
 public:
  /// `loc` and `scale` are floating tensors that broadcast together (else ShapeError);
  /// `scale` must be > 0 everywhere (else ValueError showing its minimum); a non-floating
  /// parameter throws TypeError. The tensors are held, not copied.
  Normal(torch::Tensor loc, torch::Tensor scale);

  /// loc, broadcast to batch_shape.
  const torch::Tensor& loc() const { return loc_; }
  /// scale, broadcast to batch_shape.
  const torch::Tensor& scale() const { return scale_; }

  bool has_rsample() const override { return true; }
  bool has_entropy() const override { return true; }

 protected:
  Normal(std::string name, torch::Tensor loc, torch::Tensor scale, int64_t event_dims);

  torch::Tensor sample_impl(c10::IntArrayRef sample_shape) const override;
  torch::Tensor log_prob_impl(const torch::Tensor& value) const override;
  std::optional<torch::Tensor> entropy_impl() const override;
  std::optional<torch::Tensor> mean_impl() const override { return loc_; }
  std::optional<torch::Tensor> mode_impl() const override { return loc_; }
  torch::Tensor deterministic_sample_impl() const override { return loc_; }
  std::vector<std::pair<std::string, torch::Tensor>> printed_params() const override;

 private:
  torch::Tensor loc_;
  torch::Tensor scale_;
  int64_t event_dims_;
};

/// Options of IndependentNormal.
/// Example: `IndependentNormalOptions().event_dims(2)`
struct IndependentNormalOptions {
  /// How many trailing dims of loc/scale form one event (log_prob and entropy sum over
  /// them). Must be in [0, loc.dim()].
  TORCH_ARG(int64_t, event_dims) = 1;
};

/// A Normal whose last `event_dims` dims are one event: for loc `[*batch, d]` and the default
/// event_dims 1, batch_shape is `[*batch]`, event_shape `[d]`, and log_prob/entropy return
/// `[*sample, *batch]`, summed over d. Same errors as Normal, plus ValueError when event_dims
/// is outside [0, dim]. Supports rsample, entropy, mean, mode (loc).
/// Example: `IndependentNormal dist(loc, scale, IndependentNormalOptions().event_dims(1));`
class IndependentNormal : public Normal {
 public:
  IndependentNormal(torch::Tensor loc, torch::Tensor scale, IndependentNormalOptions options = {});
};

}  // namespace tensordict::nn
