// Google Benchmark of the value estimators and the PPO loss against the same computation
// written by hand with raw LibTorch, as a hand-written C++ agent would do it.
//
// Cases (float32, one intra-op thread):
// - GAE/<B>x<T> for [8, 256] and [64, 1000] (values, rewards and flags [B, T, 1], ~5%
//   terminated and ~5% truncated steps):
//   - Functional: functional::generalized_advantage_estimate (raw CPU loops over contiguous
//     data, advantage and value target);
//   - Module: the GAE module on a TensorDict [B, T] holding the values (no value network),
//     writing advantage and value_target;
//   - Raw: the vectorised recursion a C++ user writes with tensor ops, one step at a time
//     over T (delta, the advantage update and a copy into the output per step).
// - ClipPPO/2048: ClipPPOLoss forward + backward at batch 2048 (observation 17, action 6),
//   actor MLP(17 -> 64 -> 64 -> 12) -> NormalParamExtractor -> TanhNormal on [-1, 1], critic
//   MLP(17 -> 64 -> 64 -> 1), advantage and value_target in the batch (as in PPO epochs),
//   default options (clip 0.2, entropy bonus 0.01 with a one-sample Monte-Carlo entropy,
//   smooth-L1 critic); against the same MLP calls, distribution algebra, clipped objective,
//   Monte-Carlo entropy, critic loss and diagnostics (clip fraction, entropy, ESS,
//   kl_approx) written directly, then the same backward.
//
// Both sides call the same module instances. Gradients accumulate across iterations on both
// sides alike (no zeroing in the timed loop).

#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <tdrl/losses.h>
#include <tdrl/modules.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nn.h>
#include <tensordict/tensordict.h>

#include "actors.h"
#include "common.h"
#include "ppo_fixture.h"
#include "problem.h"

namespace tdrl::bench {
namespace {

constexpr double kLambda = 0.95;

// ---- GAE ------------------------------------------------------------------------------------

struct GaeData {
  torch::Tensor value, next_value, reward, done, terminated;
  TensorDict td;
  losses::GAE module{nullptr};

  GaeData(int64_t batch, int64_t steps) {
    value = torch::randn({batch, steps, 1});
    next_value = torch::randn({batch, steps, 1});
    reward = torch::randn({batch, steps, 1});
    terminated = torch::rand({batch, steps, 1}) < 0.05;
    done = terminated | (torch::rand({batch, steps, 1}) < 0.05);
    TensorDict next({{"state_value", next_value},
                     {"reward", reward},
                     {"done", done},
                     {"terminated", terminated}},
                    {batch, steps});
    td = TensorDict({{"state_value", value}, {"next", next}}, {batch, steps});
    module = losses::GAE(nullptr, losses::ValueEstimatorOptions().gamma(kGamma).lmbda(kLambda));
  }
};

GaeData& gae_data(int64_t batch, int64_t steps) {
  static GaeData small(8, 256);
  static GaeData large(64, 1000);
  return batch == 8 ? small : large;
}

void gae_functional(benchmark::State& state, int64_t batch, int64_t steps) {
  auto& d = gae_data(batch, steps);
  for (auto _ : state) {
    auto [advantage, target] = losses::functional::generalized_advantage_estimate(
        kGamma, kLambda, d.value, d.next_value, d.reward, d.done, d.terminated);
    benchmark::DoNotOptimize(advantage.data_ptr());
    benchmark::DoNotOptimize(target.data_ptr());
  }
}

void gae_module(benchmark::State& state, int64_t batch, int64_t steps) {
  auto& d = gae_data(batch, steps);
  for (auto _ : state) {
    d.module(d.td);
    benchmark::DoNotOptimize(d.td.get("advantage").data_ptr());
  }
}

void gae_raw(benchmark::State& state, int64_t batch, int64_t steps) {
  auto& d = gae_data(batch, steps);
  for (auto _ : state) {
    const auto not_done = (~d.done).to(torch::kFloat);
    const auto not_terminated = (~d.terminated).to(torch::kFloat);
    auto advantage = torch::empty_like(d.value);
    auto next_advantage = torch::zeros({batch, 1});
    for (int64_t t = steps - 1; t >= 0; --t) {
      const auto delta = d.reward.select(1, t) +
                         kGamma * not_terminated.select(1, t) * d.next_value.select(1, t) -
                         d.value.select(1, t);
      next_advantage = delta + (kGamma * kLambda) * not_done.select(1, t) * next_advantage;
      advantage.select(1, t).copy_(next_advantage);
    }
    const auto target = advantage + d.value;
    benchmark::DoNotOptimize(advantage.data_ptr());
    benchmark::DoNotOptimize(target.data_ptr());
  }
}

// ---- ClipPPOLoss ----------------------------------------------------------------------------

void ppo_ours(benchmark::State& state) {
  auto& f = shared_fixture<PpoFixture>();
  for (auto _ : state) {
    const auto out = f.loss->forward(f.batch);
    const auto total = out.get("loss_objective") + out.get("loss_critic") + out.get("loss_entropy");
    total.backward();
    benchmark::DoNotOptimize(out.get("ESS").data_ptr());
  }
}

void ppo_raw(benchmark::State& state) {
  auto& f = shared_fixture<PpoFixture>();
  const auto obs = f.batch.get("observation");
  const auto action = f.batch.get("action");
  const auto previous = f.batch.get("sample_log_prob");
  const auto advantage = f.batch.get("advantage");
  const auto value_target = f.batch.get("value_target");
  const double shift = std::log(std::expm1(1.0 - 0.01));  // biased_softplus_1.0
  const double half_log_2pi = 0.5 * std::log(2 * M_PI);
  const double log2 = std::log(2.0);
  const double eps = std::numeric_limits<float>::epsilon();
  const double clip_low = std::log1p(-0.2), clip_high = std::log1p(0.2);
  for (auto _ : state) {
    const auto chunks = f.actor_mlp->forward(obs).chunk(2, -1);
    const auto loc = chunks[0];
    const auto scale = (torch::softplus(chunks[1] + shift) + 0.01).clamp_min(1e-4);
    // log-prob of the batch's action under the tanh-Gaussian.
    const auto u = torch::atanh(action.clamp(-1 + eps, 1 - eps));
    const auto z = (u - loc) / scale;
    const auto log_density = -0.5 * z * z - scale.log() - half_log_2pi;
    const auto log_jacobian = 2.0 * (log2 - u - torch::softplus(-2.0 * u));
    const auto log_prob = (log_density - log_jacobian).sum(-1);
    // Clipped objective.
    const auto log_weight = (log_prob - previous).unsqueeze(-1);
    const auto clipped = log_weight.clamp(clip_low, clip_high);
    const auto gain = torch::min(log_weight.exp() * advantage, clipped.exp() * advantage);
    const auto loss_objective = -gain.mean();
    // One-sample Monte-Carlo entropy from a reparametrised draw.
    const auto noise = torch::randn_like(loc);
    const auto u_sample = loc + scale * noise;
    const auto sample_log_prob = (-0.5 * noise * noise - scale.log() - half_log_2pi -
                                  2.0 * (log2 - u_sample - torch::softplus(-2.0 * u_sample)))
                                     .sum(-1);
    const auto entropy = -sample_log_prob.unsqueeze(-1);
    const auto loss_entropy = -0.01 * entropy.mean();
    // Critic.
    const auto value = f.critic_mlp->forward(obs);
    const auto loss_critic = torch::smooth_l1_loss(value, value_target);
    // Diagnostics.
    torch::Tensor clip_fraction, entropy_mean, ess, kl_approx;
    {
      torch::NoGradGuard no_grad;
      clip_fraction = (clipped != log_weight).to(torch::kFloat).mean();
      entropy_mean = entropy.mean();
      const auto w = log_weight.squeeze(-1);
      ess = (2 * w.logsumexp(0) - (2 * w).logsumexp(0)).exp() / double(kPpoBatch);
      kl_approx = (previous - log_prob).mean();
    }
    (loss_objective + loss_critic + loss_entropy).backward();
    benchmark::DoNotOptimize(ess.data_ptr());
  }
}

// ---- Registration and table -----------------------------------------------------------------

struct Case {
  std::string name;
  std::string ours;  // the benchmark compared with Raw
  double target_us;  // absolute target on ours, or < 0
  double target_ratio;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"GAE/8x256", "Functional", 50.0, -1}, {"GAE/8x256", "Module", 50.0, -1},
      {"GAE/64x1000", "Functional", -1, -1}, {"GAE/64x1000", "Module", -1, -1},
      {"ClipPPO/2048", "Ours", -1, 1.2},
  };
  return all;
}

