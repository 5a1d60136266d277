#include "detail/device_memory.h"

// A LibTorch built with CUDA ships c10's generated CUDA configuration and ATen's CUDA headers,
// and its CMake package puts the CUDA toolkit's headers on the include path. Debian's CPU
// LibTorch ships some CUDA headers but not the generated one.
#if __has_include(<c10/cuda/impl/cuda_cmake_macros.h>) && \
    __has_include(<ATen/cuda/CUDAContext.h>) && __has_include(<cuda_runtime_api.h>)
#include <ATen/cuda/CUDAContext.h>
#define TDRL_HAS_CUDA_HEADERS 1
#endif

#include <torch/cuda.h>

namespace tdrl::apps::detail {

std::optional<int64_t> device_memory_bytes(torch::Device device) {
  if (!device.is_cuda() || !torch::cuda::is_available()) return std::nullopt;
#ifdef TDRL_HAS_CUDA_HEADERS
  const int index = device.has_index() ? device.index() : at::cuda::current_device();
  return static_cast<int64_t>(at::cuda::getDeviceProperties(index)->totalGlobalMem);
#else
  return std::nullopt;
#endif
}

}  // namespace tdrl::apps::detail
