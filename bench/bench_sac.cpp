// Google Benchmark of the off-policy losses against the same computation written by hand with
// raw LibTorch, as a hand-written C++ agent would do it.
//
// Cases, at batch 256 (observation 17, action 6, hidden 256x256 ReLU MLPs), float32, one
// intra-op thread, each a full forward + backward of the loss (gradients reset to none first):
// - SAC: SACLoss with a TanhNormal ProbabilisticActor (MLP 17 -> 256 -> 256 -> 12 ->
//   NormalParamExtractor) and two Q-networks (MLP 23 -> 256 -> 256 -> 1 over the concatenated
//   observation and action) with target copies; loss_actor + loss_qvalue + loss_alpha. The raw
//   side calls the same MLP modules (the target Q-networks are cloned modules) and writes the
//   rsample, log-density, detached-weight Q evaluation for the actor term, no-grad soft target,
//   smooth L1 Q losses, temperature loss and TD error itself. Target: ours <= 1.2x raw.
// - DQN (informational): DQNLoss around a QValueActor (MLP 17 -> 256 -> 256 -> 6) with a target
//   copy, one-hot actions, against the MLP call, gather, no-grad max over the target clone and
//   the squared error by hand.

#include <cmath>
#include <iostream>
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
#include "problem.h"

namespace tdrl::bench {
namespace {

constexpr int64_t kHidden = 256;

MLP make_mlp(int64_t in, int64_t out) {
  return MLP(MLPOptions(in, out).num_cells({kHidden, kHidden}).activation("relu"));
}

// Q(s, a) = mlp(cat(observation, action)).
modules::ConcatMLP make_qnet() { return modules::ConcatMLP(make_mlp(kObs + kAction, 1)); }

// A deep copy of an MLP's layers (a Sequential, not an MLP, since MLPImpl is not Cloneable).
torch::nn::Sequential clone_mlp(const MLP& mlp) {
  return torch::nn::Sequential(
      std::dynamic_pointer_cast<torch::nn::SequentialImpl>(mlp->SequentialImpl::clone()));
}

// The MLP with every Linear's weights detached: gradients reach the input only.
torch::Tensor mlp_detached_weights(const MLP& mlp, torch::Tensor x) {
  const size_t n = mlp->size();
  for (size_t i = 0; i < n; ++i) {
    auto linear = mlp->ptr(i)->as<torch::nn::Linear>();
    if (linear) {
      x = torch::nn::functional::linear(x, linear->weight.detach(), linear->bias.detach());
    } else {
      x = torch::relu(x);
    }
  }
  return x;
}

TensorDict make_batch(bool one_hot_actions) {
  auto action =
      one_hot_actions
          ? torch::one_hot(torch::randint(0, kAction, {kBatch}), kAction).to(torch::kFloat)
          : torch::rand({kBatch, kAction}) * 2 - 1;
  const auto terminated = torch::rand({kBatch, 1}) < 0.05;
  TensorDict next({{"observation", torch::randn({kBatch, kObs})},
                   {"reward", torch::randn({kBatch, 1})},
                   {"done", terminated.clone()},
                   {"terminated", terminated}},
                  {kBatch});
  return TensorDict(
      {{"observation", torch::randn({kBatch, kObs})}, {"action", action}, {"next", next}},
      {kBatch});
}

// ---- SAC -----------------------------------------------------------------------------------

struct SacFixture {
  MLP actor_mlp = make_mlp(kObs, 2 * kAction);
  modules::ConcatMLP q1 = make_qnet(), q2 = make_qnet();
  modules::ProbabilisticActor actor{nullptr};
  std::shared_ptr<losses::SACLoss> loss;
  // Raw side: the same MLPs, cloned targets, its own log alpha.
  torch::nn::Sequential q1_target{nullptr}, q2_target{nullptr};
  torch::Tensor log_alpha = torch::zeros({}, torch::requires_grad());
  TensorDict batch = make_batch(false);

