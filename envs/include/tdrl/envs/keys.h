#pragma once

/// Deprecated: moved to <tdrl/specs/keys.h> (namespace tdrl::specs, target tdrl::specs).
/// These aliases keep code written against tdrl::envs compiling through release 0.2 and are
/// removed after it; tdrl's own code does not use them (docs/specs.md).

#include <tdrl/specs/keys.h>

namespace tdrl::envs {

using specs::kAction;
using specs::kDone;
using specs::kNext;
using specs::kObservation;
using specs::kReset;
using specs::kReward;
using specs::kTerminated;
using specs::kTruncated;

}  // namespace tdrl::envs
