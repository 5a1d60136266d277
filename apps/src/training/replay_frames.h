#pragma once

// Stacked frames in a replay buffer: the env's CatFrames stacks are stored as single frames
// and stacked again when sampling (replay::FrameStack), so the buffer holds one frame per step.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tdrl/apps/config.h>
#include <tdrl/envs/env_base.h>
#include <tdrl/envs/transforms/image.h>
#include <tdrl/replay/replay_buffer.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::apps::detail {

/// The CatFrames transforms of an env, as a replay buffer sees them.
class ReplayFrames {
 public:
  /// The CatFrames of `env`, searched through its TransformedEnvs and Composes, in order.
  static ReplayFrames of(const envs::EnvBase& env);

  bool empty() const { return stackers_.empty(); }
  /// Why `config` cannot store these frames single (async batches come from one worker at a
  /// time, so an env's previous step is not a fixed number of rows back; sequences of a
  /// recurrent core keep no frame stacks; a capacity that the streams do not divide shifts
  /// rows when the writer wraps). Empty when none.
  std::vector<std::string> problems(const RunConfig& config, int64_t sequence_length) const;
  /// Appends to `buffer` a FrameStack per CatFrames, for `streams` interleaved envs
  /// (collector_streams).
  void install(replay::ReplayBuffer& buffer, int64_t streams);
  /// `data` with each stack (and its "next") cut to its newest frame (tensors aliased).
  tensordict::TensorDict newest_frames(const tensordict::TensorDict& data) const;
  /// `data` (batch `[*envs, T]`, T last) as the buffer stores it: each stack (and its "next")
  /// cut to its newest frame, rows time-major (all envs' step 0, then step 1, ...). Throws
  /// tensordict::ShapeError when the batch interleaves another number of envs than installed.
  tensordict::TensorDict to_rows(const tensordict::TensorDict& data) const;

 private:
  std::vector<std::shared_ptr<envs::CatFrames>> stackers_;
  int64_t streams_ = 1;
};

}  // namespace tdrl::apps::detail
