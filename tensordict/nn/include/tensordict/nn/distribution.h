#pragma once

/// The abstract probability distribution of tensordict::nn.
///
/// LibTorch has no distributions package; these classes follow the semantics and names of
/// PyTorch's `torch.distributions` and TorchRL's distributions. Shapes are written
/// `[*sample, *batch, *event]`: a distribution holds `batch_shape()` independent
/// distributions over values of shape `event_shape()`; `sample({n})` returns
/// `[n, *batch, *event]`, and `log_prob(value)` of a value `[*sample, *batch, *event]` returns
/// `[*sample, *batch]` (log-densities summed over the event dims).
///
/// Distributions are immutable after construction and hold their parameters by reference
/// (tensor handles, not copies), so gradients flow from `rsample` and `log_prob` back to the
/// parameters. Reading a distribution from several threads is safe; sampling uses LibTorch's
/// default generator (seed it with `torch::manual_seed`).

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace tensordict::nn {

/// Whether distributions check the values of their arguments: scale > 0, low < high, probs in
/// [0, 1] summing to 1, class indices in range, masks leaving a class. On by default, as
/// PyTorch's validate_args. These checks read values on the host: on a GPU each is a
/// synchronisation, and none can run inside a CUDA graph capture. Code that needs neither (the
/// Trainer's updates on a GPU, where a non-finite loss is caught instead) turns them off for its
/// thread with a ValidateArgs guard. Dtype and shape checks always run.
bool validate_args();

/// Sets validate_args() for the current thread while it lives; restores the previous value.
class ValidateArgs {
 public:
  explicit ValidateArgs(bool enabled);
  ~ValidateArgs();
  ValidateArgs(const ValidateArgs&) = delete;
  ValidateArgs& operator=(const ValidateArgs&) = delete;

 private:
  bool previous_;
};

/// Unnormalised log-probabilities `[*batch, n]` (or `[*batch]` for Bernoulli), a tag that
/// picks the logits constructor of Categorical, OneHotCategorical and Bernoulli.
/// Example: `Categorical dist(Logits(net_output));`
struct Logits {
  explicit Logits(torch::Tensor t) : tensor(std::move(t)) {}
  torch::Tensor tensor;
};

/// Probabilities `[*batch, n]` (or `[*batch]` for Bernoulli), a tag that picks the probs
/// constructor. Values must lie in [0, 1] and, for categorical ones, sum to 1 over the last dim.
/// Example: `Categorical dist(Probs(torch::tensor({0.2, 0.8})));`
struct Probs {
  explicit Probs(torch::Tensor t) : tensor(std::move(t)) {}
  torch::Tensor tensor;
};

/// Base of every distribution. Public entry points are non-virtual: they check the call and
/// then use the protected hooks each distribution implements.
class Distribution {
 public:
  virtual ~Distribution() = default;

  /// The distribution's name, as printed and as used in error messages ("Normal").
  const std::string& name() const { return name_; }
  /// Shape of the independent batch of distributions.
  c10::IntArrayRef batch_shape() const { return batch_shape_; }
  /// Shape of one value; `[]` for scalar distributions.
  c10::IntArrayRef event_shape() const { return event_shape_; }

  /// Draws a sample `[*sample_shape, *batch, *event]` with gradients disabled.
  torch::Tensor sample(c10::IntArrayRef sample_shape = {}) const;
  /// True when `rsample` exists (the sample is a differentiable function of the parameters).
  virtual bool has_rsample() const = 0;
  /// Draws a reparametrised sample `[*sample_shape, *batch, *event]` through which gradients
  /// flow to the parameters. Throws TypeError when `has_rsample()` is false.
  torch::Tensor rsample(c10::IntArrayRef sample_shape = {}) const;

  /// Log-density (or log-mass) of `value` `[*sample, *batch, *event]`, returned as
  /// `[*sample, *batch]`. Throws ShapeError when `value` does not broadcast with
  /// `[*batch, *event]`; discrete distributions throw ValueError for values outside the support.
  torch::Tensor log_prob(const torch::Tensor& value) const;

  /// True when `entropy` has a closed form.
  virtual bool has_entropy() const = 0;
  /// Entropy `[*batch]`. Throws TypeError when `has_entropy()` is false.
  torch::Tensor entropy() const;

  /// Mean `[*batch, *event]`. Throws TypeError when the distribution has no closed-form mean
  /// (TanhNormal, Categorical); the message suggests estimating it from samples.
  torch::Tensor mean() const;
  /// Mode `[*batch, *event]`. Throws TypeError when the distribution has no closed-form mode.
  torch::Tensor mode() const;
  /// TorchRL's deterministic action `[*batch, *event]`: the mode or the mean, as each class
  /// documents. Never throws.
  torch::Tensor deterministic_sample() const;

  /// Prints `Normal(loc: [4, 2], scale: [4, 2])`: the name and each parameter's shape.
  friend std::ostream& operator<<(std::ostream& os, const Distribution& dist);

 protected:
  explicit Distribution(std::string name) : name_(std::move(name)) {}

  /// Sets batch_shape and event_shape; constructors call it once parameters are checked.
  void set_shapes(std::vector<int64_t> batch_shape, std::vector<int64_t> event_shape);
  /// Sets both from `shape`, the last `event_dims` dims being the event.
  void set_shapes_from(c10::IntArrayRef shape, int64_t event_dims);

  /// Draws `[*sample_shape, *batch, *event]`, differentiably when `has_rsample()`.
  virtual torch::Tensor sample_impl(c10::IntArrayRef sample_shape) const = 0;
  /// Log-density of a value whose shape has been checked against `[*batch, *event]`.
  virtual torch::Tensor log_prob_impl(const torch::Tensor& value) const = 0;
  /// Closed-form entropy, or nullopt when there is none (then `has_entropy()` is false).
  virtual std::optional<torch::Tensor> entropy_impl() const = 0;
  /// Closed-form mean, or nullopt when there is none.
  virtual std::optional<torch::Tensor> mean_impl() const = 0;
  /// Closed-form mode, or nullopt when there is none.
  virtual std::optional<torch::Tensor> mode_impl() const = 0;
  /// The deterministic action.
  virtual torch::Tensor deterministic_sample_impl() const = 0;
  /// Parameters to print, in order, as (name, tensor).
  virtual std::vector<std::pair<std::string, torch::Tensor>> printed_params() const = 0;

  /// `[*sample_shape, *batch, *event]` as a vector.
  std::vector<int64_t> extended_shape(c10::IntArrayRef sample_shape) const;

 private:
  std::string name_;
  std::vector<int64_t> batch_shape_;
  std::vector<int64_t> event_shape_;
};

}  // namespace tensordict::nn
