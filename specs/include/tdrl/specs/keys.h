#pragma once

/// The canonical key names every environment, transform and collector uses (docs/keys.md).
/// Keys are an API: these never change silently.

namespace tdrl::specs {

/// The observation of a state-based task.
inline const char* const kObservation = "observation";
/// The frames of an env observed from pixels (from_pixels): uint8 `[*batch, H, W, 3]` RGB as
/// rendered; transforms turn them into `[*batch, C, H, W]` images (ToTensorImage).
inline const char* const kPixels = "pixels";
/// The action the policy writes and step() reads.
inline const char* const kAction = "action";
/// The reward of a transition, under ("next", ...).
inline const char* const kReward = "reward";
/// done = terminated OR truncated, `[*batch, 1]` bool.
inline const char* const kDone = "done";
/// The episode ended in a terminal state (no bootstrapping), `[*batch, 1]` bool.
inline const char* const kTerminated = "terminated";
/// The episode was cut short (time limit, instability), `[*batch, 1]` bool.
inline const char* const kTruncated = "truncated";
/// The sub-TensorDict step() writes the next state, reward and flags into.
inline const char* const kNext = "next";
/// The bool mask `[*batch, 1]` selecting which sub-envs reset() resets.
inline const char* const kReset = "_reset";

}  // namespace tdrl::specs
