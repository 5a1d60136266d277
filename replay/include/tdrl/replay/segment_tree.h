#pragma once

/// Segment trees: SumSegmentTree and MinSegmentTree, the index structures of
/// PrioritizedSampler (TorchRL's SumSegmentTree / MinSegmentTree).

#include <cstdint>
#include <limits>
#include <vector>

#include <c10/util/ArrayRef.h>
#include <torch/types.h>

namespace tdrl::replay {

/// The reduction of SumSegmentTree: `a + b`, identity 0.
struct SumReduction {
  static double identity() { return 0.0; }
  static double apply(double a, double b) { return a + b; }
};

/// The reduction of MinSegmentTree: `min(a, b)`, identity +inf.
struct MinReduction {
  static double identity() { return std::numeric_limits<double>::infinity(); }
  static double apply(double a, double b) { return a < b ? a : b; }
};

/// A complete binary tree over `capacity` double leaves whose every inner node holds the
/// reduction of its two children, so a leaf update and a range reduction cost O(log n).
/// Leaves start at the reduction's identity. Stored as one array (root at 1, children of
/// node k at 2k and 2k + 1, leaves from the next power of two up).
///
/// Errors: IndexError for an index outside `[0, capacity)` (naming it and the capacity),
/// ShapeError for index/value tensors of different lengths, ValueError for an empty or
/// reversed range; nothing is changed then.
///
/// Thread safety: concurrent reads are safe; writes need exclusive access.
template <class Reduction>
class SegmentTree {
 public:
  /// `capacity` leaves set to the identity. Throws ValueError when capacity < 1.
  explicit SegmentTree(int64_t capacity);

  int64_t capacity() const { return capacity_; }
  /// Leaf `index`.
  double at(int64_t index) const;
  /// Leaves `index` (int64 `[n]`) as a double tensor `[n]`.
  torch::Tensor get(const torch::Tensor& index) const;
  /// Every leaf, double `[capacity]` (a copy).
  torch::Tensor values() const;

  /// Sets leaf `index` and the O(log n) nodes above it.
  void set(int64_t index, double value);
  /// Sets leaves `index` (int64 `[n]`) to `value` (`[n]`, or one value for all), any
  /// floating or integer dtype. Vectorised: all leaves are written first, then each level's
  /// changed parents are recomputed once (sorted, without repeats), so a batch costs at most
  /// n nodes per level. For a repeated index the last value wins.
  void set(const torch::Tensor& index, const torch::Tensor& value);
  /// The same from plain arrays of equal length (no tensor conversions: the form the
  /// samplers' hot paths use).
  void set(c10::ArrayRef<int64_t> index, c10::ArrayRef<double> value);
  /// Replaces every leaf by `values` (`[capacity]`) and rebuilds the tree in O(n).
  void assign(const torch::Tensor& values);
  /// Every leaf back to the identity.
  void clear();

  /// The reduction over all leaves (the root), O(1).
  double reduce() const { return nodes_[1]; }
  /// The reduction over leaves `[begin, end)`, O(log n). Throws ValueError unless
  /// `0 <= begin < end <= capacity`.
  double reduce(int64_t begin, int64_t end) const;

 protected:
  int64_t capacity_;
  int64_t leaves_;             // power of two >= capacity: leaf i is node leaves_ + i
  std::vector<double> nodes_;  // 2 * leaves_ nodes, node 0 unused

  void check_index(int64_t index, const char* method) const;
};

extern template class SegmentTree<SumReduction>;
extern template class SegmentTree<MinReduction>;

/// A segment tree of sums: `sum(begin, end)` and the prefix-sum search that samples a leaf
/// with probability proportional to its value.
///
/// Example:
/// ```
/// SumSegmentTree tree(4);
/// tree.set(torch::arange(4), torch::tensor({1.0, 2.0, 3.0, 4.0}));
/// tree.sum();                          // 10
/// tree.find_prefix_sum_index(3.5);     // 2: 1 + 2 <= 3.5 < 1 + 2 + 3
/// ```
class SumSegmentTree : public SegmentTree<SumReduction> {
 public:
  using SegmentTree<SumReduction>::SegmentTree;
  /// Sum of all leaves.
  double sum() const { return reduce(); }
  /// Sum of leaves `[begin, end)`.
  double sum(int64_t begin, int64_t end) const { return reduce(begin, end); }
  /// The smallest leaf `i` whose inclusive prefix sum exceeds `mass`, for leaves >= 0 and
  /// `0 <= mass < sum()`; a mass at or past the total (rounding) gives the last leaf with a
  /// positive value. O(log n).
  int64_t find_prefix_sum_index(double mass) const;
  /// The same for every element of `mass` (any floating dtype, `[n]`), int64 `[n]`.
  torch::Tensor find_prefix_sum_index(const torch::Tensor& mass) const;
};

/// A segment tree of minima: `min(begin, end)`.
/// Example: `MinSegmentTree tree(4); tree.set(1, 0.5); tree.min();  // 0.5`
class MinSegmentTree : public SegmentTree<MinReduction> {
 public:
  using SegmentTree<MinReduction>::SegmentTree;
  /// Minimum of all leaves (+inf when none was set).
  double min() const { return reduce(); }
  /// Minimum of leaves `[begin, end)`.
  double min(int64_t begin, int64_t end) const { return reduce(begin, end); }
};

}  // namespace tdrl::replay
