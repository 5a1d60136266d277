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
#include "collectors/distributed_scenarios.h"

namespace tdrl::collectors {
namespace {

// CartPole with the two transforms a recurrent policy needs.
std::shared_ptr<envs::EnvBase> recurrent_cartpole(Shape batch, const modules::LSTMModule& lstm) {
  return envs::with_policy_state(make("CartPole-v1", batch), lstm->hidden_specs());
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
  // Set on a named object, not copied out of the setters' reference to a temporary (which GCC
  // 12 flags as a maybe-uninitialised std::function).
  CollectorOptions options;
  options.frames_per_batch(frames_per_batch);
  options.policy_factory([] { return CollectorPolicy(RecurrentPolicy().policy); });
  return options;
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
