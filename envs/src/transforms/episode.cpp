// Episode bookkeeping transforms: StepCounter, InitTracker, FrameSkipTransform.

#include <tdrl/envs/transforms/episode.h>

#include <limits>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "../detail/transform_util.h"

namespace tdrl::envs {

using tensordict::ValueError;

namespace {

torch::Tensor flag_shaped(const TensorDict& td, torch::Dtype dtype, bool value) {
  return torch::full(detail::with_trailing_one(td.batch_size()), value ? 1 : 0,
                     torch::TensorOptions().dtype(dtype).device(detail::device_of(td)));
}

}  // namespace

// ---- StepCounter -----------------------------------------------------------------------------

StepCounter::StepCounter(StepCounterOptions options) : options_(std::move(options)) {
  TDRL_CHECK(!(options_.max_steps() && *options_.max_steps() < 1), ValueError,
             "StepCounter: max_steps is ", std::to_string(*options_.max_steps()),
             "; it must be >= 1");
  detail::reject_flag_key("StepCounter (step_count_key)", options_.step_count_key());
}

std::string StepCounter::to_string() const {
  return "StepCounter(step_count_key=" + options_.step_count_key().to_string() + ", max_steps=" +
         (options_.max_steps() ? std::to_string(*options_.max_steps()) : std::string("None")) +
         ", truncated_key=" + options_.truncated_key().to_string() +
         ", update_done=" + (options_.update_done() ? "true" : "false") + ")";
}

TensorDict StepCounter::reset(const TensorDict& input, TensorDict output) {
  auto count = flag_shaped(output, torch::kInt64, false);
  const auto mask = input.get_or(specs::kReset, torch::Tensor());
  const auto previous = input.find(options_.step_count_key());
  if (mask.defined() && previous) count = torch::where(mask, count, *previous);
  output.set(options_.step_count_key(), count);
  return output;
}

TensorDict StepCounter::step(const TensorDict& root, TensorDict next) {
  const auto previous = root.get_or(options_.step_count_key(), torch::Tensor());
  const auto count = previous.defined() ? previous + 1 : flag_shaped(next, torch::kInt64, true);
  next.set(options_.step_count_key(), count);
  if (!options_.max_steps()) return next;
  auto reached = count >= *options_.max_steps();
  if (const auto terminated = next.find(specs::kTerminated)) reached = reached & ~*terminated;
  const auto truncated = next.find(options_.truncated_key());
  next.set(options_.truncated_key(), truncated ? *truncated | reached : reached);
  if (options_.update_done()) {
    const auto done = next.find(specs::kDone);
    next.set(specs::kDone, done ? *done | reached : reached);
  }
  return next;
}

specs::CompositePtr StepCounter::transform_observation_spec(specs::CompositePtr spec,
                                                            const EnvSpecs& input) {
  const auto high =
      options_.max_steps() ? *options_.max_steps() : std::numeric_limits<int64_t>::max();
  spec->set(
      options_.step_count_key(),
      detail::bounded(torch::tensor(int64_t{0}), torch::tensor(high),
                      detail::with_trailing_one(input.batch_size), torch::kInt64, input.device));
  return spec;
}

// ---- InitTracker -----------------------------------------------------------------------------

InitTracker::InitTracker(InitTrackerOptions options) : options_(std::move(options)) {
  detail::reject_flag_key("InitTracker (init_key)", options_.init_key());
}

std::string InitTracker::to_string() const {
  return "InitTracker(init_key=" + options_.init_key().to_string() + ")";
}

TensorDict InitTracker::reset(const TensorDict& input, TensorDict output) {
  const auto mask = input.get_or(specs::kReset, torch::Tensor());
  output.set(options_.init_key(),
             mask.defined() ? mask.clone() : flag_shaped(output, torch::kBool, true));
  return output;
}

TensorDict InitTracker::step(const TensorDict& root, TensorDict next) {
  next.set(options_.init_key(), flag_shaped(next, torch::kBool, false));
  return next;
}

specs::CompositePtr InitTracker::transform_observation_spec(specs::CompositePtr spec,
                                                            const EnvSpecs& input) {
  spec->set(options_.init_key(), detail::flag_spec(input.batch_size, input.device));
  return spec;
}

// ---- FrameSkipTransform ----------------------------------------------------------------------

FrameSkipTransform::FrameSkipTransform(FrameSkipOptions options) : options_(options) {
  TDRL_CHECK(!(frame_skip() < 1), ValueError, "FrameSkipTransform: frame_skip is ",
             std::to_string(frame_skip()), "; it must be >= 1");
}

std::string FrameSkipTransform::to_string() const {
  return "FrameSkipTransform(frame_skip=" + std::to_string(frame_skip()) + ")";
}

TensorDict FrameSkipTransform::step_through(const TensorDict& root, const StepFn& inner) {
  // Each call gets its own shallow copy: the transforms below write their inverses into it.
  if (frame_skip() == 1) return inner(root);
  TensorDict next = inner(root.clone(/*recurse=*/false));
  torch::Tensor reward = next.get(reward_key_);
  for (int64_t i = 1; i < frame_skip(); ++i) {
    if (next.get(specs::kDone).any().item<bool>()) break;
    // Each repeat starts where the last one ended (step_mdp, keeping the action): the transforms
    // below that carry state from the root to "next" (RewardSum's running sum, StepCounter's
    // count, CatFrames' stack) read the last repeat's entries.
    TensorDict stepped = root.clone(/*recurse=*/false);
    stepped.set(specs::kNext, next);
    next = inner(step_mdp(stepped, StepMdpOptions().exclude_action(false).reward_key(reward_key_)));
    reward = reward + next.get(reward_key_);
  }
  next.set(reward_key_, reward);
  return next;
}

specs::CompositePtr FrameSkipTransform::transform_reward_spec(specs::CompositePtr spec,
                                                              const EnvSpecs& input) {
  reward_key_ = input.reward_key();
  return spec;
}

}  // namespace tdrl::envs
