// ReplayFrames: the env's frame stacks stored single in the replay buffer.

#include "training/replay_frames.h"

#include <tdrl/envs/transforms.h>
#include <tdrl/replay/frame_stack.h>
#include <tensordict/errors.h>

#include "training/collector_modes.h"

namespace tdrl::apps::detail {

namespace {

void collect(const std::vector<envs::TransformPtr>& transforms,
             std::vector<std::shared_ptr<envs::CatFrames>>& out) {
  for (const auto& t : transforms) {
    if (auto c = std::dynamic_pointer_cast<envs::CatFrames>(t)) out.push_back(c);
    if (auto compose = std::dynamic_pointer_cast<envs::Compose>(t))
      collect(compose->transforms(), out);
  }
}

void find_in(const envs::EnvBase& env, std::vector<std::shared_ptr<envs::CatFrames>>& out) {
  const auto* transformed = dynamic_cast<const envs::TransformedEnv*>(&env);
  if (!transformed) return;
  // The transforms nearest the base env come first.
  find_in(*transformed->base_env(), out);
  collect(transformed->transform().transforms(), out);
}

}  // namespace

ReplayFrames ReplayFrames::of(const envs::EnvBase& env) {
  ReplayFrames frames;
  find_in(env, frames.stackers_);
  return frames;
}

std::vector<std::string> ReplayFrames::problems(const RunConfig& config,
                                                int64_t sequence_length) const {
  std::vector<std::string> out;
  if (empty()) return out;
  const auto streams = collector_streams(config.collector, config.env.num_envs);
  if (!streams)
    out.push_back("'collector.mode' is " + config.collector.mode +
                  ", but env.transforms stacks frames (cat_frames), which the replay buffer "
                  "stores single and stacks again from each env's previous steps; " +
                  config.collector.mode +
                  " batches come from one worker at a time, so those steps are not a fixed "
                  "number of rows back. Set collector.mode: single or sync");
  if (sequence_length > 0)
    out.push_back(
        "env.transforms stacks frames (cat_frames), but model.core " + config.model.core +
        " replays sequences, which carry the past in the core's state; remove cat_frames, or set "
        "model.core: mlp");
  if (streams && config.replay() && config.replay()->capacity % *streams != 0)
    out.push_back("'replay.capacity' is " + std::to_string(config.replay()->capacity) +
                  ", not a multiple of the " + std::to_string(*streams) +
                  " envs a batch interleaves (env.num_envs x collector.num_workers), which "
                  "frame stacking at sample time (cat_frames) needs; set it to a multiple");
  return out;
}

void ReplayFrames::install(replay::ReplayBuffer& buffer, int64_t streams) {
  streams_ = streams;
  for (const auto& stacker : stackers_) {
    const auto& o = stacker->options();
    buffer.append_storage_transform(
        replay::FrameStack(replay::FrameStackOptions(o.n())
                               .dim(o.dim())
                               .keys(stacker->out_keys())
                               .streams(streams)
                               .done_key(tensordict::NestedKey("done"))));
  }
}

tensordict::TensorDict ReplayFrames::newest_frames(const tensordict::TensorDict& data) const {
  auto out = data.clone(/*recurse=*/false);
  for (const auto& stacker : stackers_) {
    for (const auto& key : stacker->out_keys()) {
      for (const auto& k : {key, tensordict::NestedKey("next").join(key)}) {
        if (const auto stack = out.find(k)) out.set(k, stacker->newest_frame(*stack));
      }
    }
  }
  return out;
}

tensordict::TensorDict ReplayFrames::to_rows(const tensordict::TensorDict& data) const {
  auto rows = newest_frames(data);
  const auto& batch = rows.batch_size();
  const int64_t dims = static_cast<int64_t>(batch.size());
  if (dims <= 1) {
    TDRL_CHECK(streams_ == 1, tensordict::ShapeError, "Trainer: a collected batch of shape ",
               tensordict::shape_str(batch),
               " holds 1 env, but the replay buffer stacks frames of ", std::to_string(streams_),
               " interleaved envs");
    return rows.reshape({-1});
  }
  const int64_t steps = batch.back();
  const int64_t streams = steps > 0 ? rows.numel() / steps : 0;
  TDRL_CHECK(streams == streams_, tensordict::ShapeError, "Trainer: a collected batch of shape ",
             tensordict::shape_str(batch), " holds ", std::to_string(streams),
             " envs, but the replay buffer stacks frames of ", std::to_string(streams_),
             " interleaved envs (env.num_envs x collector.num_workers)");
  // Time first: row r's previous step of the same env is row r - streams.
  std::vector<int64_t> order{dims - 1};
  for (int64_t d = 0; d < dims - 1; ++d) order.push_back(d);
  return rows.permute(order).reshape({-1});
}

}  // namespace tdrl::apps::detail
