// Google Benchmark of tdrl::collectors against the same collection written by hand, in the
// same binary.
//
// - Pendulum-v1 (one env, batch []), 1000 frames per batch, with random actions and with a
//   64x64 tanh MLP policy (TensorDictModule "observation" -> "action"):
//   - Collector: one `next()` of an endless Collector (policy under NoGrad, interaction type,
//     step, truncation/traj-id bookkeeping, copy into a new batch, partial reset).
//   - Raw: the same work by hand: rand_action or the MLP's forward on the observation tensor,
//     `env.step_and_maybe_reset`, and a copy of every leaf of the step into a preallocated
//     [1000, ...] buffer through a precomputed leaf list.
// - HalfCheetah-v4, MultiSyncCollector with 1 and 2 worker threads, 1000 frames per worker per
//   batch, the 64x64 MLP policy shared by the workers: frames/s and the 1 -> 2 scaling.
// - HalfCheetah-v4, Collector::state_dict() mid-episode (counters, the episodes in flight, the
//   env's mjData snapshot): what a checkpoint, and each MultiSync worker after each batch, pays.
// - DistributedCollector, sync, 2 worker processes (this binary relaunched with the worker
//   variables) on Pendulum-v1 with the MLP policy, 1000 frames per worker per batch.
//
// One intra-op thread everywhere (torch::set_num_threads(1)); real time for the multi-worker
// cases.

#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <tdrl/collectors/collector.h>
#include <tdrl/collectors/distributed_collector.h>
#include <tdrl/collectors/multi_collector.h>
#include <tdrl/envs/registry.h>
#include <tdrl/modules/mlp.h>
#include <tensordict/nn/tensordict_module.h>

#include "common.h"

