#pragma once

/// SliceSampler: contiguous slices of stored trajectories (TorchRL's SliceSampler).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/replay/samplers.h>

namespace tdrl::replay {

/// Options of SliceSampler: exactly one of `slice_len` / `num_slices`, and at most one of
/// `end_key` / `traj_key` (neither: `end_key` ("next", "done")).
/// Example: `SliceSamplerOptions().slice_len(8).traj_key({"collector", "traj_ids"})`
struct SliceSamplerOptions {
  /// Steps per slice; a batch of B holds B / slice_len slices (B must be a multiple).
  TORCH_ARG(std::optional<int64_t>, slice_len) = std::nullopt;
  /// Slices per batch; each holds B / num_slices steps (B must be a multiple).
  TORCH_ARG(std::optional<int64_t>, num_slices) = std::nullopt;
  /// A bool (or 0/1) key true at the last step of each trajectory, `[*, 1]` or `[*]`.
  TORCH_ARG(std::optional<NestedKey>, end_key) = std::nullopt;
  /// An integer key holding a trajectory id per step; a trajectory ends where the id
  /// changes.
  TORCH_ARG(std::optional<NestedKey>, traj_key) = std::nullopt;
  /// Only slices of exactly slice_len steps (trajectories shorter than that are never
  /// drawn). When false, a trajectory shorter than slice_len gives a slice of its whole
  /// length and the batch is smaller than asked. Default true.
  TORCH_ARG(bool, strict_length) = true;
  /// Written into each sample (bool `[B]`, or-ed into the stored entry when the sample has one,
  /// in its shape): true at each slice's first step, so that a recurrent module in sequence
  /// mode (LSTMModule, GRUModule) starts every slice from zeros instead of carrying a state
  /// across slices. Unset it (std::nullopt) to start each slice from the hidden state stored at
  /// its first step instead (R2D2's stored state). Default "is_init".
  TORCH_ARG(std::optional<NestedKey>, is_init_key) = NestedKey("is_init");
  /// Steps at the start of each slice that only warm a recurrent state up (R2D2's burn-in):
  /// flagged true under burn_in_key, which a loss leaves out of its terms. In [0, slice_len)
  /// (with num_slices, checked against each batch's slice length); slices are drawn as usual
  /// (the burn-in counts in their length). Default 0: none, and nothing is written.
  TORCH_ARG(int64_t, burn_in) = 0;
  /// The burn-in flags' key (bool `[B]`). Default "burn_in".
  TORCH_ARG(NestedKey, burn_in_key) = NestedKey("burn_in");
};

/// Draws slices of consecutive steps that never cross the end of a trajectory.
///
/// Trajectory ends are the steps where `end_key` is true (or where `traj_key` changes), plus
/// the last stored element, the newest written row (in a full circular storage the oldest
/// data follows it and is another trajectory), and with an ndim-2 storage the end of every
/// row. Each slice picks a trajectory uniformly among those long enough, then a start
/// uniformly among the positions where the slice fits. The result is the concatenation of
/// the slices in order, `[num_slices * slice_len]` (reshape it to
/// `[num_slices, slice_len]`). Trajectory bounds are recomputed only when the storage
/// changed (Storage::version).
///
/// Flags: is_init_key true at each slice's first step, burn_in_key true on its first burn_in
/// steps (SampleInfo::flags; ReplayBuffer::sample writes them into the sample).
///
/// Errors: the constructor throws ValueError unless exactly one of slice_len / num_slices
/// is set and positive, when both end_key and traj_key are set, or for a burn_in outside
/// [0, slice_len); sample throws ValueError when the batch size is not a multiple of
/// slice_len / num_slices or a slice is not longer than burn_in, KeyError when the storage
/// lacks the key, ValueError when no trajectory is slice_len long (strict_length).
///
/// Example:
/// ```
/// auto sampler = std::make_shared<SliceSampler>(SliceSamplerOptions().slice_len(4));
/// TensorDictReplayBuffer rb(storage, sampler);
/// auto batch = rb.sample(32).reshape({8, 4});  // 8 slices of 4 steps
/// ```
class SliceSampler final : public Sampler {
 public:
  explicit SliceSampler(SliceSamplerOptions options);
  std::string name() const override { return "SliceSampler"; }
  std::string to_string() const override;
  void clear() override;
  const SliceSamplerOptions& options() const { return options_; }
  /// The key that marks trajectory ends (end_key mode) or holds trajectory ids.
  const NestedKey& key() const { return key_; }

 protected:
  SampleInfo sample_impl(const Storage& storage, int64_t batch_size) override;

 private:
  /// Recomputes starts_/lengths_ when the storage changed since the last call.
  void refresh(const Storage& storage);
  /// The flags of a sample whose slices have the given lengths, in order.
  std::vector<std::pair<NestedKey, torch::Tensor>> flags(const std::vector<int64_t>& lengths,
                                                         const std::string& where) const;

  SliceSamplerOptions options_;
  NestedKey key_;
  bool by_traj_ids_;
  const Storage* cached_storage_ = nullptr;  // the cache below is of this storage
  uint64_t cached_version_ = 0;
  int64_t cached_size_ = -1;
  torch::Tensor starts_;   // int64 [trajectories], first element of each
  torch::Tensor lengths_;  // int64 [trajectories]
};

}  // namespace tdrl::replay
