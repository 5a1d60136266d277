#pragma once

/// Python's names of torch dtypes ("torch.float32", "torch.int64", ...), as PyTorch prints
/// them and as Python tensordict writes them into meta.json. One table for every package, so
/// that error messages, printed specs and saved folders all spell a dtype the same way.

#include <optional>
#include <string>

#include <c10/core/ScalarType.h>

namespace tensordict {

/// Python's name of `dtype`: "torch.float32", "torch.int64", "torch.bool", ... A dtype
/// without a Python alias in the table is "torch." followed by LibTorch's own name.
std::string dtype_name(c10::ScalarType dtype);

/// The dtype Python calls `name` ("torch.float32", ...); nothing for a name not in the table
/// (the caller reports it with the context it has).
std::optional<c10::ScalarType> dtype_from_name(const std::string& name);

}  // namespace tensordict
