#pragma once

/// FrameStack: frame stacks rebuilt at sample time from the single frames a replay buffer
/// stores (TorchRL's CatFrames used as a replay-buffer transform), so that the buffer holds
/// one frame per step instead of n.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/replay/storage.h>
#include <tensordict/nested_key.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::replay {

/// Options of FrameStack.
/// Example: `FrameStackOptions(4).keys({"pixels"}).streams(8)`
struct FrameStackOptions {
  explicit FrameStackOptions(int64_t n) : n_(n) {}
  /// Frames per stack, >= 1.
  TORCH_ARG(int64_t, n);
  /// The dim the frames are concatenated along, negative (counted from the last). Default -3:
  /// the channels of `[C, H, W]` frames.
  TORCH_ARG(int64_t, dim) = -3;
  /// The stored frame entries, stacked in place; ("next", key) is stacked too when the sample
  /// holds it. Default `{"pixels"}`.
  TORCH_ARG(std::vector<NestedKey>, keys) = std::vector<NestedKey>{NestedKey("pixels")};
  /// How many envs' steps are interleaved in the storage: the step before the one in row `r`
  /// of the same env is in row `r - streams` (a batch `[num_envs, T]` written time-major:
  /// `data.transpose(0, 1).reshape({-1})`). Default 1 (one env's steps in order).
  TORCH_ARG(int64_t, streams) = 1;
  /// The flag under "next" that ends an episode: a step whose ("next", done_key) is true is
  /// not part of the following step's episode. Default "done".
  TORCH_ARG(NestedKey, done_key) = NestedKey("done");
};

/// Rebuilds frame stacks in samples of a buffer that stores single frames.
///
/// A ReplayBuffer storage transform (ReplayBuffer::append_storage_transform): for each
/// sampled row, the stack holds the frames of the `n - 1` steps before it and its own, oldest
/// first along `dim`, walking back `streams` rows at a time; a step of another episode (its
/// ("next", done_key) set) or one no longer stored (overwritten, or before the first write)
/// is replaced by the oldest frame of the row's episode still stored, as envs::CatFrames pads
/// with the reset frame. So a sample equals the stacks CatFrames wrote during collection,
/// except for rows whose episode began before the oldest stored step. ("next", key) becomes
/// the stack without its oldest frame followed by the stored next frame.
///
/// Storage: a tensor storage of ndim 1 written in order by a RoundRobinWriter (the buffer's
/// default), whose max_size is a multiple of `streams`. Keys: reads each key, ("next", key)
/// and ("next", done_key) from the storage and the sample; writes the stacked keys.
/// Throws ValueError for n < 1, dim >= 0 or streams < 1 (constructor); when called,
/// ValueError for an ndim-2 storage or a max_size that `streams` does not divide, KeyError
/// naming the key for a stored entry missing.
/// Example:
/// ```
/// buffer.append_storage_transform(FrameStack(FrameStackOptions(4).streams(num_envs)));
/// ```
class FrameStack {
 public:
  explicit FrameStack(FrameStackOptions options);
  const FrameStackOptions& options() const { return options_; }

  /// Stacks the frames of `sample`, whose rows are the storage's elements `index`.
  TensorDict operator()(TensorDict sample, const torch::Tensor& index,
                        const Storage& storage) const;

  /// `FrameStack(n=4, dim=-3, keys=['pixels'], streams=8)`.
  std::string to_string() const;

 private:
  FrameStackOptions options_;
};

}  // namespace tdrl::replay
