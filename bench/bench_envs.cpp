// Google Benchmark of the classic-control envs: CartPole-v1 stepped through EnvBase against
// the same equations written by hand, in the same binary.
//
// Each iteration is one step of every sub-env with automatic reset of the finished ones (what
// a collector does), at batch 1 and 1024:
// - Ours: `env.step_and_maybe_reset(td)` on a CartPoleEnv (action checked against its spec,
//   ("next", ...) written, step_mdp, partial reset of done sub-envs through "_reset").
// - RawLoop: the same equations in a plain C++ loop over arrays of doubles, writing float32
//   observations, rewards and done flags into preallocated arrays, resetting finished carts
//   from a std::mt19937_64 (what a hand-written C++ env does).
// - RawTensor: the same equations as vectorised LibTorch math on a [B, 4] float64 state
//   (about 30 tensor ops per step), resetting with torch::where.
// RawLoop against RawTensor is the measurement that chose plain C++ for the envs.
//
// All three read the same precomputed actions. One intra-op thread.

#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <tdrl/envs/cartpole.h>
#include <tensordict/tensordict.h>

#include "common.h"

namespace tdrl::bench {
namespace {

using tensordict::TensorDict;

constexpr int kActionSets = 16;

// CartPole-v1's constants (Gymnasium's), as the hand-written sides spell them.
constexpr double kGravity = 9.8;
constexpr double kMassPole = 0.1;
constexpr double kTotalMass = 1.1;
constexpr double kLength = 0.5;
constexpr double kPoleMassLength = 0.05;
constexpr double kForceMag = 10.0;
constexpr double kTau = 0.02;
constexpr double kThetaThreshold = 12.0 * 2.0 * M_PI / 360.0;
constexpr double kXThreshold = 2.4;
constexpr int64_t kMaxSteps = 500;

// kActionSets random action tensors [batch] int64 (0 or 1), seeded.
std::vector<torch::Tensor> make_actions(int64_t batch) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(123);
  std::vector<torch::Tensor> actions;
  for (int i = 0; i < kActionSets; ++i) {
    actions.push_back(torch::randint(0, 2, {batch}, gen, torch::kInt64));
  }
  return actions;
}

void cartpole_ours(benchmark::State& state, int64_t batch) {
  const auto actions = make_actions(batch);
  envs::CartPoleEnv env(envs::CartPoleEnvOptions().batch_size({batch}));
  env.set_seed(0);
  TensorDict td = env.reset();
  int i = 0;
  for (auto _ : state) {
    td.set("action", actions[static_cast<size_t>(i++ % kActionSets)]);
    auto stepped_and_next = env.step_and_maybe_reset(td);
    td = stepped_and_next.second;
    benchmark::DoNotOptimize(td.get("observation").data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void cartpole_raw_loop(benchmark::State& state, int64_t batch) {
  const auto actions = make_actions(batch);
  const auto n = static_cast<size_t>(batch);
  std::mt19937_64 rng(0);
  std::uniform_real_distribution<double> init(-0.05, 0.05);
  std::vector<double> s(4 * n);
  for (auto& v : s) v = init(rng);
  std::vector<int64_t> elapsed(n, 0);
  std::vector<float> obs(4 * n), reward(n);
  std::vector<uint8_t> terminated(n), truncated(n), done(n);
  int i = 0;
  for (auto _ : state) {
    const int64_t* a = actions[static_cast<size_t>(i++ % kActionSets)].data_ptr<int64_t>();
    for (size_t k = 0; k < n; ++k) {
      double* c = s.data() + 4 * k;
      const double force = a[k] == 1 ? kForceMag : -kForceMag;
      const double costheta = std::cos(c[2]), sintheta = std::sin(c[2]);
      const double temp = (force + kPoleMassLength * (c[3] * c[3]) * sintheta) / kTotalMass;
      const double thetaacc =
          (kGravity * sintheta - costheta * temp) /
          (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
      const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
      c[0] = c[0] + kTau * c[1];
      c[1] = c[1] + kTau * xacc;
      c[2] = c[2] + kTau * c[3];
      c[3] = c[3] + kTau * thetaacc;
      terminated[k] = c[0] < -kXThreshold || c[0] > kXThreshold || c[2] < -kThetaThreshold ||
                      c[2] > kThetaThreshold;
      truncated[k] = ++elapsed[k] >= kMaxSteps;
      done[k] = terminated[k] || truncated[k];
      reward[k] = 1.0f;
      for (int j = 0; j < 4; ++j) obs[4 * k + j] = static_cast<float>(c[j]);
      if (done[k]) {
        for (int j = 0; j < 4; ++j) c[j] = init(rng);
        elapsed[k] = 0;
      }
    }
    benchmark::DoNotOptimize(obs.data());
    benchmark::DoNotOptimize(reward.data());
    benchmark::DoNotOptimize(done.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void cartpole_raw_tensor(benchmark::State& state, int64_t batch) {
  const auto actions = make_actions(batch);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor s = torch::rand({batch, 4}, gen, f64) * 0.1 - 0.05;
  torch::Tensor elapsed = torch::zeros({batch}, torch::kInt64);
  int i = 0;
  for (auto _ : state) {
    const auto& a = actions[static_cast<size_t>(i++ % kActionSets)];
    const auto x = s.select(1, 0), x_dot = s.select(1, 1);
    const auto theta = s.select(1, 2), theta_dot = s.select(1, 3);
    const auto force = (a.to(torch::kFloat64) * 2.0 - 1.0) * kForceMag;
    const auto costheta = torch::cos(theta), sintheta = torch::sin(theta);
    const auto temp = (force + kPoleMassLength * theta_dot.square() * sintheta) / kTotalMass;
    const auto thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kLength * (4.0 / 3.0 - kMassPole * costheta.square() / kTotalMass));
    const auto xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
    const auto next = torch::stack({x + kTau * x_dot, x_dot + kTau * xacc, theta + kTau * theta_dot,
                                    theta_dot + kTau * thetaacc},
                                   1);
    const auto terminated =
        (next.select(1, 0).abs() > kXThreshold) | (next.select(1, 2).abs() > kThetaThreshold);
    elapsed = elapsed + 1;
    const auto truncated = elapsed >= kMaxSteps;
    const auto done = terminated | truncated;
    const auto reward = torch::ones({batch, 1}, torch::kFloat32);
    const auto obs = next.to(torch::kFloat32);
    const auto fresh = torch::rand({batch, 4}, gen, f64) * 0.1 - 0.05;
    s = torch::where(done.unsqueeze(1), fresh, next);
    elapsed = torch::where(done, torch::zeros_like(elapsed), elapsed);
    benchmark::DoNotOptimize(obs.data_ptr());
    benchmark::DoNotOptimize(reward.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

const std::vector<int64_t>& batches() {
  static const std::vector<int64_t> b = {1, 1024};
  return b;
}

void register_benchmarks() {
  for (int64_t b : batches()) {
    const std::string prefix = "BM_CartPole/B" + std::to_string(b);
    benchmark::RegisterBenchmark((prefix + "/Ours").c_str(), cartpole_ours, b)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((prefix + "/RawLoop").c_str(), cartpole_raw_loop, b)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((prefix + "/RawTensor").c_str(), cartpole_raw_tensor, b)
        ->Unit(benchmark::kMicrosecond);
  }
}

std::string run_name(int64_t batch, const std::string& side) {
  return "BM_CartPole/B" + std::to_string(batch) + "/" + side;
}

void print_tables(const RatioReporter& reporter, std::ostream& os) {
  os << "\nCartPole-v1 step of the whole batch with auto-reset, env vs hand-written (median of "
        "repetitions), torch::set_num_threads(1). env-steps/s from CPU time; ratios against "
        "the raw loop.\n\n"
     << "| batch | side | real us | cpu us | env-steps/s (cpu) | ratio | cpu ratio |\n"
     << "|---:|---|---:|---:|---:|---:|---:|\n";
  for (int64_t b : batches()) {
    const Timing loop = reporter.timing(run_name(b, "RawLoop"));
    if (loop.real <= 0) continue;
    for (const char* side : {"Ours", "RawLoop", "RawTensor"}) {
      const Timing t = reporter.timing(run_name(b, side));
      if (t.real < 0) continue;
      const double steps_per_s = 1e9 * static_cast<double>(b) / t.cpu;
      os << "| " << b << " | " << side << " | " << fixed(t.real / 1e3, 2) << " | "
         << fixed(t.cpu / 1e3, 2) << " | " << fixed(steps_per_s / 1e6, 2) << " M | "
         << fixed(t.real / loop.real, 1) << " | " << fixed(t.cpu / loop.cpu, 1) << " |\n";
    }
  }
}

void describe(std::ostream& os) {
  os << "bench_envs: torch::set_num_threads(1); CartPole-v1, batch 1 and 1024, "
        "step with auto-reset\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
