#include <tdrl/replay/segment_tree.h>

#include <algorithm>
#include <string>

#include <tensordict/errors.h>

#include "detail/checks.h"

namespace tdrl::replay {

using tensordict::IndexError;
using tensordict::ShapeError;
using tensordict::ValueError;

namespace {
template <class Reduction>
const char* tree_name() {
  return std::is_same<Reduction, SumReduction>::value ? "SumSegmentTree" : "MinSegmentTree";
}
}  // namespace

template <class Reduction>
SegmentTree<Reduction>::SegmentTree(int64_t capacity) : capacity_(capacity), leaves_(1) {
  TDRL_CHECK(!(capacity < 1), ValueError, std::string(tree_name<Reduction>()),
             ": capacity must be at least 1, got ", std::to_string(capacity));
  while (leaves_ < capacity) leaves_ <<= 1;
  nodes_.assign(static_cast<size_t>(2 * leaves_), Reduction::identity());
}

template <class Reduction>
void SegmentTree<Reduction>::check_index(int64_t index, const char* method) const {
  TDRL_CHECK(!(index < 0 || index >= capacity_), IndexError, std::string(tree_name<Reduction>()),
             "::", method, ": index ", std::to_string(index), " is out of range [0, ",
             std::to_string(capacity_), ")");
}

template <class Reduction>
double SegmentTree<Reduction>::at(int64_t index) const {
  check_index(index, "at");
  return nodes_[static_cast<size_t>(leaves_ + index)];
}

template <class Reduction>
torch::Tensor SegmentTree<Reduction>::get(const torch::Tensor& index) const {
  const std::string where = std::string(tree_name<Reduction>()) + "::get: ";
  const auto idx = detail::as_index(index, where, "index");
  detail::check_index_range(idx, capacity_, where, "index", "capacity");
  auto out = torch::empty({idx.numel()}, torch::kDouble);
  const int64_t* p = idx.data_ptr<int64_t>();
  double* o = out.data_ptr<double>();
  for (int64_t i = 0; i < idx.numel(); ++i) o[i] = nodes_[static_cast<size_t>(leaves_ + p[i])];
  return out;
}

template <class Reduction>
torch::Tensor SegmentTree<Reduction>::values() const {
  return torch::from_blob(const_cast<double*>(nodes_.data()) + leaves_, {capacity_}, torch::kDouble)
      .clone();
}

template <class Reduction>
void SegmentTree<Reduction>::set(int64_t index, double value) {
  check_index(index, "set");
  size_t k = static_cast<size_t>(leaves_ + index);
  nodes_[k] = value;
  for (k >>= 1; k >= 1; k >>= 1) nodes_[k] = Reduction::apply(nodes_[2 * k], nodes_[2 * k + 1]);
}

template <class Reduction>
void SegmentTree<Reduction>::set(const torch::Tensor& index, const torch::Tensor& value) {
  const std::string where = std::string(tree_name<Reduction>()) + "::set: ";
  const auto idx = detail::as_index(index, where, "index");
  const int64_t n = idx.numel();
  TDRL_CHECK(value.defined(), ValueError, where, "value is an undefined tensor");
  auto values = value.detach().to(torch::kCPU, torch::kDouble).reshape({-1});
  if (values.numel() == 1 && n != 1) values = values.expand({n});
  values = values.contiguous();
  TDRL_CHECK(values.numel() == n, ShapeError, where, "value has ", std::to_string(values.numel()),
             " entries but index has ", std::to_string(n));
  set(c10::ArrayRef<int64_t>(idx.data_ptr<int64_t>(), static_cast<size_t>(n)),
      c10::ArrayRef<double>(values.data_ptr<double>(), static_cast<size_t>(n)));
}

template <class Reduction>
void SegmentTree<Reduction>::set(c10::ArrayRef<int64_t> index, c10::ArrayRef<double> value) {
  const std::string where = std::string(tree_name<Reduction>()) + "::set: ";
  const auto n = static_cast<int64_t>(index.size());
  TDRL_CHECK(value.size() == index.size(), ShapeError, where, "value has ",
             std::to_string(value.size()), " entries but index has ", std::to_string(n));
  for (int64_t i = 0; i < n; ++i) {
    TDRL_CHECK(!(index[i] < 0 || index[i] >= capacity_), IndexError, where, "index ",
               std::to_string(index[i]), " (position ", std::to_string(i), ") is out of range [0, ",
               std::to_string(capacity_), ") (capacity ", std::to_string(capacity_), ")");
  }
  if (n == 0) return;
  // Leaves first (in order, so a repeated index keeps its last value), then each level's
  // distinct parents once, bottom-up.
  std::vector<int64_t> level(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    nodes_[static_cast<size_t>(leaves_ + index[i])] = value[i];
    level[static_cast<size_t>(i)] = (leaves_ + index[i]) >> 1;
  }
  std::sort(level.begin(), level.end());
  level.erase(std::unique(level.begin(), level.end()), level.end());
  while (!level.empty() && level.front() >= 1) {
    for (int64_t k : level) {
      const auto u = static_cast<size_t>(k);
      nodes_[u] = Reduction::apply(nodes_[2 * u], nodes_[2 * u + 1]);
    }
    // Halving keeps the list sorted, so repeats are adjacent.
    size_t out = 0;
    for (size_t i = 0; i < level.size(); ++i) {
      const int64_t parent = level[i] >> 1;
      if (out == 0 || level[out - 1] != parent) level[out++] = parent;
    }
    level.resize(out);
  }
}

template <class Reduction>
void SegmentTree<Reduction>::assign(const torch::Tensor& values) {
  const std::string where = std::string(tree_name<Reduction>()) + "::assign: ";
  TDRL_CHECK(values.defined() && values.numel() == capacity_, ShapeError, where,
             "values must hold capacity ", std::to_string(capacity_), " entries, got ",
             (values.defined() ? detail::sizes_str(values) : std::string("undefined")));
  const auto v = values.detach().to(torch::kCPU, torch::kDouble).reshape({-1}).contiguous();
  std::copy(v.data_ptr<double>(), v.data_ptr<double>() + capacity_, nodes_.begin() + leaves_);
  std::fill(nodes_.begin() + leaves_ + capacity_, nodes_.end(), Reduction::identity());
  for (int64_t k = leaves_ - 1; k >= 1; --k) {
    const auto u = static_cast<size_t>(k);
    nodes_[u] = Reduction::apply(nodes_[2 * u], nodes_[2 * u + 1]);
  }
}

template <class Reduction>
void SegmentTree<Reduction>::clear() {
  std::fill(nodes_.begin(), nodes_.end(), Reduction::identity());
}

template <class Reduction>
double SegmentTree<Reduction>::reduce(int64_t begin, int64_t end) const {
  TDRL_CHECK(!(begin < 0 || begin >= end || end > capacity_), ValueError,
             std::string(tree_name<Reduction>()), "::reduce: range [", std::to_string(begin), ", ",
             std::to_string(end), ") must be non-empty and within [0, ", std::to_string(capacity_),
             ")");
  double left = Reduction::identity();
  double right = Reduction::identity();
  for (int64_t l = begin + leaves_, r = end + leaves_; l < r; l >>= 1, r >>= 1) {
    if (l & 1) left = Reduction::apply(left, nodes_[static_cast<size_t>(l++)]);
    if (r & 1) right = Reduction::apply(nodes_[static_cast<size_t>(--r)], right);
  }
  return Reduction::apply(left, right);
}

template class SegmentTree<SumReduction>;
template class SegmentTree<MinReduction>;

int64_t SumSegmentTree::find_prefix_sum_index(double mass) const {
  // Never step into a subtree of sum 0: rounding can leave `mass` at or past a subtree's
  // sum, and this keeps the result on a leaf with a positive value.
  size_t k = 1;
  const auto leaves = static_cast<size_t>(leaves_);
  while (k < leaves) {
    const size_t left = 2 * k;
    if (mass < nodes_[left] || !(nodes_[left + 1] > 0)) {
      k = left;
    } else {
      mass -= nodes_[left];
      k = left + 1;
    }
  }
  return static_cast<int64_t>(k - leaves);
}

torch::Tensor SumSegmentTree::find_prefix_sum_index(const torch::Tensor& mass) const {
  const auto m = mass.detach().to(torch::kCPU, torch::kDouble).reshape({-1}).contiguous();
  const int64_t n = m.numel();
  auto out = torch::empty({n}, torch::kLong);
  const double* pm = m.data_ptr<double>();
  int64_t* po = out.data_ptr<int64_t>();
  // Descents in groups that step down one level together: their loads are independent, so
  // the cache misses of a large tree overlap instead of queueing one behind another.
  constexpr int64_t kGroup = 16;
  const auto leaves = static_cast<size_t>(leaves_);
  for (int64_t base = 0; base < n; base += kGroup) {
    const int64_t g = std::min(kGroup, n - base);
    size_t k[kGroup];
    double left_mass[kGroup];
    for (int64_t j = 0; j < g; ++j) {
      k[j] = 1;
      left_mass[j] = pm[base + j];
    }
    while (k[0] < leaves) {  // every leaf is at the same depth
      for (int64_t j = 0; j < g; ++j) {
        const size_t left = 2 * k[j];
        if (left_mass[j] < nodes_[left] || !(nodes_[left + 1] > 0)) {
          k[j] = left;
        } else {
          left_mass[j] -= nodes_[left];
          k[j] = left + 1;
        }
      }
    }
    for (int64_t j = 0; j < g; ++j) po[base + j] = static_cast<int64_t>(k[j] - leaves);
  }
  return out;
}

}  // namespace tdrl::replay
