#include "training/device_memory.h"

#include "training/cuda_headers.h"

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