  SacFixture() {
    actor = tanh_normal_actor(actor_mlp, /*return_log_prob=*/false);
    auto critic = [](modules::ConcatMLP q) {
      return modules::ValueOperator(
          q, modules::ValueOperatorOptions().in_keys({"observation", "action"}));
    };
    loss = std::make_shared<losses::SACLoss>(
        actor, std::vector<modules::ValueOperator>{critic(q1), critic(q2)},
        losses::SACLossOptions());
    q1_target = clone_mlp(q1->mlp());
    q2_target = clone_mlp(q2->mlp());
  }
};

void sac_ours(benchmark::State& state) {
  auto& f = shared_fixture<SacFixture>();
  for (auto _ : state) {
    f.loss->zero_grad();
    const auto out = f.loss->forward(f.batch);
    (out.get("loss_actor") + out.get("loss_qvalue") + out.get("loss_alpha")).backward();
    benchmark::DoNotOptimize(f.loss->log_alpha().grad().data_ptr());
  }
}

void sac_raw(benchmark::State& state) {
  auto& f = shared_fixture<SacFixture>();
  // The extractor's default scale mapping: softplus(x + c) + 0.01 with softplus(c) + 0.01 = 1.
  const double shift = std::log(std::expm1(1.0 - 0.01));
  const double half_log_2pi = 0.5 * std::log(2 * M_PI);
  const double log_2 = std::log(2.0);
  const double target_entropy = -static_cast<double>(kAction);
  const auto obs = f.batch.get("observation");
  const auto action = f.batch.get("action");
  const auto next_obs = f.batch.get({"next", "observation"});
  const auto reward = f.batch.get({"next", "reward"});
  const auto not_terminated = 1.0 - f.batch.get({"next", "terminated"}).to(torch::kFloat);
  auto sample = [&](const torch::Tensor& params) {
    const auto chunks = params.chunk(2, -1);
    const auto scale = (torch::softplus(chunks[1] + shift) + 0.01).clamp_min(1e-4);
    const auto eps = torch::randn_like(chunks[0]);
    const auto u = chunks[0] + scale * eps;
    const auto log_density = -0.5 * eps.pow(2) - scale.log() - half_log_2pi;
    const auto log_jacobian = 2.0 * (log_2 - u - torch::softplus(-2.0 * u));
    return std::make_pair(torch::tanh(u), (log_density - log_jacobian).sum(-1, true));
  };
  std::vector<torch::Tensor> params = f.actor_mlp->parameters();
  for (const auto& p : f.q1->parameters()) params.push_back(p);
  for (const auto& p : f.q2->parameters()) params.push_back(p);
  params.push_back(f.log_alpha);
  for (auto _ : state) {
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    const auto alpha = f.log_alpha.detach().exp();
    // Actor term, the Q-networks' weights detached.
    const auto [pi_action, log_prob] = sample(f.actor_mlp->forward(obs));
    const auto pi_input = torch::cat({obs, pi_action}, -1);
    const auto q_pi = torch::min(mlp_detached_weights(f.q1->mlp(), pi_input),
                                 mlp_detached_weights(f.q2->mlp(), pi_input));
    const auto loss_actor = (alpha * log_prob - q_pi).mean();
    // Q term.
    const auto input = torch::cat({obs, action}, -1);
    const auto q1_pred = f.q1->mlp()->forward(input);
    const auto q2_pred = f.q2->mlp()->forward(input);
    torch::Tensor target;
    {
      torch::NoGradGuard no_grad;
      const auto [next_action, next_log_prob] = sample(f.actor_mlp->forward(next_obs));
      const auto next_input = torch::cat({next_obs, next_action}, -1);
      const auto next_q =
          torch::min(f.q1_target->forward(next_input), f.q2_target->forward(next_input));
      target = reward + kGamma * not_terminated * (next_q - alpha * next_log_prob);
    }
    const auto loss_qvalue =
        torch::smooth_l1_loss(q1_pred, target) + torch::smooth_l1_loss(q2_pred, target);
    const auto loss_alpha = -(f.log_alpha * (log_prob.detach() + target_entropy)).mean();
    (loss_actor + loss_qvalue + loss_alpha).backward();
    const auto td_error =
        torch::max((q1_pred.detach() - target).abs(), (q2_pred.detach() - target).abs());
    benchmark::DoNotOptimize(td_error.data_ptr());
    benchmark::DoNotOptimize(f.log_alpha.grad().data_ptr());
  }
}

// ---- DQN -----------------------------------------------------------------------------------

struct DqnFixture {
  MLP mlp = make_mlp(kObs, kAction);
  std::shared_ptr<losses::DQNLoss> loss;
  torch::nn::Sequential target{nullptr};
  TensorDict batch = make_batch(true);

  DqnFixture() {
    loss = std::make_shared<losses::DQNLoss>(modules::QValueActor(mlp), losses::DQNLossOptions());
    target = clone_mlp(mlp);
  }
};

void dqn_ours(benchmark::State& state) {
  auto& f = shared_fixture<DqnFixture>();
  for (auto _ : state) {
    f.loss->zero_grad();
    f.loss->forward(f.batch).get("loss_value").backward();
    benchmark::DoNotOptimize(f.batch.get("td_error").data_ptr());
  }
}

void dqn_raw(benchmark::State& state) {
  auto& f = shared_fixture<DqnFixture>();
  const auto obs = f.batch.get("observation");
  const auto action = f.batch.get("action");
  const auto next_obs = f.batch.get({"next", "observation"});
  const auto reward = f.batch.get({"next", "reward"});
  const auto not_terminated = 1.0 - f.batch.get({"next", "terminated"}).to(torch::kFloat);
  for (auto _ : state) {
    f.mlp->zero_grad();
    const auto pred = (f.mlp->forward(obs) * action).sum(-1, true);
    torch::Tensor target;
    {
      torch::NoGradGuard no_grad;
      const auto next = std::get<0>(f.target->forward(next_obs).max(-1, true));
      target = reward + kGamma * not_terminated * next;
    }
    (pred - target).pow(2).mean().backward();
    const auto td_error = (pred.detach() - target).abs().squeeze(-1);
    benchmark::DoNotOptimize(td_error.data_ptr());
  }
}

const std::vector<std::string>& case_names() {
  static const std::vector<std::string> names = {"SACLoss", "DQNLoss"};
  return names;
}

void register_benchmarks() {
  auto add = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(("BM_" + name).c_str(), fn)->Unit(benchmark::kMicrosecond);
  };
  add("SACLoss/Ours", sac_ours);
  add("SACLoss/Raw", sac_raw);
  add("DQNLoss/Ours", dqn_ours);
  add("DQNLoss/Raw", dqn_raw);
}

void print_tables(const RatioReporter& reporter, std::ostream& os) {
  os << "\ntdrl::losses vs hand-written LibTorch, forward + backward at batch " << kBatch
     << ", 256x256 MLPs: real time per call (median of repetitions), "
        "torch::set_num_threads(1)\n\n";
  print_ours_vs_raw(reporter, os, case_names(),
                    [](const std::string& name) { return name == "SACLoss" ? 1.2 : 0.0; });
}

void describe(std::ostream& os) {
  os << "bench_sac: torch::set_num_threads(1); batch " << kBatch << ", observation " << kObs
     << ", action " << kAction << ", hidden " << kHidden << "x" << kHidden << " ReLU\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
