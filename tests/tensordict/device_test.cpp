// TensorDict across devices: to(device, non_blocking), pin_memory, is_pinned. The *CUDA* cases
// need a GPU and skip without one (they compile everywhere; scripts/gpu_check.sh runs them on a
// GPU machine). The others hold on any machine.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/Context.h>
#include <torch/cuda.h>

#include <tensordict/tensordict.h>

namespace {

using tensordict::TensorDict;
using ::testing::HasSubstr;

// A collector-like batch [4, 8]: observations, actions, a nested "next" and a non-tensor entry.
TensorDict batch() {
  return TensorDict(
      {{"observation", torch::randn({4, 8, 17})},
       {"action", torch::randn({4, 8, 6})},
       {"next",
        {{"reward", torch::randn({4, 8, 1})}, {"done", torch::zeros({4, 8, 1}, torch::kBool)}}},
       {"note", "text"}},
      {4, 8});
}

// Every tensor leaf of `a` equals the one of `b` at its key (compared on the CPU).
void expect_same_leaves(const TensorDict& a, const TensorDict& b) {
  int64_t leaves = 0;
  for (const auto& [key, value] : a.items(true, true)) {
    const auto* x = std::get_if<torch::Tensor>(&value);
    if (!x) continue;
    EXPECT_TRUE(torch::equal(x->cpu(), b.get(key).cpu())) << key.to_string();
    ++leaves;
  }
  EXPECT_EQ(leaves, 4);
}

bool has_gpu() { return torch::cuda::is_available(); }

TEST(TensorDictDeviceTest, ToCpuNonBlockingKeepsValuesAndNonTensors) {
  const auto td = batch();
  const auto moved = td.to(torch::kCPU, /*non_blocking=*/true);
  expect_same_leaves(td, moved);
  EXPECT_EQ(moved.get_non_tensor<std::string>("note"), "text");
}

TEST(TensorDictDeviceTest, PageableMemoryIsNotPinnedAndAnEmptyOneNeither) {
  EXPECT_FALSE(batch().is_pinned());
  EXPECT_FALSE(TensorDict::empty({3}).is_pinned());
}

TEST(TensorDictDeviceTest, PinMemoryWithoutAGpuIsRefusedNamingWhatIsMissing) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const auto td = batch();
  try {
    (void)td.pin_memory();
    FAIL() << "pin_memory succeeded without a GPU";
  } catch (const tensordict::DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("pinned memory needs a LibTorch built with CUDA and a GPU"));
    EXPECT_THAT(e.what(), HasSubstr(at::hasCUDA() ? "no GPU" : "a LibTorch without CUDA"));
  }
  EXPECT_FALSE(td.is_pinned());
}

TEST(TensorDictDeviceCUDATest, PinMemoryPinsEveryLeafAndKeepsValues) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device on this machine";
  const auto td = batch();
  const auto pinned = td.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(td.is_pinned());
  expect_same_leaves(td, pinned);
  // Already pinned leaves are aliased, not copied again.
  const auto again = pinned.pin_memory();
  EXPECT_EQ(again.get("observation").data_ptr(), pinned.get("observation").data_ptr());
}

TEST(TensorDictDeviceCUDATest, NonBlockingCopyFromPinnedMemoryArrivesOnTheStream) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device on this machine";
  const auto td = batch();
  const auto on_gpu = td.pin_memory().to(torch::Device(torch::kCUDA, 0), /*non_blocking=*/true);
  EXPECT_EQ(on_gpu.device(), torch::Device(torch::kCUDA, 0));
  for (const auto& [key, value] : on_gpu.items(true, true)) {
    if (const auto* t = std::get_if<torch::Tensor>(&value)) {
      EXPECT_TRUE(t->is_cuda()) << key.to_string();
    }
  }
  // Work queued on the same stream sees the data; the host reads it after synchronizing.
  const auto sum = on_gpu.get("observation").sum();
  torch::cuda::synchronize();
  EXPECT_TRUE(torch::allclose(sum.cpu(), td.get("observation").sum()));
  expect_same_leaves(td, on_gpu.to(torch::kCPU));
}

TEST(TensorDictDeviceCUDATest, PinningAGpuTensorIsRefusedNamingItsKey) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device on this machine";
  auto td = batch();
  td.set({"next", "reward"}, td.get({"next", "reward"}).cuda());
  try {
    (void)td.pin_memory();
    FAIL() << "a GPU tensor was pinned";
  } catch (const tensordict::DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("('next', 'reward') is on cuda:0"));
  }
  EXPECT_FALSE(td.get("observation").is_pinned());
}

}  // namespace