void register_benchmarks() {
  auto add = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(("BM_" + name).c_str(), fn)->Unit(benchmark::kMicrosecond);
  };
  for (const auto& [b, t] : std::vector<std::pair<int64_t, int64_t>>{{8, 256}, {64, 1000}}) {
    const std::string name = "GAE/" + std::to_string(b) + "x" + std::to_string(t);
    const int64_t batch = b, steps = t;
    add(name + "/Functional",
        [batch, steps](benchmark::State& s) { gae_functional(s, batch, steps); });
    add(name + "/Module", [batch, steps](benchmark::State& s) { gae_module(s, batch, steps); });
    add(name + "/Raw", [batch, steps](benchmark::State& s) { gae_raw(s, batch, steps); });
  }
  add("ClipPPO/2048/Ours", ppo_ours);
  add("ClipPPO/2048/Raw", ppo_raw);
}

void print_tables(const RatioReporter& reporter, std::ostream& os) {
  os << "\ntdrl::losses vs hand-written LibTorch: real time per call (median of repetitions), "
        "torch::set_num_threads(1)\n\n"
     << "| case | ours | ours us | raw us | ratio | cpu ratio | target |\n"
     << "|---|---|---:|---:|---:|---:|---|\n";
  for (const auto& c : cases()) {
    const Timing ours = reporter.timing("BM_" + c.name + "/" + c.ours);
    const Timing raw = reporter.timing("BM_" + c.name + "/Raw");
    if (ours.real < 0 || raw.real <= 0) continue;
    const double us = ours.real / 1e3, ratio = ours.real / raw.real;
    std::string target = "-";
    if (c.target_us > 0) {
      target = "<= " + fixed(c.target_us, 0) + " us " + (us <= c.target_us ? "ok" : "MISS");
    } else if (c.target_ratio > 0) {
      target = "<= " + fixed(c.target_ratio, 1) + " " + (ratio <= c.target_ratio ? "ok" : "MISS");
    }
    os << "| " << c.name << " | " << c.ours << " | " << fixed(us, 1) << " | "
       << fixed(raw.real / 1e3, 1) << " | " << fixed(ratio, 3) << " | "
       << fixed(ours.cpu / raw.cpu, 3) << " | " << target << " |\n";
  }
}

void describe(std::ostream& os) {
  os << "bench_losses: torch::set_num_threads(1); GAE over [8, 256] and [64, 1000]; "
        "ClipPPOLoss at batch "
     << kPpoBatch << ", observation " << kObs << ", hidden 64x64, action " << kAction << "\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
