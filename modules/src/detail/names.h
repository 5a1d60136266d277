#pragma once

// The tensordict names every modules source uses unqualified. Private to modules/src: it puts
// them into tdrl::modules for the sources only, never for the package's users.

#include <tensordict/errors.h>
#include <tensordict/nested_key.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::modules {

using tensordict::NestedKey;
using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::TensorDict;
using tensordict::TypeError;
using tensordict::ValueError;

}  // namespace tdrl::modules
