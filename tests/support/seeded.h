// seeded(n): a CPU generator seeded with n, for tests that draw the same numbers twice.

#pragma once

#include <cstdint>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

namespace tdrl::testing {

/// A fresh CPU generator seeded with `seed`.
inline torch::Generator seeded(uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

}  // namespace tdrl::testing
