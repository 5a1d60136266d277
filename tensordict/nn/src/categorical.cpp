#include <tensordict/nn/categorical.h>

#include <sstream>

#include <tensordict/errors.h>

#include "detail/checks.h"

namespace tensordict::nn {

namespace {

// Checks probs in [0, 1] summing to 1 over the last dim; returns their log.
torch::Tensor logits_of_probs(const std::string& where, const torch::Tensor& probs, double atol) {
  if (probs.numel() > 0 && validate_args()) {
    const double lo = probs.min().item<double>();
    const double hi = probs.max().item<double>();
    if (!(lo >= 0 && hi <= 1)) {
      std::ostringstream os;
      os << where << ": probs must lie in [0, 1], got minimum " << lo << " and maximum " << hi;
      throw ValueError(os.str());
    }
    const double worst = (probs.sum(-1) - 1).abs().max().item<double>();
    if (!(worst <= atol)) {
      std::ostringstream os;
      os << where << ": probs must sum to 1 over the last dim (within " << atol
         << "), got a row whose sum is off by " << worst << "; normalise them or pass Logits";
      throw ValueError(os.str());
    }
  }
  return probs.log();
}

}  // namespace

Categorical::Categorical(Logits logits, CategoricalOptions options)
    : Categorical("Categorical", std::move(logits.tensor), false, options) {}
Categorical::Categorical(Probs probs, CategoricalOptions options)
    : Categorical("Categorical", std::move(probs.tensor), true, options) {}

Categorical::Categorical(std::string name, torch::Tensor param, bool from_probs,
                         const CategoricalOptions& options)
    : Distribution(name) {
  const std::string where = name + "::" + name;
  const std::string param_name = from_probs ? "probs" : "logits";
  detail::check_floating(where, param_name, param);
  TDRL_CHECK(!(param.dim() < 1), ShapeError, where, ": ", param_name,
             " must have shape [*batch, n] with n classes, got ", shape_str(param.sizes()));
  torch::Tensor logits = from_probs ? logits_of_probs(where, param, options.probs_atol()) : param;
  if (options.mask()) {
    const auto& mask = *options.mask();
    if (!mask.defined() || mask.scalar_type() != torch::kBool) {
      std::ostringstream os;
      os << where << ": mask must be a bool tensor, got "
         << (mask.defined() ? std::string(c10::toString(mask.scalar_type())) : "undefined");
      throw TypeError(os.str());
    }
    const auto shape = detail::broadcast_shape(where, param_name, logits, "mask", mask);
    if (static_cast<int64_t>(shape.size()) != logits.dim() ||
        !std::equal(shape.begin(), shape.end(), logits.sizes().begin())) {
      throw ShapeError(where + ": mask has shape " + shape_str(mask.sizes()) +
                       ", which would enlarge the " + param_name + " shape " +
                       shape_str(logits.sizes()) + "; it must broadcast to it");
    }
    TDRL_CHECK(
        !(logits.numel() > 0 && validate_args() && !mask.expand(shape).any(-1).all().item<bool>()),
        ValueError, where, ": mask leaves a row with no allowed class; every row of mask ",
        shape_str(mask.sizes()), " needs at least one true entry");
    mask_ = mask.expand(shape);
    logits = logits.masked_fill(mask_->logical_not(), -std::numeric_limits<double>::infinity());
  }
  logits_ = logits - logits.logsumexp(-1, true);
  set_shapes(detail::split_shape(logits_.sizes(), 1).first, {});
}

torch::Tensor Categorical::sample_indices(c10::IntArrayRef sample_shape) const {
  const int64_t n = num_categories();
  int64_t draws = 1;
  for (auto s : sample_shape) draws *= s;
  const auto rows = probs().reshape({-1, n});
  // multinomial draws [rows, draws]; move the draws in front of the batch dims.
  auto index = draws == 0 || rows.size(0) == 0
                   ? torch::empty({rows.size(0), draws}, rows.options().dtype(torch::kLong))
                   : torch::multinomial(rows, draws, /*replacement=*/true);
  std::vector<int64_t> shape(sample_shape.begin(), sample_shape.end());
  const auto batch = batch_shape();
  shape.insert(shape.end(), batch.begin(), batch.end());
  return index.t().reshape(shape);
}

torch::Tensor Categorical::sample_impl(c10::IntArrayRef sample_shape) const {
  return sample_indices(sample_shape);
}

torch::Tensor Categorical::index_log_prob(const torch::Tensor& index) const {
  if (torch::isFloatingType(index.scalar_type()) || index.scalar_type() == torch::kBool) {
    std::ostringstream os;
    os << name() << "::log_prob: value must hold integer class indices, got dtype "
       << index.scalar_type();
    throw TypeError(os.str());
  }
  const int64_t n = num_categories();
  if (index.numel() > 0 && validate_args()) {
    const int64_t lo = index.min().item<int64_t>();
    const int64_t hi = index.max().item<int64_t>();
    TDRL_CHECK(!(lo < 0 || hi >= n), ValueError, name(),
               "::log_prob: class indices must lie in [0, ", std::to_string(n),
               "), got values from ", std::to_string(lo), " to ", std::to_string(hi));
  }
  const auto value = index.to(torch::kLong).unsqueeze(-1);
  auto shape = detail::broadcast_shape(name() + "::log_prob", "value", value, "logits", logits_);
  shape.back() = 1;
  auto logits_shape = shape;
  logits_shape.back() = n;
  return logits_.expand(logits_shape).gather(-1, value.expand(shape)).squeeze(-1);
}

torch::Tensor Categorical::log_prob_impl(const torch::Tensor& value) const {
  return index_log_prob(value);
}

std::optional<torch::Tensor> Categorical::entropy_impl() const {
  // Masked classes have p = 0 and logit -inf: their term p * log p is taken as 0.
  const auto p_log_p =
      torch::where(logits_.isneginf(), torch::zeros_like(logits_), logits_.exp() * logits_);
  return -p_log_p.sum(-1);
}

std::optional<torch::Tensor> Categorical::mode_impl() const { return logits_.argmax(-1); }

torch::Tensor Categorical::deterministic_sample_impl() const { return logits_.argmax(-1); }

std::vector<std::pair<std::string, torch::Tensor>> Categorical::printed_params() const {
  std::vector<std::pair<std::string, torch::Tensor>> params{{"logits", logits_}};
  if (mask_) params.emplace_back("mask", *mask_);
  return params;
}

OneHotCategorical::OneHotCategorical(Logits logits, CategoricalOptions options)
    : Categorical("OneHotCategorical", std::move(logits.tensor), false, options) {
  set_shapes(std::vector<int64_t>(batch_shape().begin(), batch_shape().end()), {num_categories()});
}
OneHotCategorical::OneHotCategorical(Probs probs, CategoricalOptions options)
    : Categorical("OneHotCategorical", std::move(probs.tensor), true, options) {
  set_shapes(std::vector<int64_t>(batch_shape().begin(), batch_shape().end()), {num_categories()});
}

torch::Tensor OneHotCategorical::one_hot(const torch::Tensor& index) const {
  return torch::one_hot(index, num_categories()).to(logits().scalar_type());
}

torch::Tensor OneHotCategorical::sample_impl(c10::IntArrayRef sample_shape) const {
  return one_hot(sample_indices(sample_shape));
}

torch::Tensor OneHotCategorical::log_prob_impl(const torch::Tensor& value) const {
  TDRL_CHECK(!(value.dim() < 1 || value.size(-1) != num_categories()), ShapeError, name(),
             "::log_prob: value must be one-hot with last dim ", std::to_string(num_categories()),
             ", got shape ", shape_str(value.sizes()));
  return index_log_prob(value.argmax(-1));
}

std::optional<torch::Tensor> OneHotCategorical::mode_impl() const {
  return one_hot(logits().argmax(-1));
}

torch::Tensor OneHotCategorical::deterministic_sample_impl() const {
  return one_hot(logits().argmax(-1));
}

}  // namespace tensordict::nn
