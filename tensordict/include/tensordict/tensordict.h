#pragma once

/// The tensordict package: TensorDict, lazy stacks, nested keys, non-tensor data and typed
/// tensorclasses.

#include <tensordict/dtype.h>
#include <tensordict/errors.h>
#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/name_table.h>
#include <tensordict/nested_key.h>
#include <tensordict/non_tensor_data.h>
#include <tensordict/tensor_dict.h>
#include <tensordict/tensorclass.h>
