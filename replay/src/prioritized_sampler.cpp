#include <tdrl/replay/prioritized_sampler.h>

#include <cmath>
#include <memory>
#include <sstream>

#include "detail/checks.h"

namespace tdrl::replay {

using tensordict::ValueError;

namespace {

void check_option(double value, const char* name, bool finite = true) {
  if (!(value >= 0) || (finite && !std::isfinite(value))) {
    std::ostringstream os;
    os << "PrioritizedSampler: " << name << " must be finite and >= 0, got " << value;
    throw ValueError(os.str());
  }
}

int64_t checked_capacity(int64_t max_capacity) {
  TDRL_CHECK(!(max_capacity < 1), ValueError,
             "PrioritizedSampler: max_capacity must be at least 1, got ",
             std::to_string(max_capacity));
  return max_capacity;
}

// The min tree ignores zero priorities, so that weights are relative to the smallest
// element that can actually be drawn.
torch::Tensor positive_or_inf(const torch::Tensor& p) {
  return torch::where(p > 0, p, torch::full_like(p, std::numeric_limits<double>::infinity()));
}

}  // namespace

PrioritizedSampler::PrioritizedSampler(int64_t max_capacity, PrioritizedSamplerOptions options)
    : max_capacity_(checked_capacity(max_capacity)),
      options_(options),
      max_priority_(options.max_priority()),
      sum_tree_(max_capacity_),
      min_tree_(max_capacity_) {
  check_option(options.alpha(), "alpha");
  check_option(options.beta(), "beta");
  check_option(options.eps(), "eps");
  check_option(options.max_priority(), "max_priority");
}

std::string PrioritizedSampler::to_string() const {
  std::ostringstream os;
  os << "PrioritizedSampler(max_capacity=" << max_capacity_ << ", alpha=" << options_.alpha()
     << ", beta=" << options_.beta() << ", eps=" << options_.eps() << ")";
  return os.str();
}

void PrioritizedSampler::clear() {
  sum_tree_.clear();
  min_tree_.clear();
  max_priority_ = options_.max_priority();
}

void PrioritizedSampler::set_beta(double beta) {
  check_option(beta, "beta");
  options_.beta(beta);
}

torch::Tensor PrioritizedSampler::priorities(int64_t n) const {
  TDRL_CHECK(!(n < 0 || n > max_capacity_), ValueError, op("priorities"), "n must be in [0, ",
             std::to_string(max_capacity_), "], got ", std::to_string(n));
  return sum_tree_.values().narrow(0, 0, n).clone();
}

void PrioritizedSampler::write(c10::ArrayRef<int64_t> index, c10::ArrayRef<double> p) {
  std::vector<double> positive(p.begin(), p.end());
  for (auto& v : positive)
    if (!(v > 0)) v = std::numeric_limits<double>::infinity();
  sum_tree_.set(index, p);
  min_tree_.set(index, positive);
}

SampleInfo PrioritizedSampler::sample_impl(const Storage& storage, int64_t batch_size) {
  const std::string where = op("sample");
  const int64_t n = storage.size();
  TDRL_CHECK(!(n > max_capacity_), ValueError, where, "the storage holds ", std::to_string(n),
             " elements but the sampler's max_capacity is ", std::to_string(max_capacity_),
             "; build it with max_capacity >= the storage's max_size");
  const double total = sum_tree_.sum();
  TDRL_CHECK(total > 0, ValueError, where,
             "every stored priority is 0, so no element can be drawn; use eps > 0 "
             "or set positive priorities");
  // One uniform mass per draw, then a descent per mass; weights from the drawn leaves.
  auto mass = torch::rand({batch_size}, torch::kDouble);
  double* m = mass.data_ptr<double>();
  for (int64_t i = 0; i < batch_size; ++i) m[i] *= total;
  auto index = sum_tree_.find_prefix_sum_index(mass);
  auto weight = torch::empty({batch_size}, torch::kFloat);
  const int64_t* idx = index.data_ptr<int64_t>();
  float* w = weight.data_ptr<float>();
  const double p_min = min_tree_.min(0, n);
  const double beta = options_.beta();
  for (int64_t i = 0; i < batch_size; ++i)
    w[i] = static_cast<float>(std::pow(sum_tree_.at(idx[i]) / p_min, -beta));
  return {index, weight};
}

void PrioritizedSampler::extend_impl(const torch::Tensor& index) {
  const double p = std::pow(max_priority_ + options_.eps(), options_.alpha());
  const std::vector<double> values(static_cast<size_t>(index.numel()), p);
  write(c10::ArrayRef<int64_t>(index.data_ptr<int64_t>(), values.size()), values);
}

void PrioritizedSampler::update_priority_impl(const torch::Tensor& index,
                                              const torch::Tensor& priority) {
  const auto n = static_cast<size_t>(index.numel());
  const double* pr = priority.data_ptr<double>();
  std::vector<double> p(n);
  for (size_t i = 0; i < n; ++i) {
    max_priority_ = std::max(max_priority_, pr[i]);
    p[i] = std::pow(pr[i] + options_.eps(), options_.alpha());
  }
  write(c10::ArrayRef<int64_t>(index.data_ptr<int64_t>(), n), p);
}

void PrioritizedSampler::state_dict_impl(TensorDict& state) const {
  state.set_non_tensor("max_capacity", max_capacity_);
  state.set_non_tensor("alpha", options_.alpha());
  state.set_non_tensor("beta", options_.beta());
  state.set_non_tensor("eps", options_.eps());
  state.set_non_tensor("max_priority", max_priority_);
  state.set("priorities", sum_tree_.values());
}

void PrioritizedSampler::check_against(const TensorDict& state, const StoredExtent& stored) const {
  const std::string where = op("load_state_dict");
  const auto p = detail::read_tensor(state, "priorities", where).to(torch::kDouble).reshape({-1});
  if (stored.size >= p.numel()) return;
  const auto unwritten = p.narrow(0, stored.size, p.numel() - stored.size);
  const auto nonzero = unwritten.nonzero();
  TDRL_CHECK(nonzero.numel() == 0, ValueError, where, "the checkpoint gives element ",
             std::to_string(stored.size + (nonzero.numel() ? nonzero[0].item<int64_t>() : 0)),
             " a priority, but its storage holds ", std::to_string(stored.size),
             " elements (elements never stored have none); the checkpoint's parts come from ",
             "different saves or were edited");
}

std::function<void()> PrioritizedSampler::prepare_load_impl(const TensorDict& state) {
  const std::string where = op("load_state_dict");
  const int64_t capacity = detail::read_int(state, "max_capacity", where);
  const double alpha = detail::read_double(state, "alpha", where);
  const double eps = detail::read_double(state, "eps", where);
  if (capacity != max_capacity_ || alpha != options_.alpha() || eps != options_.eps()) {
    std::ostringstream os;
    os << where << "the checkpoint's priorities are for max_capacity=" << capacity
       << ", alpha=" << alpha << ", eps=" << eps
       << " but this sampler has max_capacity=" << max_capacity_ << ", alpha=" << options_.alpha()
       << ", eps=" << options_.eps() << "; build the sampler with the saved options";
    throw ValueError(os.str());
  }
  const double beta = detail::read_double(state, "beta", where);
  const double max_priority = detail::read_double(state, "max_priority", where);
  check_option(beta, "beta");
  check_option(max_priority, "max_priority");
  const auto p = detail::read_tensor(state, "priorities", where).to(torch::kDouble).reshape({-1});
  if (p.numel() != max_capacity_ || !torch::isfinite(p).all().item<bool>() ||
      (p < 0).any().item<bool>())
    throw ValueError(where + "the checkpoint's priorities must be " +
                     std::to_string(max_capacity_) + " finite values >= 0, got shape " +
                     detail::sizes_str(p));
  auto sums = std::make_shared<SumSegmentTree>(max_capacity_);
  auto mins = std::make_shared<MinSegmentTree>(max_capacity_);
  sums->assign(p);
  mins->assign(positive_or_inf(p));
  return [this, sums, mins, beta, max_priority] {
    sum_tree_ = std::move(*sums);
    min_tree_ = std::move(*mins);
    options_.beta(beta);
    max_priority_ = max_priority;
  };
}

}  // namespace tdrl::replay
