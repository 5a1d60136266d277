// Google Benchmark of the MuJoCo envs.
//
// - Step/HalfCheetah/B{1,16}: HalfCheetahEnv::step (EnvBase's action checks, the hooks, the
//   output TensorDict with ("next", ...)) against a raw loop over the same number of mjData
//   doing the same physics and the same copies by hand: the action into ctrl, 5 mj_step
//   (frame_skip), the observation (qpos[1:], qvel) into a float buffer, the reward and the
//   flags. Both start from the same states and apply the same cycle of random actions.
// - Threads/<Task>/B<n>/T{1,2}: the env's step with num_threads 1 and 2 (steps per second
//   counts simulation steps: batch size per call), real time.
//
// torch::set_num_threads(1): the env does no intra-op tensor work worth threading.

#include <mujoco/mujoco.h>

#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <tdrl/envs/mujoco_tasks.h>

#include "common.h"

namespace tdrl::bench {
namespace {

using envs::HalfCheetahEnv;
using envs::HumanoidEnv;
using envs::MujocoEnv;
using envs::MujocoEnvOptions;
using tensordict::TensorDict;

constexpr int64_t kActionCycle = 64;

// A cycle of kActionCycle random actions `[kActionCycle, *batch, nu]` from the env's
// action spec (seeded).
torch::Tensor action_cycle(const MujocoEnv& env) {
  auto generator = at::detail::createCPUGenerator(1);
  std::vector<torch::Tensor> actions;
  for (int64_t t = 0; t < kActionCycle; ++t) actions.push_back(env.action_spec()->rand(generator));
  return torch::stack(actions).contiguous();
}

// The env at batch `batch`, reset with seed 0, no time limit (nothing resets while timing).
template <typename Env>
std::unique_ptr<MujocoEnv> make_env(int64_t batch, int64_t threads) {
  auto env = std::make_unique<Env>(
      MujocoEnvOptions().batch_size({batch}).num_threads(threads).max_episode_steps(0));
  env->set_seed(0);
  return env;
}

template <typename Env>
void env_step(benchmark::State& state, int64_t batch, int64_t threads) {
  auto env = make_env<Env>(batch, threads);
  TensorDict td = env->reset();
  const auto actions = action_cycle(*env);
  int64_t t = 0;
  for (auto _ : state) {
    td.set(specs::kAction, actions[t++ % kActionCycle]);
    env->step(td);
    benchmark::DoNotOptimize(td.get({specs::kNext, specs::kObservation}).data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

// The raw side: HalfCheetah's physics and outputs written by hand with MuJoCo's C API.
struct RawHalfCheetah {
  mjModel* model = nullptr;
  std::vector<mjData*> data;
  std::vector<float> obs;
  std::vector<float> reward;
  std::vector<bool> terminated;
  std::vector<bool> truncated;

  explicit RawHalfCheetah(const MujocoEnv& env) {
    char error[1000] = "";
    model = mj_loadXML(env.model_path().c_str(), nullptr, error, sizeof(error));
    if (model == nullptr) throw std::runtime_error(error);
    const auto qpos = env.qpos().contiguous();
    const auto qvel = env.qvel().contiguous();
    const int64_t n = env.num_envs();
    for (int64_t i = 0; i < n; ++i) {
      mjData* d = mj_makeData(model);
      std::copy_n(qpos.data_ptr<double>() + i * model->nq, model->nq, d->qpos);
      std::copy_n(qvel.data_ptr<double>() + i * model->nv, model->nv, d->qvel);
      mj_forward(model, d);
      data.push_back(d);
    }
    obs.resize(n * 17);
    reward.resize(n);
    terminated.resize(n);
    truncated.resize(n);
  }
  ~RawHalfCheetah() {
    for (mjData* d : data) mj_deleteData(d);
    mj_deleteModel(model);
  }

  void step(const float* action) {
    const int nu = model->nu;
    const double dt = model->opt.timestep * 5;
    for (size_t i = 0; i < data.size(); ++i) {
      mjData* d = data[i];
      const float* a = action + i * nu;
      const double x_before = d->qpos[0];
      double ctrl_cost = 0.0;
      for (int j = 0; j < nu; ++j) {
        d->ctrl[j] = a[j];
        ctrl_cost += static_cast<double>(a[j]) * a[j];
      }
      for (int k = 0; k < 5; ++k) mj_step(model, d);
      float* o = obs.data() + i * 17;
      for (int j = 1; j < model->nq; ++j) o[j - 1] = static_cast<float>(d->qpos[j]);
      for (int j = 0; j < model->nv; ++j) o[model->nq - 1 + j] = static_cast<float>(d->qvel[j]);
      reward[i] = static_cast<float>((d->qpos[0] - x_before) / dt - 0.1 * ctrl_cost);
      terminated[i] = false;
      truncated[i] = false;
    }
  }
};

void raw_step(benchmark::State& state, int64_t batch) {
  auto env = make_env<HalfCheetahEnv>(batch, 1);
  env->reset();
  RawHalfCheetah raw(*env);
  const auto actions = action_cycle(*env);
  int64_t t = 0;
  for (auto _ : state) {
    raw.step(actions[t++ % kActionCycle].data_ptr<float>());
    benchmark::DoNotOptimize(raw.obs.data());
    benchmark::DoNotOptimize(raw.reward.data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

struct ThreadCase {
  std::string task;
  int64_t batch;
  void (*run)(benchmark::State&, int64_t, int64_t);
};

const std::vector<ThreadCase>& thread_cases() {
  static const std::vector<ThreadCase> cases = {
      {"HalfCheetah", 16, env_step<HalfCheetahEnv>},
      {"HalfCheetah", 64, env_step<HalfCheetahEnv>},
      {"Humanoid", 16, env_step<HumanoidEnv>},
  };
  return cases;
}

std::string thread_name(const ThreadCase& c, int64_t threads) {
  return "BM_Threads/" + c.task + "/B" + std::to_string(c.batch) + "/T" + std::to_string(threads);
}

void register_benchmarks() {
  for (int64_t batch : {1, 16}) {
    const std::string suffix = "/B" + std::to_string(batch);
    benchmark::RegisterBenchmark(
        ("BM_Step/HalfCheetah" + suffix + "/Ours").c_str(),
        [batch](benchmark::State& s) { env_step<HalfCheetahEnv>(s, batch, 1); })
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_Step/HalfCheetah" + suffix + "/Raw").c_str(),
                                 [batch](benchmark::State& s) { raw_step(s, batch); })
        ->Unit(benchmark::kMicrosecond);
  }
  for (const auto& c : thread_cases()) {
    for (int64_t threads : {1, 2}) {
      benchmark::RegisterBenchmark(
          thread_name(c, threads).c_str(),
          [c, threads](benchmark::State& s) { c.run(s, c.batch, threads); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}

void print_tables(const RatioReporter& reporter, std::ostream& os) {
  os << "\nMujocoEnv HalfCheetah step vs the same physics and copies in a raw mj_step loop: real "
        "time per env step (median of repetitions)\n\n"
     << "| batch | ours us | raw us | ratio | env overhead |\n"
     << "|---:|---:|---:|---:|---:|\n";
  for (int64_t batch : {1, 16}) {
    const std::string name = "BM_Step/HalfCheetah/B" + std::to_string(batch);
    const Timing ours = reporter.timing(name + "/Ours");
    const Timing raw = reporter.timing(name + "/Raw");
    if (ours.real < 0 || raw.real <= 0) continue;
    os << "| " << batch << " | " << fixed(ours.real / 1e3, 1) << " | " << fixed(raw.real / 1e3, 1)
       << " | " << fixed(ours.real / raw.real, 3) << " | "
       << fixed(100.0 * (ours.real - raw.real) / raw.real, 1) << "% |\n";
  }
  os << "\nBatched MuJoCo throughput with 1 and 2 threads (simulation steps per second, real "
        "time)\n\n"
     << "| task | batch | 1 thread steps/s | 2 threads steps/s | speedup |\n"
     << "|---|---:|---:|---:|---:|\n";
  for (const auto& c : thread_cases()) {
    const Timing one = reporter.timing(thread_name(c, 1));
    const Timing two = reporter.timing(thread_name(c, 2));
    if (one.real <= 0 || two.real <= 0) continue;
    const double batch = static_cast<double>(c.batch);
    os << "| " << c.task << " | " << c.batch << " | " << fixed(batch * 1e9 / one.real, 0) << " | "
       << fixed(batch * 1e9 / two.real, 0) << " | " << fixed(one.real / two.real, 2) << " |\n";
  }
}

void describe(std::ostream& os) {
  os << "bench_mujoco: torch::set_num_threads(1); MuJoCo " << mj_versionString() << "\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
