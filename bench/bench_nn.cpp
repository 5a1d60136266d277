// Google Benchmark of tensordict::nn call overhead against the same module calls written with
// raw LibTorch.
//
// Every case is registered twice, as BM_<Case>/B<batch>/TensorDict and BM_<Case>/B<batch>/Raw.
// Both sides call the very same module instances (same parameters, same kernels); the
// TensorDict side goes through TensorDictModule / TensorDictSequential, which read the inputs
// from a TensorDict and write the outputs into it, so the difference is what tensordict::nn
// adds per call: key lookups, validation, the type-erased call and the writes.
//
// Cases, each at batch 1, 256 and 4096 (features 64, float32):
// - Module: TensorDictModule(Linear(64, 64)) "obs" -> "hidden" vs `linear->forward(obs)`,
//   under torch::NoGradGuard; ModuleGrad: the same with grad enabled (the autograd graph is
//   built and dropped each call on both sides).
// - Sequential / SequentialGrad: a 64x64 MLP in 3 keyed steps, obs -> h1 -> h2 -> out, each
//   step a TensorDictModule of a Layer (Linear 64->64, then tanh on the first two), against
//   the raw chain of the same three Layer calls.
// - ForwardTensors / SeqForwardTensors: `forward_tensors({obs})` of the Module and of the
//   Sequential (plain tensors in and out, through a TensorDict of batch []) vs the raw calls.
// The TensorDict of each case is built once: the first call adds the out keys, later calls
// replace them (the steady state of a policy re-run on the same TensorDict). The raw side
// keeps its outputs the same way, in variables that the next call overwrites: the previous
// call's outputs (and, with grad, their autograd graph) stay alive while the next call
// allocates on both sides.
//
// Threads: one intra-op thread and one OpenBLAS thread by default (stable numbers on a small
// shared machine, and per-call overhead is the subject); `--threads=N` (this program's own
// flag, given before or after the benchmark flags) runs with N of both instead.
//
// The ratio table at the end gives both times, the overhead per call in microseconds and the
// TensorDict/raw ratio; the target from the performance issue is <= 1.2 at batch 256.

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>
#include <tensordict/tensordict.h>

#include "common.h"

namespace tdrl::bench {

namespace {

using tensordict::TensorDict;
using tensordict::nn::TensorDictModule;
using tensordict::nn::TensorDictModuleOptions;
using tensordict::nn::TensorDictSequential;

/// One step of the benchmark MLP: Linear(in, out), then tanh when `activate`.
class LayerImpl : public torch::nn::Module {
 public:
  LayerImpl(int64_t in, int64_t out, bool activate)
      : linear_(register_module("linear", torch::nn::Linear(in, out))), activate_(activate) {}

  /// `x` [*batch, in] -> [*batch, out].
  torch::Tensor forward(torch::Tensor x) {
    x = linear_->forward(x);
    return activate_ ? torch::tanh(x) : x;
  }

 private:
  torch::nn::Linear linear_;
  bool activate_;
};
TORCH_MODULE(Layer);

constexpr int64_t kFeatures = 64;
constexpr int64_t kTargetBatch = 256;
const std::vector<int64_t> kBatches = {1, kTargetBatch, 4096};

// ---- Shared modules and inputs, built once before any benchmark runs -----------------------

struct Nets {
  torch::nn::Linear linear{kFeatures, kFeatures};
  Layer l1{kFeatures, kFeatures, true};
  Layer l2{kFeatures, kFeatures, true};
  Layer l3{kFeatures, kFeatures, false};

