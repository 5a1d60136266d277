#pragma once

/// PrioritizedSampler: proportional prioritized experience replay (Schaul et al. 2016;
/// TorchRL's PrioritizedSampler) on a sum and a min segment tree.

#include <cstdint>
#include <functional>
#include <string>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/replay/prioritized_sampler_options.h>
#include <tdrl/replay/samplers.h>
#include <tdrl/replay/segment_tree.h>

namespace tdrl::replay {

/// Draws element i with probability `p_i / sum_j p_j`, `p_i = (priority_i + eps)^alpha`, and
/// returns importance weights `(p_i / p_min)^(-beta)` in `SampleInfo::weight` (float32; 1
/// for the least likely element; p_min is the smallest positive stored p).
///
/// Priorities live in a SumSegmentTree and a MinSegmentTree over `max_capacity` elements:
/// drawing a batch of B costs O(B log n) (one descent per uniform draw of mass in
/// `[0, sum)`), and a batch of priority updates O(B log n) with each changed tree node
/// recomputed once per batch. New or overwritten elements get the largest priority seen so
/// far (initially `max_priority`). Checkpoints hold every leaf and that maximum; the trees
/// are rebuilt on load.
///
/// Errors: sample throws ValueError when the storage holds more elements than
/// max_capacity or when every stored priority is 0 (alpha > 0 with eps 0); see
/// Sampler::update_priority for the priority checks.
///
/// Example:
/// ```
/// auto sampler = std::make_shared<PrioritizedSampler>(1000, PrioritizedSamplerOptions(0.7, 0.5));
/// ```
class PrioritizedSampler final : public Sampler {
 public:
  /// Throws ValueError when max_capacity < 1 or an option is out of range.
  PrioritizedSampler(int64_t max_capacity, PrioritizedSamplerOptions options);

  std::string name() const override { return "PrioritizedSampler"; }
  std::string to_string() const override;
  bool has_priorities() const override { return true; }
  int64_t capacity() const override { return max_capacity_; }
  void clear() override;

  const PrioritizedSamplerOptions& options() const { return options_; }
  /// Changes beta (e.g. annealed towards 1 during training); ValueError when negative.
  /// Not synchronised: call it between samples, or through the buffer's own lock.
  void set_beta(double beta);
  /// `p_i = (priority_i + eps)^alpha` of elements `[0, n)`, double `[n]` (a copy).
  torch::Tensor priorities(int64_t n) const;
  /// The largest priority seen so far (before eps and alpha).
  double max_priority() const { return max_priority_; }
  const SumSegmentTree& sum_tree() const { return sum_tree_; }
  const MinSegmentTree& min_tree() const { return min_tree_; }

  /// Elements never stored have no priority.
  void check_against(const TensorDict& state, const StoredExtent& stored) const override;

 protected:
  SampleInfo sample_impl(const Storage& storage, int64_t batch_size) override;
  void extend_impl(const torch::Tensor& index) override;
  void update_priority_impl(const torch::Tensor& index, const torch::Tensor& priority) override;
  void state_dict_impl(TensorDict& state) const override;
  std::function<void()> prepare_load_impl(const TensorDict& state) override;

 private:
  /// Writes p into both trees; the min tree gets +inf for p = 0, so that p_min is the
  /// smallest positive p.
  void write(c10::ArrayRef<int64_t> index, c10::ArrayRef<double> p);

  int64_t max_capacity_;
  PrioritizedSamplerOptions options_;
  double max_priority_;
  SumSegmentTree sum_tree_;
  MinSegmentTree min_tree_;
};

}  // namespace tdrl::replay
