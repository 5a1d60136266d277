#pragma once

/// Umbrella header of the specs target (`tdrl::specs`): the leaf specs (Unbounded, Bounded,
/// Categorical, OneHot, Binary, MultiCategorical) and Composite.

#include <tdrl/specs/composite.h>
#include <tdrl/specs/tensor_spec.h>
