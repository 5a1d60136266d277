// Google Benchmark of a TransformedEnv's per-step overhead, one transform at a time.
//
// The env is a small batched env written here (batch 16; "observation" and "velocity"
// float32 [16, 8]; Bounded action [16, 4] in [-2, 2]; a few element-wise ops per step), so
// that the transforms' cost is not hidden behind physics. Each case times the loop a
// collector runs, `td.set(action); env.step(td); td = step_mdp(td)`:
// - BM_Step/Bare: on the env itself;
// - BM_Step/<Transform>: on TransformedEnv(env, <Transform>) (Empty: no transform, i.e. the
//   wrapper alone: the nested reset/step calls and the shallow copy of the root).
// - two Composes of several transforms, to show that costs add up per transform, not per
//   wrapper.
// The table reports the added microseconds per step against Bare. FrameSkipTransform(2)
// steps the env twice per step, so its figure includes one more env step. One intra-op
// thread (see bench_nn.cpp).

#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <tdrl/envs/env_base.h>
#include <tdrl/envs/transforms/all.h>

#include "common.h"

namespace tdrl::bench {
namespace {

using envs::EnvBase;
using envs::TransformedEnv;
using envs::TransformPtr;
using tensordict::NestedKey;
using tensordict::TensorDict;
using Keys = std::vector<NestedKey>;

constexpr int64_t kBatch = 16;
constexpr int64_t kObs = 8;
constexpr int64_t kAct = 4;

// A cheap batched env: the observation drifts with the action, velocity is the action
// repeated, reward -|observation|^2; never terminates.
class DriftEnv : public EnvBase {
 public:
  DriftEnv() : EnvBase("DriftEnv", envs::EnvBaseOptions().batch_size({kBatch})) {
    set_observation_spec(specs::Composite::make(
        {{"observation", std::make_shared<specs::Unbounded>(std::vector<int64_t>{kBatch, kObs})},
         {"velocity", std::make_shared<specs::Unbounded>(std::vector<int64_t>{kBatch, kObs})}},
        {kBatch}));
    set_action_spec(std::make_shared<specs::Bounded>(
        specs::BoundedOptions().low(-2.0).high(2.0).shape({kBatch, kAct})));
    obs_ = torch::zeros({kBatch, kObs});
  }

 protected:
  TensorDict reset_impl(const TensorDict&) override {
    obs_ = torch::rand({kBatch, kObs}, generator());
    return TensorDict({{"observation", obs_}, {"velocity", torch::zeros({kBatch, kObs})}},
                      batch_size());
  }
  TensorDict step_impl(const TensorDict& td) override {
    const auto velocity = td.get("action").repeat({1, kObs / kAct});
    obs_ = obs_ * 0.99 + velocity * 0.01;
    return TensorDict({{"observation", obs_},
                       {"velocity", velocity},
                       {"reward", -obs_.pow(2).sum(-1, true)},
                       {"terminated", torch::zeros({kBatch, 1}, torch::kBool)}},
                      batch_size());
  }

