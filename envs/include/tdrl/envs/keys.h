#pragma once

/// Deprecated: moved to <tdrl/specs/keys.h> (namespace tdrl::specs, target tdrl::specs).
/// These aliases keep code written against tdrl::envs compiling through release 0.2 and are
/// removed after it; tdrl's own code does not use them (docs/specs.md).

#include <tdrl/specs/keys.h>

namespace tdrl::envs {

using specs::kObservation;
using specs::kAction;
using specs::kReward;
using specs::kDone;
using specs::kTerminated;
using specs::kTruncated;
using specs::kNext;
using specs::kReset;

}  // namespace tdrl::envs
