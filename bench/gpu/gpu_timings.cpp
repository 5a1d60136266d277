// GPU against CPU in one process (scripts/gpu_check.sh runs it on a GPU machine; without a GPU
// it prints the CPU column and says why the other is empty):
// - ClipPPOLoss forward + backward at batch 2048 (observation 17, action 6, 64x64 networks, as
//   bench_losses), gradients reset to none first.
// - TensorDict::to(cuda) of a collector batch (16 HalfCheetah envs x 256 steps: observation,
//   action, its distribution's loc and scale, log-prob, trajectory ids, and next's observation,
//   reward, done, terminated, truncated), from pageable memory and from pinned memory
//   (non_blocking), against the same leaves moved one by one with raw LibTorch calls.
// Each figure is the mean over `iterations` after 10 warm-up iterations, the GPU's queue
// drained (synchronize) before the clock stops. Output: one Markdown row per step, in ms.

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <tdrl/losses.h>
#include <tdrl/modules.h>
#include <tensordict/nn.h>
#include <tensordict/tensordict.h>

#include "../actors.h"
#include "../ppo_fixture.h"

namespace tdrl::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Mean milliseconds of `step` on `device` (synchronized when it is a GPU).
double time_ms(const std::function<void()>& step, torch::Device device, int iterations) {
  const auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  for (int i = 0; i < 10; ++i) step();
  sync();
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) step();
  sync();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count() / iterations;
}

double clip_ppo_ms(torch::Device device) {
  torch::manual_seed(0);
  PpoFixture f;
  f.loss->to(device);
  const TensorDict batch = f.batch.to(device);
  const auto params = f.loss->parameters();
  return time_ms(
      [&] {
        for (auto p : params) p.mutable_grad() = torch::Tensor();
        const auto out = f.loss->forward(batch);
        (out.get("loss_objective") + out.get("loss_critic") + out.get("loss_entropy")).backward();
      },
      device, 200);
}

TensorDict collector_batch() {
  const std::vector<int64_t> b{16, 256};
  const auto f = [&](int64_t n) { return torch::randn({16, 256, n}); };
  return TensorDict({{"observation", f(kObs)},
                     {"action", f(kAction)},
                     {"loc", f(kAction)},
                     {"scale", f(kAction)},
                     {"sample_log_prob", torch::randn({16, 256})},
                     {"collector", {{"traj_ids", torch::zeros({16, 256}, torch::kInt64)}}},
                     {"next",
                      {{"observation", f(kObs)},
                       {"reward", f(1)},
                       {"done", torch::zeros({16, 256, 1}, torch::kBool)},
                       {"terminated", torch::zeros({16, 256, 1}, torch::kBool)},
                       {"truncated", torch::zeros({16, 256, 1}, torch::kBool)}}}},
                    b);
}

void row(const char* step, const std::string& cpu, const std::string& gpu, const char* note) {
  std::printf("| %s | %s | %s | %s |\n", step, cpu.c_str(), gpu.c_str(), note);
}

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace
}  // namespace tdrl::bench

int main() {
  using namespace tdrl::bench;
  torch::set_num_threads(1);
  const bool gpu = torch::cuda::is_available();
  const torch::Device cuda(torch::kCUDA, 0);
  std::printf("| step | CPU (1 thread), ms | GPU, ms | notes |\n| --- | --- | --- | --- |\n");
  const double ppo_cpu = clip_ppo_ms(torch::kCPU);
  row("ClipPPOLoss forward + backward, batch 2048", ms(ppo_cpu),
      gpu ? ms(clip_ppo_ms(cuda)) : "no GPU", "HalfCheetah sizes, 64x64 networks");
  if (!gpu) {
    std::printf("(no CUDA device: the GPU column and the transfers are not measured)\n");
    return 0;
  }
  const auto batch = collector_batch();
  const auto pinned = batch.pin_memory();
  std::vector<torch::Tensor> leaves;
  for (const auto& [key, value] : batch.items(true, true)) {
    if (const auto* t = std::get_if<torch::Tensor>(&value)) leaves.push_back(*t);
  }
  const double ours = time_ms([&] { (void)batch.to(cuda); }, cuda, 200);
  const double raw = time_ms(
      [&] {
        for (const auto& t : leaves) (void)t.to(cuda);
      },
      cuda, 200);
  const double ours_pinned = time_ms([&] { (void)pinned.to(cuda, true); }, cuda, 200);
  row("TensorDict::to(cuda), collector batch [16, 256], pageable", "-", ms(ours),
      ("raw LibTorch, leaf by leaf: " + ms(raw) + " ms, ratio " + ms(ours / raw)).c_str());
  row("TensorDict::to(cuda, non_blocking), same batch, pinned", "-", ms(ours_pinned),
      ("pin_memory() once beforehand; " + std::to_string(batch.numel()) + " steps").c_str());
  return 0;
}
