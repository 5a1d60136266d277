// Google Benchmark of tdrl::modules policies against the same computation written by hand
// with raw LibTorch, as a hand-written C++ agent would do it.
//
// Cases, at batch 256 (features: observation 17, hidden 64x64, action 6), float32:
// - ProbabilisticActor/NoGrad and /Grad: MLP(17 -> 64 -> 64 -> 12) -> NormalParamExtractor
//   -> TanhNormal on [-1, 1] under InteractionType::kRandom with return_log_prob, i.e. one
//   reparametrised action sample and its log-probability, through the keyed modules; against
//   the same MLP call, chunk, biased softplus, `tanh(loc + scale * eps)` and the log-density
//   computed from the pre-tanh sample (what a hand-written SAC actor does; the library
//   recomputes the pre-image from the action with atanh, since log_prob takes the value).
//   NoGrad is a collector's call, Grad the forward of a loss.
// - QValueActor: MLP(17 -> 64 -> 64 -> 6) -> greedy one-hot action and chosen value, against
//   the same MLP call, argmax, one_hot and gather.
//
// - LSTMModule/Step and /Sequence at batch 1 and 256 (input 64, hidden 128, one layer,
//   float32): a step under NoGrad (a collector's call: is_init, the state read from and written
//   to the TensorDict) and a 64-step sequence with autograd on (a loss's forward: Sequence
//   with sequence_states false, LibTorch's fused call; SequenceStates, the step loop that gives
//   every step's state); against
//   torch::nn::LSTM's forward on the same weights with the state zeroed by hand where is_init
//   is set (no reset inside the sequence, which is the case LibTorch's module covers): its
//   fused call for Step and Sequence, and for SequenceStates the same module called one step
//   at a time, since its fused call returns only the last step's cell state.
//
// Both sides call the same module instances. One intra-op thread (see bench_nn.cpp).

#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <tdrl/modules.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nn.h>
#include <tensordict/tensordict.h>

#include "actors.h"
#include "common.h"
#include "problem.h"

namespace tdrl::bench {
namespace {

struct ActorFixture {
  MLP mlp{MLPOptions(kObs, 2 * kAction).num_cells({64, 64})};
  modules::ProbabilisticActor actor{nullptr};
  torch::Tensor obs = torch::randn({kBatch, kObs});
  TensorDict td;

  ActorFixture() {
    actor = tanh_normal_actor(mlp, /*return_log_prob=*/true);
    td = TensorDict({{"observation", obs}}, {kBatch});
  }
};

void actor_keyed(benchmark::State& state, bool grad) {
  auto& f = shared_fixture<ActorFixture>();
  tdnn::SetInteractionType random(tdnn::InteractionType::kRandom);
  torch::AutoGradMode mode(grad);
  for (auto _ : state) {
    f.actor(f.td);
    benchmark::DoNotOptimize(f.td.get("sample_log_prob").data_ptr());
  }
}

void actor_raw(benchmark::State& state, bool grad) {
  auto& f = shared_fixture<ActorFixture>();
  torch::AutoGradMode mode(grad);
  const double shift = std::log(std::expm1(1.0));
  const double half_log_2pi = 0.5 * std::log(2 * M_PI);
  for (auto _ : state) {
    const auto params = f.mlp->forward(f.obs);
    const auto chunks = params.chunk(2, -1);
    const auto loc = chunks[0];
    const auto scale = torch::softplus(chunks[1] + shift).clamp_min(1e-4);
    const auto eps = torch::randn_like(loc);
    const auto u = loc + scale * eps;
    const auto action = torch::tanh(u);
    const auto log_density = -0.5 * eps.pow(2) - scale.log() - half_log_2pi;
    const auto log_jacobian = 2.0 * (std::log(2.0) - u - torch::softplus(-2.0 * u));
    const auto log_prob = (log_density - log_jacobian).sum(-1);
    benchmark::DoNotOptimize(action.data_ptr());
    benchmark::DoNotOptimize(log_prob.data_ptr());
  }
}

struct QValueFixture {
  MLP mlp{MLPOptions(kObs, kAction).num_cells({64, 64})};
  modules::QValueActor actor{nullptr};
  torch::Tensor obs = torch::randn({kBatch, kObs});
  TensorDict td;

