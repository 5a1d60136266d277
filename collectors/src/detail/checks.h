#pragma once

// The checks every collector makes of its CollectorOptions before it builds anything.

#include <cstdint>
#include <string>

#include <tdrl/collectors/collector.h>
#include <tensordict/errors.h>

namespace tdrl::collectors::detail {

// The smallest multiple of `multiple` (> 0) that is >= value (>= 0).
inline int64_t round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// frames_per_batch >= 1, total_frames >= 1 or -1 (endless), init_random_frames >= 0; throws
// ValueError naming `where` (the collector), the option and the fix. max_frames_per_traj is
// left to the Collector that runs the env (a multi-process collector's workers check it).
inline void check_frame_counts(const std::string& where, const CollectorOptions& options) {
  TDRL_CHECK(!(options.frames_per_batch() < 1), tensordict::ValueError, where,
             ": frames_per_batch is ", std::to_string(options.frames_per_batch()),
             "; set CollectorOptions().frames_per_batch(n) with n >= 1");
  const auto total = options.total_frames();
  TDRL_CHECK(!(total == 0 || total < -1), tensordict::ValueError, where, ": total_frames is ",
             std::to_string(total), "; it must be >= 1, or -1 for endless collection");
  TDRL_CHECK(!(options.init_random_frames() < 0), tensordict::ValueError, where,
             ": init_random_frames is ", std::to_string(options.init_random_frames()),
             "; it must be >= 0");
}

// max_frames_per_traj >= 1 or -1 (no limit); throws ValueError naming `where`.
inline void check_trajectory_limit(const std::string& where, const CollectorOptions& options) {
  const auto max_traj = options.max_frames_per_traj();
  TDRL_CHECK(!(max_traj == 0 || max_traj < -1), tensordict::ValueError, where,
             ": max_frames_per_traj is ", std::to_string(max_traj),
             "; it must be >= 1, or -1 for no limit");
}

}  // namespace tdrl::collectors::detail