namespace tdrl::bench {
namespace {

using collectors::Collector;
using collectors::CollectorOptions;
using collectors::CollectorPolicy;
using tensordict::NestedKey;
using tensordict::TensorDict;

constexpr int64_t kFrames = 1000;

modules::MLP pendulum_net() {
  torch::manual_seed(0);
  return modules::MLP(
      modules::MLPOptions(3, 1).num_cells({64, 64}).activation("tanh").activate_last_layer(true));
}

modules::MLP cheetah_net() {
  torch::manual_seed(0);
  return modules::MLP(
      modules::MLPOptions(17, 6).num_cells({64, 64}).activation("tanh").activate_last_layer(true));
}

CollectorPolicy keyed(const modules::MLP& net) {
  return tensordict::nn::TensorDictModule(
      net, tensordict::nn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action"}));
}

std::shared_ptr<envs::EnvBase> pendulum() {
  return envs::make_env("Pendulum-v1", envs::EnvOptions().seed(0));
}

void collector_pendulum(benchmark::State& state, bool mlp) {
  auto net = pendulum_net();
  Collector collector(pendulum(), mlp ? keyed(net) : CollectorPolicy(),
                      CollectorOptions().frames_per_batch(kFrames));
  time_calls(state, [&] { return collector.next(); });
  state.SetItemsProcessed(state.iterations() * kFrames);
}

void raw_pendulum(benchmark::State& state, bool mlp) {
  auto net = pendulum_net();
  auto env = pendulum();
  torch::NoGradGuard no_grad;
  TensorDict td = env->reset();
  // The leaf list and buffer come from one step, as a hand-written collector would.
  std::vector<std::pair<torch::Tensor, NestedKey>> leaves;
  {
    auto probe = env->step(env->rand_action(env->reset()));
    for (const auto& [key, value] : probe.items(true, true)) {
      const auto& t = std::get<torch::Tensor>(value);
      std::vector<int64_t> shape{kFrames};
      shape.insert(shape.end(), t.sizes().begin(), t.sizes().end());
      leaves.emplace_back(torch::empty(shape, t.options()), key);
    }
    td = env->reset();
  }
  for (auto _ : state) {
    for (int64_t t = 0; t < kFrames; ++t) {
      if (mlp) {
        td.set("action", net->forward(td.get("observation")));
      } else {
        env->rand_action(td);
      }
      auto [stepped, next_root] = env->step_and_maybe_reset(td);
      for (auto& [buffer, key] : leaves) buffer[t].copy_(stepped.get(key));
      td = next_root;
    }
    benchmark::DoNotOptimize(leaves);
  }
  state.SetItemsProcessed(state.iterations() * kFrames);
}

void multi_sync_cheetah(benchmark::State& state, int64_t workers) {
  auto net = cheetah_net();
  collectors::MultiSyncCollector collector([] { return envs::make_env("HalfCheetah-v4"); }, workers,
                                           keyed(net),
                                           CollectorOptions().frames_per_batch(kFrames * workers));
  collector.set_seed(0);
  time_calls(state, [&] { return collector.next(); });
  state.SetItemsProcessed(state.iterations() * kFrames * workers);
}

// What a checkpoint (and a MultiSync worker after each batch) pays to save a collector mid-episode:
// the counters, the episodes in flight and the env's state, a complete mjData snapshot here.
void state_dict_cheetah(benchmark::State& state) {
  auto net = cheetah_net();
  collectors::Collector collector(envs::make_env("HalfCheetah-v4"), keyed(net),
                                  CollectorOptions().frames_per_batch(kFrames));
  collector.set_seed(0);
  collector.next();
  time_calls(state, [&] { return collector.state_dict(); });
}

std::vector<std::string> g_launch;  // this binary's argv, to relaunch it as a worker

void distributed_pendulum(benchmark::State& state) {
  auto net = pendulum_net();
  collectors::DistributedCollector collector(
      keyed(net), CollectorOptions().frames_per_batch(2 * kFrames),
      collectors::DistributedOptions().num_workers(2).launch_command(g_launch));
  collector.update_policy_weights_();
  time_calls(state, [&] { return collector.next(); });
  state.SetItemsProcessed(state.iterations() * 2 * kFrames);
}

void register_benchmarks() {
  for (bool mlp : {false, true}) {
    const std::string prefix = std::string("BM_Pendulum/") + (mlp ? "MLP" : "Random");
    benchmark::RegisterBenchmark((prefix + "/Collector").c_str(), collector_pendulum, mlp)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((prefix + "/Raw").c_str(), raw_pendulum, mlp)
        ->Unit(benchmark::kMillisecond);
  }
  // One name per worker count: the ratio table keys timings by benchmark name.
  for (int64_t workers : {1, 2}) {
    benchmark::RegisterBenchmark(
        ("BM_HalfCheetah/MultiSync/Workers" + std::to_string(workers)).c_str(), multi_sync_cheetah,
        workers)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_HalfCheetah/Collector/StateDict", state_dict_cheetah)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Distributed/Pendulum/Workers2", distributed_pendulum)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

void print_ratio_table(const RatioReporter& reporter, std::ostream& os) {
  os << "\nCollection, median of repetitions, torch::set_num_threads(1); frames/s from real "
        "time.\n\n| case | ours ms | raw ms | ratio | ours frames/s |\n|---|---:|---:|---:|---:|\n";
  for (const char* policy : {"Random", "MLP"}) {
    const std::string prefix = std::string("BM_Pendulum/") + policy;
    const Timing ours = reporter.timing(prefix + "/Collector");
    const Timing raw = reporter.timing(prefix + "/Raw");
    if (ours.real <= 0 || raw.real <= 0) continue;
    os << "| Pendulum " << policy << " | " << fixed(ours.real / 1e6, 2) << " | "
       << fixed(raw.real / 1e6, 2) << " | " << fixed(ours.real / raw.real, 2) << " | "
       << fixed(kFrames * 1e9 / ours.real, 0) << " |\n";
  }
  const Timing one = reporter.timing("BM_HalfCheetah/MultiSync/Workers1");
  const Timing two = reporter.timing("BM_HalfCheetah/MultiSync/Workers2");
  if (one.real > 0 && two.real > 0) {
    const double fps1 = kFrames * 1e9 / one.real;
    const double fps2 = 2 * kFrames * 1e9 / two.real;
    os << "\nHalfCheetah MultiSync: 1 worker " << fixed(fps1, 0) << " frames/s, 2 workers "
       << fixed(fps2, 0) << " frames/s, scaling " << fixed(fps2 / fps1, 2) << "x\n";
  }
  const Timing dist = reporter.timing("BM_Distributed/Pendulum/Workers2");
  if (dist.real > 0) {
    os << "Distributed (2 local worker processes, Pendulum, MLP): "
       << fixed(2 * kFrames * 1e9 / dist.real, 0) << " frames/s\n";
  }
}

}  // namespace
}  // namespace tdrl::bench

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  tdrl::envs::register_builtin_envs();
  // Relaunched as a distributed worker: serve the trainer, then exit.
  if (auto identity = tdrl::collectors::worker_identity_from_env()) {
    auto net = tdrl::bench::pendulum_net();
    tdrl::collectors::run_distributed_worker(*identity, tdrl::bench::pendulum,
                                             tdrl::bench::keyed(net));
    return 0;
  }
  tdrl::bench::g_launch = {argv[0]};
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::cout << "bench_collectors: torch::set_num_threads(1); Pendulum-v1 1000 frames per batch "
               "(random and 64x64 MLP policy), HalfCheetah-v4 MultiSync 1 and 2 workers, "
               "distributed with 2 local workers\n";
  tdrl::bench::register_benchmarks();
  return tdrl::bench::run_and_print_ratio_table(
      [](const tdrl::bench::RatioReporter& r, std::ostream& os) {
        tdrl::bench::print_ratio_table(r, os);
      });
}
