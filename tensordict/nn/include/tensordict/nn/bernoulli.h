#pragma once

/// Bernoulli: independent binary outcomes, from logits or probabilities.

#include <tensordict/nn/distribution.h>

namespace tensordict::nn {

/// Independent Bernoulli variables `[*batch]` (event_shape `[]`) with P(1) = probs =
/// sigmoid(logits). Samples are 0/1 in the parameter's dtype. log_prob(value) for values
/// `[*sample, *batch]` in {0, 1} is value * logits - softplus(logits) (computed from logits, so
/// stable for saturated probabilities). Entropy is closed-form; mean is probs; mode and
/// deterministic_sample are 1 where probs > 0.5, else 0. No rsample.
/// Throws TypeError for a non-floating parameter and ValueError for probs outside [0, 1].
/// Example: `Bernoulli dist(Logits(scores));`
class Bernoulli : public Distribution {
 public:
  explicit Bernoulli(Logits logits);
  explicit Bernoulli(Probs probs);

  /// Log-odds `[*batch]`.
  const torch::Tensor& logits() const { return logits_; }
  /// P(1) `[*batch]`.
  const torch::Tensor& probs() const { return probs_; }

  bool has_rsample() const override { return false; }
  bool has_entropy() const override { return true; }

 protected:
  torch::Tensor sample_impl(c10::IntArrayRef sample_shape) const override;
  torch::Tensor log_prob_impl(const torch::Tensor& value) const override;
  std::optional<torch::Tensor> entropy_impl() const override;
  std::optional<torch::Tensor> mean_impl() const override { return probs_; }
  std::optional<torch::Tensor> mode_impl() const override;
  torch::Tensor deterministic_sample_impl() const override;
  std::vector<std::pair<std::string, torch::Tensor>> printed_params() const override;

 private:
  torch::Tensor logits_;
  torch::Tensor probs_;
};

}  // namespace tensordict::nn
