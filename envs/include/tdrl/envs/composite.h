#pragma once

/// Deprecated: moved to <tdrl/specs/composite.h> (namespace tdrl::specs, target tdrl::specs).
/// These aliases keep code written against tdrl::envs compiling through release 0.2 and are
/// removed after it; tdrl's own code does not use them (docs/specs.md).

#include <tdrl/specs/composite.h>

namespace tdrl::envs {

using Composite = specs::Composite;
using CompositePtr = specs::CompositePtr;
using SpecValue = specs::SpecValue;
using specs::spec_equal;
using specs::spec_repr;
using specs::spec_shape;

}  // namespace tdrl::envs
