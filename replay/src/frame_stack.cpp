// FrameStack: frame stacks rebuilt from a storage's single frames at sample time.

#include <tdrl/replay/frame_stack.h>

#include <string>
#include <utility>
#include <vector>

#include <tensordict/errors.h>

namespace tdrl::replay {

using tensordict::KeyError;
using tensordict::ValueError;

FrameStack::FrameStack(FrameStackOptions options) : options_(std::move(options)) {
  TDRL_CHECK(options_.n() >= 1, ValueError, "FrameStack: n is ", std::to_string(options_.n()),
             "; stack at least 1 frame");
  TDRL_CHECK(options_.dim() < 0, ValueError, "FrameStack: dim is ", std::to_string(options_.dim()),
             "; it must be negative (counted from the last dim, away from the batch dim)");
  TDRL_CHECK(options_.streams() >= 1, ValueError, "FrameStack: streams is ",
             std::to_string(options_.streams()), "; it must be at least 1 (the number of envs)");
  TDRL_CHECK(!options_.keys().empty(), ValueError, "FrameStack: keys is empty; name the frames");
}

std::string FrameStack::to_string() const {
  std::string keys;
  for (const auto& k : options_.keys()) keys += (keys.empty() ? "" : ", ") + k.to_string();
  return "FrameStack(n=" + std::to_string(options_.n()) +
         ", dim=" + std::to_string(options_.dim()) + ", keys=[" + keys +
         "], streams=" + std::to_string(options_.streams()) + ")";
}

TensorDict FrameStack::operator()(TensorDict sample, const torch::Tensor& index,
                                  const Storage& storage) const {
  const int64_t streams = options_.streams();
  TDRL_CHECK(storage.ndim() == 1, ValueError, "FrameStack: the storage ", storage.to_string(),
             " has ndim ", std::to_string(storage.ndim()),
             "; frames are found row by row in an ndim-1 storage");
  const int64_t rows = storage.max_rows();
  TDRL_CHECK(rows % streams == 0, ValueError, "FrameStack: the storage holds ",
             std::to_string(rows), " rows, which ", std::to_string(streams),
             " interleaved envs (streams) do not divide: the envs' steps would shift rows "
             "when the writer wraps; make max_size a multiple of ",
             std::to_string(streams));
  const int64_t n = options_.n();
  if (n == 1) return sample;
  const NestedKey done_key = NestedKey("next").join(options_.done_key());

  // Which earlier row each stack position reads: walk back `streams` rows while the step is
  // stored and in the same episode, else stay on the oldest frame found.
  const auto idx = index.to(torch::kCPU, torch::kInt64).reshape({-1});
  const auto age = (storage.last_row() - idx).remainder(rows);
  const auto done = storage.column(done_key);
  const int64_t batch = idx.size(0);
  std::vector<torch::Tensor> sources{idx};  // newest first
  auto same_episode = torch::ones_like(idx, torch::kBool);
  for (int64_t k = 1; k < n; ++k) {
    const auto candidate = (idx - k * streams).remainder(rows);
    const auto stored = (age + k * streams) < storage.num_rows();
    // `candidate` is gathered only where stored, so clamp the others into range first.
    const auto safe = torch::where(stored, candidate, idx);
    const auto ended =
        done.index_select(0, safe.to(done.device())).reshape({batch, -1}).any(-1).to(torch::kCPU);
    same_episode = same_episode & stored & ended.logical_not();
    sources.push_back(torch::where(same_episode, candidate, sources.back()));
  }

  for (const auto& key : options_.keys()) {
    const auto own = sample.find(key);
    TDRL_CHECK(own.has_value(), KeyError, "FrameStack: the sample has no ", key.to_string(),
               "; the buffer must store the single frames under it");
    const auto column = storage.column(key);
    std::vector<torch::Tensor> frames;  // oldest first
    frames.reserve(n);
    for (int64_t k = n - 1; k >= 1; --k)
      frames.push_back(column.index_select(0, sources[k].to(column.device())).to(own->device()));
    frames.push_back(*own);
    const auto next_key = NestedKey("next").join(key);
    if (const auto next = sample.find(next_key)) {
      std::vector<torch::Tensor> next_frames(frames.begin() + 1, frames.end());
      next_frames.push_back(*next);
      sample.set(next_key, torch::cat(next_frames, options_.dim()));
    }
    sample.set(key, torch::cat(frames, options_.dim()));
  }
  return sample;
}

}  // namespace tdrl::replay
