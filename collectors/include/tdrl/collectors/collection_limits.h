#pragma once

/// CollectionLimits: how much a collector collects and where it cuts trajectories, the part of
/// CollectorOptions (collector.h) that a config reaches; apart from the collector, so that a
/// config section can hold it without LibTorch's headers.

#include <cstdint>

#include <torch/arg.h>

#include <tensordict/fields.h>

namespace tdrl::collectors {

/// The batch size, the length and the trajectory cut of a collection. CollectorOptions derives
/// from it (so `CollectorOptions().frames_per_batch(1000).total_frames(100000)` reads as
/// before). Names follow TorchRL's collector arguments.
struct CollectionLimits {
  /// Frames (env steps of one sub-env) per yielded batch. With an env of batch size `[*B]`
  /// (numel N), each batch holds `T = frames_per_batch / N` steps of every sub-env, and
  /// frames_per_batch is rounded up to a multiple of N (with a warning). Required, >= 1.
  TORCH_ARG(int64_t, frames_per_batch) = 0;
  /// Frames to collect in all; iteration ends after them. -1 (default) never ends. Rounded
  /// up to a multiple of frames_per_batch (with a warning), so every batch is full.
  TORCH_ARG(int64_t, total_frames) = -1;
  /// While fewer than this many frames have been collected (counted at the start of a
  /// batch), the batch uses random actions from the action spec instead of the policy.
  /// Default 0.
  TORCH_ARG(int64_t, init_random_frames) = 0;
  /// A trajectory is cut after this many steps: its last step gets ("next", "truncated") and
  /// ("next", "done") true and the sub-env is reset. -1 (default): no limit.
  TORCH_ARG(int64_t, max_frames_per_traj) = -1;

 public:
  /// The four limits, each with its range (fields.h).
  void fields(tensordict::fields::FieldVisitor& v) {
    using tensordict::fields::at_least;
    v("frames_per_batch", frames_per_batch_, at_least(1),
      "frames per collected batch (all sub-envs)");
    v("total_frames", total_frames_, at_least(1).or_exactly(-1),
      "frames to collect in all (-1: never end)");
    v("init_random_frames", init_random_frames_, at_least(0),
      "random actions first (off-policy warm-up)");
    v("max_frames_per_traj", max_frames_per_traj_, at_least(1).or_exactly(-1),
      "cut trajectories longer than this (-1: never)");
  }
};

}  // namespace tdrl::collectors
