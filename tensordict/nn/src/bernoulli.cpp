#include <tensordict/nn/bernoulli.h>

#include <sstream>

#include <tensordict/errors.h>

#include "detail/checks.h"

namespace tensordict::nn {

Bernoulli::Bernoulli(Logits logits) : Distribution("Bernoulli") {
  detail::check_floating("Bernoulli::Bernoulli", "logits", logits.tensor);
  logits_ = std::move(logits.tensor);
  probs_ = torch::sigmoid(logits_);
  set_shapes_from(logits_.sizes(), 0);
}

Bernoulli::Bernoulli(Probs probs) : Distribution("Bernoulli") {
  detail::check_floating("Bernoulli::Bernoulli", "probs", probs.tensor);
  probs_ = std::move(probs.tensor);
  if (probs_.numel() > 0 && validate_args()) {
    const double lo = probs_.min().item<double>();
    const double hi = probs_.max().item<double>();
    if (!(lo >= 0 && hi <= 1)) {
      std::ostringstream os;
      os << "Bernoulli::Bernoulli: probs must lie in [0, 1], got minimum " << lo << " and maximum "
         << hi;
      throw ValueError(os.str());
    }
  }
  logits_ = torch::logit(probs_);
  set_shapes_from(probs_.sizes(), 0);
}

torch::Tensor Bernoulli::sample_impl(c10::IntArrayRef sample_shape) const {
  return torch::bernoulli(probs_.expand(extended_shape(sample_shape)));
}

torch::Tensor Bernoulli::log_prob_impl(const torch::Tensor& value) const {
  // log p = -softplus(-l), log(1 - p) = -softplus(l); selected, not weighted, so that a
  // saturated probability never produces 0 * inf.
  return torch::where(value > 0.5, -torch::softplus(-logits_), -torch::softplus(logits_));
}

std::optional<torch::Tensor> Bernoulli::entropy_impl() const {
  // H = -p log p - (1 - p) log(1 - p) with each term 0 where its probability is 0.
  const auto a =
      torch::where(probs_ > 0, probs_ * torch::softplus(-logits_), torch::zeros_like(probs_));
  const auto b =
      torch::where(probs_ < 1, (1 - probs_) * torch::softplus(logits_), torch::zeros_like(probs_));
  return a + b;
}

std::optional<torch::Tensor> Bernoulli::mode_impl() const {
  return (probs_ > 0.5).to(probs_.scalar_type());
}

torch::Tensor Bernoulli::deterministic_sample_impl() const {
  return (probs_ > 0.5).to(probs_.scalar_type());
}

std::vector<std::pair<std::string, torch::Tensor>> Bernoulli::printed_params() const {
  return {{"logits", logits_}};
}

}  // namespace tensordict::nn
