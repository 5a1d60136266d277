#pragma once
// Includes LibTorch's CUDA headers and defines TDRL_HAS_CUDA_HEADERS where they are usable: a
// LibTorch built with CUDA ships c10's generated CUDA configuration and ATen's CUDA headers, and
// its CMake package puts the CUDA toolkit's headers on the include path. Debian's CPU LibTorch
// ships some CUDA headers but not the generated one, and links no CUDA library.

#if __has_include(<c10/cuda/impl/cuda_cmake_macros.h>) && \
    __has_include(<ATen/cuda/CUDAContext.h>) && __has_include(<cuda_runtime_api.h>)
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#define TDRL_HAS_CUDA_HEADERS 1
#endif
