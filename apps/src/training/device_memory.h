#pragma once

#include <cstdint>
#include <optional>

#include <torch/types.h>

namespace tdrl::apps::detail {

/// The total memory of GPU `device`, in bytes; nullopt for the CPU, and where this LibTorch was
/// built without CUDA's headers (Debian's) or the GPU cannot be queried.
std::optional<int64_t> device_memory_bytes(torch::Device device);

}  // namespace tdrl::apps::detail
