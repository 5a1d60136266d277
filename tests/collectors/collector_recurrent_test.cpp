// A recurrent policy in a collector: TensorDictPrimer and InitTracker give it its state at every
// step; the state runs on from step to step and from batch to batch, restarts from zero exactly
// where a sub-env resets, and leaves the other sub-envs' (and workers') states alone.

#include <tdrl/collectors/multi_collector.h>
#include <tdrl/envs/transforms/all.h>
#include <tdrl/modules/q_value.h>
#include <tdrl/modules/recurrent.h>

#include <map>
#include <string>
#include <vector>

#include "collector_test_fixtures.h"

namespace tdrl::collectors {
namespace {

// CartPole with the two transforms a recurrent policy needs.
std::shared_ptr<envs::EnvBase> recurrent_cartpole(Shape batch, const modules::LSTMModule& lstm) {
  return envs::with_policy_state(make("CartPole-v1", batch), lstm->hidden_specs());
}

// A greedy recurrent Q-policy for CartPole: LSTM over the observation, a linear head, argmax.
struct RecurrentPolicy {
  modules::LSTMModule lstm{
      modules::RecurrentModuleOptions(4, 8).in_key("observation").out_key("embed")};
  tdnn::TensorDictSequential policy{nullptr};
  RecurrentPolicy() {
    torch::nn::Linear head(8, 2);
    policy = tdnn::TensorDictSequential(
        lstm,
        tdnn::TensorDictModule(
            head, tdnn::TensorDictModuleOptions().in_keys({"embed"}).out_keys({"action_value"})),
        modules::QValueModule(modules::QValueModuleOptions().action_space("categorical")));
  }
};

// Consecutive `[E, T]` batches of one collector: at each step the state is zero where the
// sub-env (re)starts, else the state the policy wrote at the step before (in the same batch or
// at the end of the previous one); resets happen inside the batches, and the state moves (a
// state stuck at zero would pass the rest vacuously).
void expect_state_runs_on(const std::vector<TensorDict>& batches) {
  int64_t resets_inside = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    const auto h = batches[b].get("recurrent_state_h");
    const auto h_next = batches[b].get({"next", "recurrent_state_h"});
    const auto init = batches[b].get("is_init").squeeze(-1);
    for (int64_t e = 0; e < h.size(0); ++e) {
      for (int64_t t = 0; t < h.size(1); ++t) {
        if (init[e][t].item<bool>()) {
          EXPECT_TRUE(torch::all(h[e][t] == 0).item<bool>()) << "b=" << b << " e=" << e;
          if (t > 0) ++resets_inside;
          continue;
        }
        if (t == 0 && b == 0) continue;
        const auto before =
            t > 0 ? h_next[e][t - 1] : batches[b - 1].get({"next", "recurrent_state_h"})[e][-1];
        EXPECT_TRUE(torch::equal(h[e][t], before)) << "b=" << b << " e=" << e << " t=" << t;
      }
    }
  }
  EXPECT_GT(resets_inside, 0);
  EXPECT_GT(batches.back().get("recurrent_state_c").abs().sum().item<double>(), 0);
}

TEST(CollectorRecurrentTest, ThePrimedEnvPassesTheSpecChecksWithTheStateInItsSpecs) {
  RecurrentPolicy p;
  auto env = recurrent_cartpole({3}, p.lstm);
  envs::check_env_specs(*env);
  EXPECT_EQ(env->observation_spec()->get("recurrent_state_h")->shape(), (Shape{3, 1, 8}));
}

TEST(CollectorRecurrentTest, TheStateRunsOnAcrossStepsAndBatchesAndRestartsAtResets) {
  torch::manual_seed(0);
  RecurrentPolicy p;
  Collector collector(recurrent_cartpole({3}, p.lstm), p.policy, options(3 * 40));
  collector.set_seed(1);
  std::vector<TensorDict> batches;
  for (int b = 0; b < 3; ++b) batches.push_back(*collector.next());
  expect_state_runs_on(batches);
}

// The worker collectors' parts: unbatched recurrent CartPoles, and a policy copy per worker.
envs::EnvFactory worker_envs(const RecurrentPolicy& p) {
  envs::register_builtin_envs();
  const auto hidden = p.lstm->hidden_specs();
  return [hidden] { return envs::with_policy_state(envs::make_env("CartPole-v1"), hidden); };
}
CollectorOptions worker_options(int64_t frames_per_batch) {
  return CollectorOptions().frames_per_batch(frames_per_batch).policy_factory([] {
    return CollectorPolicy(RecurrentPolicy().policy);
  });
}

// Each worker thread steps its own env with its own policy copy: each carries its own state.
TEST(CollectorRecurrentTest, EachWorkerCarriesItsOwnState) {
  torch::manual_seed(0);
  RecurrentPolicy p;
  MultiSyncCollector collector(worker_envs(p), 2, p.policy, worker_options(2 * 40));
  collector.set_seed(3);
  std::vector<TensorDict> batches;
  for (int b = 0; b < 3; ++b) batches.push_back(*collector.next());
  EXPECT_EQ(batches[0].batch_size(), (Shape{2, 40}));
  expect_state_runs_on(batches);
}

// Worker threads that yield whichever batch is ready first: each worker's batches, in the order
// it collected them, carry its own state on.
TEST(CollectorRecurrentTest, EachAsyncWorkerCarriesItsOwnState) {
  torch::manual_seed(0);
  RecurrentPolicy p;
  MultiAsyncCollector collector(worker_envs(p), 2, p.policy, worker_options(40));
  collector.set_seed(5);
  std::map<int64_t, std::vector<TensorDict>> by_worker;
  const auto enough = [&] {
    return by_worker.size() == 2 && by_worker[0].size() >= 3 && by_worker[1].size() >= 3;
  };
  for (int b = 0; b < 40 && !enough(); ++b) {
    const TensorDict batch = *collector.next();
    ASSERT_EQ(batch.batch_size(), (Shape{40}));
    by_worker[collector.last_worker()].push_back(batch.unsqueeze(0));
  }
  ASSERT_TRUE(enough());
  for (const auto& [worker, batches] : by_worker) {
    SCOPED_TRACE("worker " + std::to_string(worker));
    expect_state_runs_on(batches);
  }
}

}  // namespace
}  // namespace tdrl::collectors