  TensorDictModule module{linear, TensorDictModuleOptions().in_keys({"obs"}).out_keys({"hidden"})};
  TensorDictSequential sequential{
      TensorDictModule(l1, TensorDictModuleOptions().in_keys({"obs"}).out_keys({"h1"})),
      TensorDictModule(l2, TensorDictModuleOptions().in_keys({"h1"}).out_keys({"h2"})),
      TensorDictModule(l3, TensorDictModuleOptions().in_keys({"h2"}).out_keys({"out"}))};
};

Nets& nets() {
  static Nets n;
  return n;
}

/// A TensorDict of batch [batch] holding "obs" [batch, 64], and the same tensor.
struct Input {
  torch::Tensor obs;
  TensorDict td;
};

Input make_input(int64_t batch) {
  Input in;
  in.obs = torch::randn({batch, kFeatures});
  in.td = TensorDict::empty({batch});
  in.td.set("obs", in.obs);
  return in;
}

// ---- The timed loops: `grad` false runs them under torch::NoGradGuard ----------------------

/// Runs `body` per iteration, with grad mode as asked.
template <class F>
void run(benchmark::State& state, bool grad, F&& body) {
  torch::AutoGradMode mode(grad);
  for (auto _ : state) body();
}

void ModuleTd(benchmark::State& state, int64_t batch, bool grad) {
  auto& module = nets().module;
  const Input in = make_input(batch);
  run(state, grad, [&] {
    TensorDict out = module(in.td);
    benchmark::DoNotOptimize(out);
  });
}

void ModuleRaw(benchmark::State& state, int64_t batch, bool grad) {
  auto& linear = nets().linear;
  const Input in = make_input(batch);
  // Kept until the next call replaces it, as the TensorDict keeps "hidden".
  torch::Tensor hidden;
  run(state, grad, [&] {
    hidden = linear->forward(in.obs);
    benchmark::DoNotOptimize(hidden);
  });
}

void SequentialTd(benchmark::State& state, int64_t batch, bool grad) {
  auto& seq = nets().sequential;
  const Input in = make_input(batch);
  run(state, grad, [&] {
    TensorDict out = seq(in.td);
    benchmark::DoNotOptimize(out);
  });
}

void SequentialRaw(benchmark::State& state, int64_t batch, bool grad) {
  auto& n = nets();
  const Input in = make_input(batch);
  // Kept until the next call replaces them, as the TensorDict keeps h1, h2 and out.
  torch::Tensor h1, h2, out;
  run(state, grad, [&] {
    h1 = n.l1->forward(in.obs);
    h2 = n.l2->forward(h1);
    out = n.l3->forward(h2);
    benchmark::DoNotOptimize(out);
  });
}

void ForwardTensorsTd(benchmark::State& state, int64_t batch, bool grad) {
  auto& module = nets().module;
  const std::vector<torch::Tensor> inputs = {make_input(batch).obs};
  run(state, grad, [&] {
    std::vector<torch::Tensor> out = module->forward_tensors(inputs);
    benchmark::DoNotOptimize(out);
  });
}

void ForwardTensorsRaw(benchmark::State& state, int64_t batch, bool grad) {
  auto& linear = nets().linear;
  const std::vector<torch::Tensor> inputs = {make_input(batch).obs};
  run(state, grad, [&] {
    std::vector<torch::Tensor> out = {linear->forward(inputs[0])};
    benchmark::DoNotOptimize(out);
  });
}

void SeqForwardTensorsTd(benchmark::State& state, int64_t batch, bool grad) {
  auto& seq = nets().sequential;
  const std::vector<torch::Tensor> inputs = {make_input(batch).obs};
  run(state, grad, [&] {
    std::vector<torch::Tensor> out = seq->forward_tensors(inputs);
    benchmark::DoNotOptimize(out);
  });
}

// forward_tensors returns the values of out_keys() in order: h1, h2 and out.
void SeqForwardTensorsRaw(benchmark::State& state, int64_t batch, bool grad) {
  auto& n = nets();
  const std::vector<torch::Tensor> inputs = {make_input(batch).obs};
  run(state, grad, [&] {
    std::vector<torch::Tensor> out;
    out.reserve(3);
    out.push_back(n.l1->forward(inputs[0]));
    out.push_back(n.l2->forward(out[0]));
    out.push_back(n.l3->forward(out[1]));
    benchmark::DoNotOptimize(out);
  });
}

// ---- Registration and the ratio table ------------------------------------------------------

constexpr double kTarget = 1.2;

struct CasePair {
  const char* name;
  bool grad;
  void (*tensordict)(benchmark::State&, int64_t, bool);
  void (*raw)(benchmark::State&, int64_t, bool);
};

const std::vector<CasePair>& case_pairs() {
  static const std::vector<CasePair> pairs = {
      {"Module", false, ModuleTd, ModuleRaw},
      {"ModuleGrad", true, ModuleTd, ModuleRaw},
      {"Sequential", false, SequentialTd, SequentialRaw},
      {"SequentialGrad", true, SequentialTd, SequentialRaw},
      {"ForwardTensors", false, ForwardTensorsTd, ForwardTensorsRaw},
      {"SeqForwardTensors", false, SeqForwardTensorsTd, SeqForwardTensorsRaw},
  };
  return pairs;
}

std::string case_name(const CasePair& pair, int64_t batch, const char* side) {
  return std::string("BM_") + pair.name + "/B" + std::to_string(batch) + "/" + side;
}

void register_benchmarks() {
  for (int64_t batch : kBatches) {
    for (const auto& pair : case_pairs()) {
      const bool grad = pair.grad;
      auto td = pair.tensordict;
      auto raw = pair.raw;
      benchmark::RegisterBenchmark(case_name(pair, batch, "TensorDict").c_str(),
                                   [td, batch, grad](benchmark::State& s) { td(s, batch, grad); })
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(case_name(pair, batch, "Raw").c_str(), [raw, batch, grad](
                                                                              benchmark::State& s) {
        raw(s, batch, grad);
      })->Unit(benchmark::kMicrosecond);
    }
  }
}

// Times and ratio are real time, as the target is stated; the CPU-time ratio is shown beside
// it because on a shared machine preemption inflates real time, not CPU time.
void print_ratio_table(const RatioReporter& reporter, std::ostream& os, int threads) {
  os << "\ntensordict::nn vs raw LibTorch: real time per call (median of repetitions), " << threads
     << " intra-op and BLAS thread(s)\n\n"
     << "| case | batch | tensordict us | raw us | overhead us | ratio | cpu ratio | target |\n"
     << "|---|---:|---:|---:|---:|---:|---:|---|\n";
  int missed = 0;
  int measured = 0;
  for (const auto& pair : case_pairs()) {
    for (int64_t batch : kBatches) {
      const Timing td = reporter.timing(case_name(pair, batch, "TensorDict"));
      const Timing raw = reporter.timing(case_name(pair, batch, "Raw"));
      if (td.real < 0 || raw.real <= 0) continue;
      const double ratio = td.real / raw.real;
      std::string target = "-";
      if (batch == kTargetBatch) {
        const bool ok = ratio <= kTarget;
        ++measured;
        if (!ok) ++missed;
        target = "<= " + fixed(kTarget, 1) + (ok ? " ok" : " MISS");
      }
      os << "| " << pair.name << " | " << batch << " | " << fixed(td.real / 1e3, 2) << " | "
         << fixed(raw.real / 1e3, 2) << " | " << fixed((td.real - raw.real) / 1e3, 2) << " | "
         << fixed(ratio, 2) << " | " << fixed(td.cpu / raw.cpu, 2) << " | " << target << " |\n";
    }
  }
  os << "\n"
     << measured - missed << " of " << measured << " batch-" << kTargetBatch
     << " cases within target (other batch sizes are informational).\n";
}

/// Sets OpenBLAS (LibTorch's BLAS on Debian) to `threads`; torch::set_num_threads does not
/// reach it. Returns its thread count, or -1 when OpenBLAS is not loaded.
int set_blas_threads(int threads) {
  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(threads);
  if (auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads")))
    return get();
  return -1;
}

/// Removes this program's `--threads=N` from the arguments and returns N (1 when absent).
int take_threads_flag(int& argc, char** argv) {
  int threads = 1;
  const char* const flag = "--threads=";
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strncmp(argv[i], flag, std::strlen(flag)) == 0) {
      threads = std::atoi(argv[i] + std::strlen(flag));
      continue;
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  return threads;
}

}  // namespace
}  // namespace tdrl::bench

int main(int argc, char** argv) {
  const int threads = tdrl::bench::take_threads_flag(argc, argv);
  if (threads < 1) {
    std::cerr << "bench_nn: --threads must be a positive integer\n";
    return 1;
  }
  // One intra-op and one BLAS thread by default: the machine is shared and small, and
  // per-call overhead is the subject here, not parallel kernels.
  torch::set_num_threads(threads);
  const int blas_threads = tdrl::bench::set_blas_threads(threads);
  torch::manual_seed(0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::cout << "bench_nn: torch::set_num_threads(" << threads
            << ") (intra-op threads: " << torch::get_num_threads() << "), OpenBLAS threads: "
            << (blas_threads < 0 ? std::string("not found") : std::to_string(blas_threads))
            << "; Linear 64x64 float32, batches 1, 256, 4096\n";
  tdrl::bench::nets();
  tdrl::bench::register_benchmarks();

  return tdrl::bench::run_and_print_ratio_table(
      [threads](const tdrl::bench::RatioReporter& r, std::ostream& os) {
        tdrl::bench::print_ratio_table(r, os, threads);
      });
}
