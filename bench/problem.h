// The problem size the RL benchmarks share (losses, modules, replay, SAC): batches of 256
// HalfCheetah-sized transitions (17 observation dims, 6 action dims) discounted by 0.99, so
// that their figures in docs/performance.md describe one workload.

#pragma once

#include <cstdint>

namespace tdrl::bench {

constexpr int64_t kBatch = 256;
constexpr int64_t kObs = 17;
constexpr int64_t kAction = 6;
constexpr double kGamma = 0.99;

}  // namespace tdrl::bench
