#pragma once

/// Categorical distributions over n classes: `Categorical` (integer samples) and
/// `OneHotCategorical` (one-hot samples), both with an optional action mask (TorchRL's
/// MaskedCategorical / MaskedOneHotCategorical).

#include <torch/arg.h>

#include <optional>

#include <tensordict/nn/distribution.h>

namespace tensordict::nn {

/// Options of Categorical and OneHotCategorical.
/// Example: `CategoricalOptions().mask(legal_actions)`
struct CategoricalOptions {
  /// Boolean mask `[*batch, n]` (or broadcastable to the logits): true marks an allowed class.
  /// Masked classes get probability 0 and are never sampled; each row needs one allowed class.
  TORCH_ARG(std::optional<torch::Tensor>, mask);
  /// Tolerance on |sum(probs) - 1| for the probs constructor. Default 1e-5.
  TORCH_ARG(double, probs_atol) = 1e-5;
};

/// Categorical over the last dim of logits/probs `[*batch, n]`: batch_shape `[*batch]`,
/// event_shape `[]`; samples are int64 class indices `[*sample, *batch]`.
///
/// log_prob(value) takes integer indices `[*sample, *batch]` and returns -inf for masked
/// classes; an index outside [0, n) throws ValueError. Entropy is closed-form and ignores
/// masked classes. No rsample, no mean (mean() throws TypeError as the mean of a class label
/// is meaningless); mode and deterministic_sample are the most probable allowed class.
///
/// Throws TypeError for non-floating logits/probs or a non-bool mask, ShapeError for a scalar
/// parameter or a mask that does not broadcast with the logits, ValueError for probs outside
/// [0, 1] or not summing to 1 within probs_atol, and for a row whose classes are all masked.
/// Example: `Categorical dist(Logits(scores), CategoricalOptions().mask(legal));`
class Categorical : public Distribution {
 public:
  explicit Categorical(Logits logits, CategoricalOptions options = {});
  explicit Categorical(Probs probs, CategoricalOptions options = {});

  /// Normalised log-probabilities `[*batch, n]` (logsumexp 0; -inf where masked).
  const torch::Tensor& logits() const { return logits_; }
  /// Probabilities `[*batch, n]` (0 where masked).
  torch::Tensor probs() const { return logits_.exp(); }
  /// The number of classes n.
  int64_t num_categories() const { return logits_.size(-1); }

  bool has_rsample() const override { return false; }
  bool has_entropy() const override { return true; }

 protected:
  Categorical(std::string name, torch::Tensor logits, bool from_probs,
              const CategoricalOptions& options);

  torch::Tensor sample_impl(c10::IntArrayRef sample_shape) const override;
  torch::Tensor log_prob_impl(const torch::Tensor& value) const override;
  std::optional<torch::Tensor> entropy_impl() const override;
  std::optional<torch::Tensor> mean_impl() const override { return std::nullopt; }
  std::optional<torch::Tensor> mode_impl() const override;
  torch::Tensor deterministic_sample_impl() const override;
  std::vector<std::pair<std::string, torch::Tensor>> printed_params() const override;

  /// Class indices `[*sample, *batch]` drawn from the probabilities.
  torch::Tensor sample_indices(c10::IntArrayRef sample_shape) const;
  /// log_prob of class indices `[*sample, *batch]`, after checking their range.
  torch::Tensor index_log_prob(const torch::Tensor& index) const;

 private:
  torch::Tensor logits_;
  std::optional<torch::Tensor> mask_;
};

/// Categorical with one-hot events: samples `[*sample, *batch, n]` in the logits' dtype,
/// batch_shape `[*batch]`, event_shape `[n]`. log_prob takes one-hot values
/// `[*sample, *batch, n]` (the class is the argmax of the last dim). mean() is the probabilities;
/// mode and deterministic_sample the one-hot most probable allowed class. Same options,
/// errors and capabilities (entropy, no rsample) as Categorical.
/// Example: `OneHotCategorical dist(Logits(scores));`
class OneHotCategorical : public Categorical {
 public:
  explicit OneHotCategorical(Logits logits, CategoricalOptions options = {});
  explicit OneHotCategorical(Probs probs, CategoricalOptions options = {});

 protected:
  torch::Tensor sample_impl(c10::IntArrayRef sample_shape) const override;
  torch::Tensor log_prob_impl(const torch::Tensor& value) const override;
  std::optional<torch::Tensor> mean_impl() const override { return probs(); }
  std::optional<torch::Tensor> mode_impl() const override;
  torch::Tensor deterministic_sample_impl() const override;

 private:
  torch::Tensor one_hot(const torch::Tensor& index) const;
};

}  // namespace tensordict::nn
