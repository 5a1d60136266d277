#pragma once

/// Umbrella header of the specs target (`tdrl::specs`): the leaf specs (Unbounded, Bounded,
/// Categorical, OneHot, Binary, MultiCategorical) and Composite.

#include <tdrl/envs/composite.h>
#include <tdrl/envs/tensor_spec.h>