 private:
  torch::Tensor obs_;
};

// The cases: name and a factory of the transform (null: the bare env).
std::vector<std::pair<std::string, std::function<TransformPtr()>>> cases() {
  using namespace envs;
  return {
      {"Empty", [] { return Compose::make(); }},
      {"ObservationNorm",
       [] {
         return std::make_shared<ObservationNorm>(ObservationNormOptions().loc(0.5).scale(2.0));
       }},
      {"VecNorm",
       [] { return std::make_shared<VecNorm>(VecNormOptions().in_keys({"observation"})); }},
      {"RewardScaling",
       [] { return std::make_shared<RewardScaling>(RewardScalingOptions().scale(0.1)); }},
      {"RewardClipping",
       [] {
         return std::make_shared<RewardClipping>(
             RewardClippingOptions().clamp_min(-1.0).clamp_max(1.0));
       }},
      {"RewardSum", [] { return std::make_shared<RewardSum>(); }},
      {"StepCounter", [] { return std::make_shared<StepCounter>(); }},
      {"DoubleToFloat", [] { return std::make_shared<DoubleToFloat>(); }},
      {"CatTensors",
       [] {
         return std::make_shared<CatTensors>(Keys{"observation", "velocity"});
       }},
      {"RenameTransform",
       [] {
         return std::make_shared<RenameTransform>(
             RenameTransformOptions().in_keys({"observation"}).out_keys({"obs"}));
       }},
      {"ExcludeTransform", [] { return std::make_shared<ExcludeTransform>(Keys{"velocity"}); }},
      {"SelectTransform", [] { return std::make_shared<SelectTransform>(Keys{"observation"}); }},
      {"InitTracker", [] { return std::make_shared<InitTracker>(); }},
      {"ClipTransform",
       [] { return std::make_shared<ClipTransform>(ClipTransformOptions().low(-1.0).high(1.0)); }},
      {"UnsqueezeTransform", [] { return std::make_shared<UnsqueezeTransform>(-1); }},
      {"ActionScaling", [] { return std::make_shared<ActionScaling>(); }},
      {"FrameSkipTransform(2)", [] { return std::make_shared<FrameSkipTransform>(2); }},
      {"Compose(StepCounter, RewardSum, InitTracker, ActionScaling)",
       [] {
         return Compose::make({std::make_shared<StepCounter>(), std::make_shared<RewardSum>(),
                               std::make_shared<InitTracker>(), std::make_shared<ActionScaling>()});
       }},
      {"Compose(the same, VecNorm)",
       [] {
         return Compose::make(
             {std::make_shared<StepCounter>(), std::make_shared<RewardSum>(),
              std::make_shared<InitTracker>(), std::make_shared<ActionScaling>(),
              std::make_shared<VecNorm>(VecNormOptions().in_keys({"observation"}))});
       }},
  };
}

void run_steps(benchmark::State& state, EnvBase& env) {
  env.set_seed(0);
  TensorDict td = env.reset();
  const auto action = torch::full({kBatch, kAct}, 0.5f);
  const auto mdp = envs::StepMdpOptions().action_key(env.action_key());
  for (auto _ : state) {
    td.set(env.action_key(), action);
    td = envs::step_mdp(env.step(td), mdp);
    benchmark::DoNotOptimize(td.impl().get());
  }
}

void bare(benchmark::State& state) {
  DriftEnv env;
  run_steps(state, env);
}

void transformed(benchmark::State& state, const std::function<TransformPtr()>& make) {
  TransformedEnv env(std::make_shared<DriftEnv>(), make());
  run_steps(state, env);
}

void register_benchmarks() {
  benchmark::RegisterBenchmark("BM_Step/Bare", bare)->Unit(benchmark::kMicrosecond);
  for (const auto& [name, make] : cases()) {
    auto factory = make;
    benchmark::RegisterBenchmark(("BM_Step/" + name).c_str(), [factory](benchmark::State& s) {
      transformed(s, factory);
    })->Unit(benchmark::kMicrosecond);
  }
}

void print_tables(const RatioReporter& reporter, std::ostream& os) {
  const Timing bare = reporter.timing("BM_Step/Bare");
  if (bare.real <= 0) return;
  os << "\nTransformedEnv per-step overhead at batch " << kBatch
     << " (real time per step, median of repetitions; bare env step " << fixed(bare.real / 1e3, 1)
     << " us, CPU " << fixed(bare.cpu / 1e3, 1) << " us), torch::set_num_threads(1)\n\n"
     << "| transform | step us | added us/step | CPU us | added CPU us/step |\n"
     << "|---|---:|---:|---:|---:|\n";
  for (const auto& entry : cases()) {
    const Timing t = reporter.timing("BM_Step/" + entry.first);
    if (t.real < 0) continue;
    os << "| " << entry.first << " | " << fixed(t.real / 1e3, 1) << " | "
       << fixed((t.real - bare.real) / 1e3, 1) << " | " << fixed(t.cpu / 1e3, 1) << " | "
       << fixed((t.cpu - bare.cpu) / 1e3, 1) << " |\n";
  }
}

void describe(std::ostream& os) {
  os << "bench_transforms: torch::set_num_threads(1); batch " << kBatch
     << ", observation and velocity [" << kBatch << ", " << kObs << "], action [" << kBatch << ", "
     << kAct << "]\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