  QValueFixture() {
    actor = modules::QValueActor(mlp, modules::QValueActorOptions());
    td = TensorDict({{"observation", obs}}, {kBatch});
  }
};

void qvalue_keyed(benchmark::State& state) {
  auto& f = shared_fixture<QValueFixture>();
  torch::NoGradGuard no_grad;
  for (auto _ : state) {
    f.actor(f.td);
    benchmark::DoNotOptimize(f.td.get("action").data_ptr());
  }
}

void qvalue_raw(benchmark::State& state) {
  auto& f = shared_fixture<QValueFixture>();
  torch::NoGradGuard no_grad;
  for (auto _ : state) {
    const auto values = f.mlp->forward(f.obs);
    const auto index = values.argmax(-1);
    const auto chosen = values.gather(-1, index.unsqueeze(-1));
    const auto action = torch::one_hot(index, kAction);
    benchmark::DoNotOptimize(action.data_ptr());
    benchmark::DoNotOptimize(chosen.data_ptr());
  }
}

constexpr int64_t kRecurrentIn = 64, kRecurrentHidden = 128, kSequenceLength = 64;

// An LSTMModule and its inputs at batch `batch`: one step, and a [batch, T] sequence.
struct RecurrentFixture {
  modules::LSTMModule lstm{modules::RecurrentModuleOptions(kRecurrentIn, kRecurrentHidden)
                               .in_key("embed")
                               .out_key("embed")};
  TensorDict step, sequence;
  torch::Tensor x, h, c, keep, xs, h0, c0;
  explicit RecurrentFixture(int64_t batch) {
    x = torch::randn({batch, kRecurrentIn});
    h = torch::randn({batch, 1, kRecurrentHidden});
    c = torch::randn({batch, 1, kRecurrentHidden});
    const auto is_init = torch::zeros({batch, 1}, torch::kBool);
    keep = 1 - is_init.to(torch::kFloat32);
    step = TensorDict(
        {{"embed", x}, {"is_init", is_init}, {"recurrent_state_h", h}, {"recurrent_state_c", c}},
        {batch});
    xs = torch::randn({batch, kSequenceLength, kRecurrentIn});
    auto seq_init = torch::zeros({batch, kSequenceLength, 1}, torch::kBool);
    seq_init.select(1, 0).fill_(true);
    sequence = TensorDict({{"embed", xs}, {"is_init", seq_init}}, {batch, kSequenceLength});
    h0 = torch::zeros({1, batch, kRecurrentHidden});
    c0 = torch::zeros({1, batch, kRecurrentHidden});
  }
};

template <int64_t Batch>
RecurrentFixture& recurrent_fixture() {
  static RecurrentFixture fixture(Batch);
  return fixture;
}

template <int64_t Batch>
void lstm_step_keyed(benchmark::State& state) {
  auto& f = recurrent_fixture<Batch>();
  f.lstm->set_recurrent_mode(false);
  torch::NoGradGuard no_grad;
  for (auto _ : state) {
    TensorDict td = f.step.clone(/*recurse=*/false);
    f.lstm(td);
    benchmark::DoNotOptimize(td.get({"next", "recurrent_state_c"}).data_ptr());
  }
}

template <int64_t Batch>
void lstm_step_raw(benchmark::State& state) {
  auto& f = recurrent_fixture<Batch>();
  torch::NoGradGuard no_grad;
  for (auto _ : state) {
    // [B, 1, H] -> [1, B, H], zeroed where is_init, one step, back to [B, 1, H].
    const auto h = (f.h * f.keep.unsqueeze(2)).transpose(0, 1);
    const auto c = (f.c * f.keep.unsqueeze(2)).transpose(0, 1);
    const auto out = f.lstm->lstm()->forward(f.x.unsqueeze(1), std::make_tuple(h, c));
    const auto y = std::get<0>(out).squeeze(1);
    const auto c_next = std::get<1>(std::get<1>(out)).transpose(0, 1);
    benchmark::DoNotOptimize(y.data_ptr());
    benchmark::DoNotOptimize(c_next.data_ptr());
  }
}

template <int64_t Batch, bool States>
void lstm_sequence_keyed(benchmark::State& state) {
  auto& f = recurrent_fixture<Batch>();
  f.lstm->set_recurrent_mode(true);
  f.lstm->set_sequence_states(States);
  for (auto _ : state) {
    TensorDict td = f.sequence.clone(/*recurse=*/false);
    f.lstm(td);
    benchmark::DoNotOptimize(td.get("embed").data_ptr());
  }
  f.lstm->set_recurrent_mode(false);
}

template <int64_t Batch>
void lstm_sequence_raw(benchmark::State& state) {
  auto& f = recurrent_fixture<Batch>();
  for (auto _ : state) {
    const auto out = f.lstm->lstm()->forward(f.xs, std::make_tuple(f.h0, f.c0));
    benchmark::DoNotOptimize(std::get<0>(out).data_ptr());
  }
}

// Every step's state by hand: torch::nn::LSTM one step at a time (its fused call returns only
// the last step's cell state), the state zeroed by hand at the steps where is_init is set, and
// the states of all steps stacked, as the keyed module's SequenceStates mode returns them.
template <int64_t Batch>
void lstm_sequence_states_raw(benchmark::State& state) {
  auto& f = recurrent_fixture<Batch>();
  const auto keep = 1 - f.sequence.get("is_init").to(torch::kFloat32);  // [B, T, 1]
  const auto any_reset = (keep < 1).any(0).squeeze(-1);                 // [T]
  std::vector<bool> resets;
  for (int64_t t = 0; t < kSequenceLength; ++t)
    resets.push_back(any_reset[t].template item<bool>());
  for (auto _ : state) {
    auto h = f.h0, c = f.c0;
    std::vector<torch::Tensor> hs, cs;
    for (int64_t t = 0; t < kSequenceLength; ++t) {
      if (resets[static_cast<size_t>(t)]) {
        const auto k = keep.select(1, t).unsqueeze(0);  // [1, B, 1]
        h = h * k;
        c = c * k;
      }
      const auto out = f.lstm->lstm()->forward(f.xs.slice(1, t, t + 1), std::make_tuple(h, c));
      h = std::get<0>(std::get<1>(out));
      c = std::get<1>(std::get<1>(out));
      hs.push_back(h);
      cs.push_back(c);
    }
    const auto output = torch::stack(hs, 2).squeeze(0);  // [B, T, H]
    const auto cells = torch::stack(cs, 2).squeeze(0);
    benchmark::DoNotOptimize(output.data_ptr());
    benchmark::DoNotOptimize(cells.data_ptr());
  }
}

const std::vector<std::string>& case_names() {
  static const std::vector<std::string> names = {"ProbabilisticActor/NoGrad",
                                                 "ProbabilisticActor/Grad",
                                                 "QValueActor/NoGrad",
                                                 "LSTMModule/Step/B1",
                                                 "LSTMModule/Step/B256",
                                                 "LSTMModule/Sequence/B1",
                                                 "LSTMModule/Sequence/B256",
                                                 "LSTMModule/SequenceStates/B1",
                                                 "LSTMModule/SequenceStates/B256"};
  return names;
}

void register_benchmarks() {
  auto add = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(("BM_" + name).c_str(), fn)->Unit(benchmark::kMicrosecond);
  };
  add("ProbabilisticActor/NoGrad/Ours", [](benchmark::State& s) { actor_keyed(s, false); });
  add("ProbabilisticActor/NoGrad/Raw", [](benchmark::State& s) { actor_raw(s, false); });
  add("ProbabilisticActor/Grad/Ours", [](benchmark::State& s) { actor_keyed(s, true); });
  add("ProbabilisticActor/Grad/Raw", [](benchmark::State& s) { actor_raw(s, true); });
  add("QValueActor/NoGrad/Ours", qvalue_keyed);
  add("QValueActor/NoGrad/Raw", qvalue_raw);
  add("LSTMModule/Step/B1/Ours", lstm_step_keyed<1>);
  add("LSTMModule/Step/B1/Raw", lstm_step_raw<1>);
  add("LSTMModule/Step/B256/Ours", lstm_step_keyed<256>);
  add("LSTMModule/Step/B256/Raw", lstm_step_raw<256>);
  add("LSTMModule/Sequence/B1/Ours", lstm_sequence_keyed<1, false>);
  add("LSTMModule/Sequence/B1/Raw", lstm_sequence_raw<1>);
  add("LSTMModule/Sequence/B256/Ours", lstm_sequence_keyed<256, false>);
  add("LSTMModule/Sequence/B256/Raw", lstm_sequence_raw<256>);
  add("LSTMModule/SequenceStates/B1/Ours", lstm_sequence_keyed<1, true>);
  add("LSTMModule/SequenceStates/B1/Raw", lstm_sequence_states_raw<1>);
  add("LSTMModule/SequenceStates/B256/Ours", lstm_sequence_keyed<256, true>);
  add("LSTMModule/SequenceStates/B256/Raw", lstm_sequence_states_raw<256>);
}

void print_tables(const RatioReporter& reporter, std::ostream& os) {
  os << "\ntdrl::modules vs hand-written LibTorch at batch " << kBatch
     << ": real time per call (median of repetitions), torch::set_num_threads(1)\n\n";
  print_ours_vs_raw(reporter, os, case_names(), [](const std::string&) { return 0.0; });
}

void describe(std::ostream& os) {
  os << "bench_modules: torch::set_num_threads(1); batch " << kBatch << ", observation " << kObs
     << ", hidden 64x64, action " << kAction << "\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
