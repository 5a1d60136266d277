#pragma once

/// Deprecated: the specs moved to <tdrl/specs.h> (namespace tdrl::specs, target tdrl::specs).
/// This header and its tdrl::envs aliases are kept through release 0.2 and removed after it.

#include <tdrl/envs/composite.h>
#include <tdrl/envs/tensor_spec.h>
