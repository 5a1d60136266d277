#pragma once
// The differences between the LibTorch generations tdrl builds against, in one place: Debian 12's
// LibTorch 1.13.1 (the default build) and the newest on PyPI (2.15.0 when last checked; the
// build against it: scripts/setup.sh --torch pypi). Each entry says which versions need it and
// when it can go. Code elsewhere uses these names, never a version test of its own.
//
// Build-level entries (CMake, not this header):
// - C++ standard: C++20 everywhere (LibTorch >= 2.13 requires it), except clang with LibTorch 1.x,
//   which compiles as C++17: LibTorch 1.x's ATen/core/List.h destroys a std::vector of the
//   incomplete c10::IValue in an inline constructor, which clang rejects under C++20. Goes with
//   LibTorch 1.x (cmake/TdrlTorchCompat.cmake, TDRL_CXX_STANDARD).
// - A LibTorch found with another's libraries is refused at configure (stays); a PyPI wheel's
//   CUDA libraries are given to the linker (-rpath-link) and the installed libraries find that
//   LibTorch through their RPATH (stays); the system's fmt comes before the wheel's for spdlog
//   (goes with spdlog < 1.15); GCC 12's false -Wstringop-overflow, -Warray-bounds and -Wrestrict
//   under C++20 are off (goes with GCC 12). All in cmake/TdrlTorchCompat.cmake.

#include <torch/version.h>

/// TDRL_TORCH_AT_LEAST(major, minor): whether the LibTorch compiled against is that version or
/// newer. Only this header tests versions.
#define TDRL_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||       \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// The type of a c10d process group that send/recv/broadcast take: c10d::ProcessGroupGloo (and
// NCCL's) derive from c10d::Backend since LibTorch 2.0, from c10d::ProcessGroup before, and 2.x's
// c10d::ProcessGroup is a dispatcher over backends. Goes with LibTorch 1.x.
// TDRL_C10D_GROUP_HEADER is the header that defines it.
namespace c10d {
class Backend;
class ProcessGroup;
}  // namespace c10d
namespace tensordict::compat {
#if TDRL_TORCH_AT_LEAST(2, 0)
using ProcessGroup = c10d::Backend;
#define TDRL_C10D_GROUP_HEADER <torch/csrc/distributed/c10d/Backend.hpp>
#else
using ProcessGroup = c10d::ProcessGroup;
#define TDRL_C10D_GROUP_HEADER <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
}  // namespace tensordict::compat

// An integer of a TensorIndex (an index, a slice's start, stop or step): int64_t in LibTorch
// 1.x, c10::SymInt since 2.0 (symbolic shapes). Goes with LibTorch 1.x.
#if TDRL_TORCH_AT_LEAST(2, 0)
#include <c10/core/SymInt.h>
namespace tensordict::compat {
inline int64_t index_int(const c10::SymInt& v) { return v.expect_int(); }
}  // namespace tensordict::compat
#else
#include <cstdint>
namespace tensordict::compat {
inline int64_t index_int(int64_t v) { return v; }
}  // namespace tensordict::compat
#endif

// The key of a parameter's entry in torch::optim::Optimizer::state(): the TensorImpl's address
// (void*) since LibTorch 2.0, that address printed as a string before. Goes with LibTorch 1.x.
#include <ATen/core/Tensor.h>
#if TDRL_TORCH_AT_LEAST(2, 0)
namespace tensordict::compat {
inline void* optimizer_state_key(const at::Tensor& p) { return p.unsafeGetTensorImpl(); }
}  // namespace tensordict::compat
#else
#include <c10/util/string_utils.h>
namespace tensordict::compat {
inline std::string optimizer_state_key(const at::Tensor& p) {
  return c10::guts::to_string(p.unsafeGetTensorImpl());
}
}  // namespace tensordict::compat
#endif

// Multiplies each tensor of a list in place by a 0-dim tensor: one multi-tensor kernel since
// LibTorch 2.1 (at::_foreach_mul_ with a Tensor), a loop before. Goes with LibTorch 1.x.
#include <ATen/ATen.h>
namespace tensordict::compat {
inline void foreach_mul_(at::TensorList tensors, const at::Tensor& factor) {
#if TDRL_TORCH_AT_LEAST(2, 1)
  at::_foreach_mul_(tensors, factor);
#else
  for (const auto& t : tensors) const_cast<at::Tensor&>(t).mul_(factor);
#endif
}
}  // namespace tensordict::compat

// at::_fused_adam_ with the learning rate in a tensor (one kernel for all parameters of a group,
// reading the step counts and the learning rate from device memory): in LibTorch 2.x CUDA
// builds (2.11 and 2.15 checked), absent from 1.x. Goes with LibTorch 1.x.
#define TDRL_HAS_FUSED_ADAM_TENSOR_LR TDRL_TORCH_AT_LEAST(2, 4)
