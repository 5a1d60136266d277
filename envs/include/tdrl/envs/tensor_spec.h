#pragma once

/// Deprecated: moved to <tdrl/specs/tensor_spec.h> (namespace tdrl::specs, target tdrl::specs).
/// These aliases keep code written against tdrl::envs compiling through release 0.2 and are
/// removed after it; tdrl's own code does not use them (docs/specs.md).

#include <tdrl/specs/tensor_spec.h>

namespace tdrl::envs {

using TensorSpec = specs::TensorSpec;
using TensorSpecPtr = specs::TensorSpecPtr;
using UnboundedOptions = specs::UnboundedOptions;
using Unbounded = specs::Unbounded;
using BoundedOptions = specs::BoundedOptions;
using Bounded = specs::Bounded;
using CategoricalOptions = specs::CategoricalOptions;
using Categorical = specs::Categorical;
using OneHotOptions = specs::OneHotOptions;
using OneHot = specs::OneHot;
using BinaryOptions = specs::BinaryOptions;
using Binary = specs::Binary;
using MultiCategoricalOptions = specs::MultiCategoricalOptions;
using MultiCategorical = specs::MultiCategorical;

}  // namespace tdrl::envs
