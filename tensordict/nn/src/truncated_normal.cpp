#include <tensordict/nn/truncated_normal.h>

#include <cmath>
#include <limits>

#include "detail/checks.h"

namespace tensordict::nn {

namespace {

const double kInvSqrt2 = 1.0 / std::sqrt(2.0);

torch::Tensor std_cdf(const torch::Tensor& x) { return 0.5 * (1 + torch::erf(x * kInvSqrt2)); }

torch::Tensor std_pdf(const torch::Tensor& x) {
  return torch::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
}

}  // namespace

TruncatedNormal::TruncatedNormal(torch::Tensor loc, torch::Tensor scale,
                                 TruncatedNormalOptions options)
    : BoundedNormal("TruncatedNormal", loc, scale, options) {}

torch::Tensor TruncatedNormal::log_z() const {
  // Z = Phi(b) - Phi(a), floored so that a vanishing interval mass stays finite.
  const double tiny = std::numeric_limits<float>::min();
  return (std_cdf(beta()) - std_cdf(alpha())).clamp_min(tiny).log();
}

torch::Tensor TruncatedNormal::sample_impl(c10::IntArrayRef sample_shape) const {
  const double eps = loc_.scalar_type() == torch::kDouble ? std::numeric_limits<double>::epsilon()
                                                          : std::numeric_limits<float>::epsilon();
  const auto u = torch::rand(extended_shape(sample_shape), loc_.options());
  const auto cdf_a = std_cdf(alpha());
  const auto cdf_b = std_cdf(beta());
  const auto p = (cdf_a + u * (cdf_b - cdf_a)).clamp(eps, 1 - eps);
  const auto xi = std::sqrt(2.0) * torch::erfinv(2 * p - 1);
  return torch::maximum(torch::minimum(loc_ + scale_ * xi, high_), low_);
}

torch::Tensor TruncatedNormal::log_prob_impl(const torch::Tensor& value) const {
  const auto inside = (value >= low_).logical_and(value <= high_);
  const auto lp = detail::normal_log_density(value, loc_, scale_) - log_z();
  const auto masked =
      torch::where(inside, lp, torch::full_like(lp, -std::numeric_limits<double>::infinity()));
  return detail::sum_rightmost(masked, event_dims_);
}

std::optional<torch::Tensor> TruncatedNormal::entropy_impl() const {
  const auto a = alpha();
  const auto b = beta();
  const auto z = log_z().exp();
  // a * phi(a) -> 0 as a -> -inf; where() keeps infinite bounds from producing NaN.
  const auto a_term = torch::where(a.isinf(), torch::zeros_like(a), a * std_pdf(a));
  const auto b_term = torch::where(b.isinf(), torch::zeros_like(b), b * std_pdf(b));
  const auto h =
      0.5 * std::log(2 * M_PI * M_E) + scale_.log() + log_z() + (a_term - b_term) / (2 * z);
  return detail::sum_rightmost(h, event_dims_);
}

std::optional<torch::Tensor> TruncatedNormal::mean_impl() const {
  return loc_ + scale_ * (std_pdf(alpha()) - std_pdf(beta())) / log_z().exp();
}

std::optional<torch::Tensor> TruncatedNormal::mode_impl() const {
  return torch::maximum(torch::minimum(loc_, high_), low_);
}

torch::Tensor TruncatedNormal::deterministic_sample_impl() const {
  return torch::maximum(torch::minimum(loc_, high_), low_);
}

}  // namespace tensordict::nn
