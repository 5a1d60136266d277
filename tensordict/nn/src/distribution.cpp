#include <tensordict/nn/distribution.h>

#include <cmath>
#include <sstream>

#include <tensordict/errors.h>

#include "detail/checks.h"

namespace tensordict::nn {

namespace {
thread_local bool validating = true;
}  // namespace

bool validate_args() { return validating; }

ValidateArgs::ValidateArgs(bool enabled) : previous_(validating) { validating = enabled; }

ValidateArgs::~ValidateArgs() { validating = previous_; }

void Distribution::set_shapes(std::vector<int64_t> batch_shape, std::vector<int64_t> event_shape) {
  batch_shape_ = std::move(batch_shape);
  event_shape_ = std::move(event_shape);
}

void Distribution::set_shapes_from(c10::IntArrayRef shape, int64_t event_dims) {
  auto [batch, event] = detail::split_shape(shape, event_dims);
  set_shapes(std::move(batch), std::move(event));
}

std::vector<int64_t> Distribution::extended_shape(c10::IntArrayRef sample_shape) const {
  std::vector<int64_t> shape(sample_shape.begin(), sample_shape.end());
  shape.insert(shape.end(), batch_shape_.begin(), batch_shape_.end());
  shape.insert(shape.end(), event_shape_.begin(), event_shape_.end());
  return shape;
}

torch::Tensor Distribution::sample(c10::IntArrayRef sample_shape) const {
  torch::NoGradGuard no_grad;
  return sample_impl(sample_shape);
}

torch::Tensor Distribution::rsample(c10::IntArrayRef sample_shape) const {
  TDRL_CHECK(has_rsample(), TypeError, name_, "::rsample: ", name_,
             " is not reparametrisable, so its samples carry no gradient; use sample() "
             "and a score-function (log_prob) estimator instead");
  return sample_impl(sample_shape);
}

torch::Tensor Distribution::log_prob(const torch::Tensor& value) const {
  TDRL_CHECK(value.defined(), TypeError, name_, "::log_prob: value is an undefined tensor");
  const std::vector<int64_t> expected = extended_shape({});
  bool ok = value.dim() >= 0;
  const int64_t vd = value.dim();
  const int64_t ed = static_cast<int64_t>(expected.size());
  for (int64_t i = 1; ok && i <= std::min(vd, ed); ++i) {
    const int64_t a = value.size(vd - i);
    const int64_t b = expected[ed - i];
    ok = a == b || a == 1 || b == 1;
  }
  TDRL_CHECK(ok, ShapeError, name_, "::log_prob: value has shape ", shape_str(value.sizes()),
             ", which does not broadcast with batch_shape + event_shape ", shape_str(expected),
             "; its trailing dims must match those");
  return log_prob_impl(value);
}

torch::Tensor Distribution::entropy() const {
  TDRL_CHECK(has_entropy(), TypeError, name_, "::entropy: ", name_,
             " has no closed-form entropy; estimate it as -log_prob(sample({N})).mean(0)");
  auto h = entropy_impl();
  TORCH_INTERNAL_ASSERT(h.has_value(), name_, " reports has_entropy() but gave none");
  return *h;
}

torch::Tensor Distribution::mean() const {
  auto m = mean_impl();
  TDRL_CHECK(m, TypeError, name_, "::mean: ", name_,
             " has no closed-form mean; estimate it as sample({N}).mean(0), or use "
             "deterministic_sample()");
  return *m;
}

torch::Tensor Distribution::mode() const {
  auto m = mode_impl();
  TDRL_CHECK(m, TypeError, name_, "::mode: ", name_,
             " has no closed-form mode; use deterministic_sample() instead");
  return *m;
}

torch::Tensor Distribution::deterministic_sample() const { return deterministic_sample_impl(); }

std::ostream& operator<<(std::ostream& os, const Distribution& dist) {
  os << dist.name_ << "(";
  bool first = true;
  for (const auto& [param, t] : dist.printed_params()) {
    os << (first ? "" : ", ") << param << ": " << shape_str(t.sizes());
    first = false;
  }
  return os << ")";
}

namespace detail {

void check_floating(const std::string& where, const std::string& param, const torch::Tensor& t) {
  TDRL_CHECK(t.defined(), TypeError, where, ": ", param, " is an undefined tensor");
  if (!torch::isFloatingType(t.scalar_type())) {
    std::ostringstream os;
    os << where << ": " << param << " must be a floating-point tensor, got dtype "
       << t.scalar_type() << "; convert it with .to(torch::kFloat)";
    throw TypeError(os.str());
  }
}

void check_positive(const std::string& where, const std::string& param, const torch::Tensor& t) {
  if (t.numel() == 0 || !validate_args()) return;
  const double lowest = t.min().item<double>();
  if (!(lowest > 0)) {
    std::ostringstream os;
    os << where << ": " << param << " must be > 0 everywhere, got minimum " << lowest;
    throw ValueError(os.str());
  }
}

std::vector<int64_t> broadcast_shape(const std::string& where, const std::string& name_a,
                                     const torch::Tensor& a, const std::string& name_b,
                                     const torch::Tensor& b) {
  const int64_t n = std::max(a.dim(), b.dim());
  std::vector<int64_t> out(n);
  for (int64_t i = 1; i <= n; ++i) {
    const int64_t x = i <= a.dim() ? a.size(a.dim() - i) : 1;
    const int64_t y = i <= b.dim() ? b.size(b.dim() - i) : 1;
    TDRL_CHECK(!(x != y && x != 1 && y != 1), ShapeError, where, ": ", name_a, " has shape ",
               shape_str(a.sizes()), " and ", name_b, " has shape ", shape_str(b.sizes()),
               ", which do not broadcast together");
    out[n - i] = x == 1 ? y : x;
  }
  return out;
}

void check_event_dims(const std::string& where, int64_t event_dims, c10::IntArrayRef shape) {
  TDRL_CHECK(!(event_dims < 0 || event_dims > static_cast<int64_t>(shape.size())), ValueError,
             where, ": event_dims must be in [0, ", std::to_string(shape.size()),
             "] for parameters of shape ", shape_str(shape), ", got ", std::to_string(event_dims));
}

torch::Tensor sum_rightmost(const torch::Tensor& t, int64_t n) {
  if (n == 0) return t;
  std::vector<int64_t> dims;
  for (int64_t i = 1; i <= n; ++i) dims.push_back(-i);
  return t.sum(dims);
}

torch::Tensor normal_log_density(const torch::Tensor& x, const torch::Tensor& loc,
                                 const torch::Tensor& scale) {
  const double half_log_2pi = 0.5 * std::log(2 * M_PI);
  const auto z = (x - loc) / scale;
  return -0.5 * z * z - scale.log() - half_log_2pi;
}

torch::Tensor normal_entropy(const torch::Tensor& scale) {
  return 0.5 + 0.5 * std::log(2 * M_PI) + scale.log();
}

std::pair<torch::Tensor, torch::Tensor> bounds(const std::string& where, const torch::Tensor& low,
                                               const torch::Tensor& high,
                                               const torch::Tensor& like) {
  auto lo = low.to(like.options());
  auto hi = high.to(like.options());
  broadcast_shape(where, "low", lo, "high", hi);
  broadcast_shape(where, "low", lo, "loc", like);
  broadcast_shape(where, "high", hi, "loc", like);
  if (validate_args() && !(lo < hi).all().item<bool>()) {
    std::ostringstream os;
    os << where << ": low must be < high everywhere, got low " << lo.min().item<double>() << ".."
       << lo.max().item<double>() << " and high " << hi.min().item<double>() << ".."
       << hi.max().item<double>();
    throw ValueError(os.str());
  }
  return {lo, hi};
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> split_shape(c10::IntArrayRef shape,
                                                                  int64_t event_dims) {
  const auto cut = shape.begin() + (static_cast<int64_t>(shape.size()) - event_dims);
  return {std::vector<int64_t>(shape.begin(), cut), std::vector<int64_t>(cut, shape.end())};
}

}  // namespace detail
}  // namespace tensordict::nn
