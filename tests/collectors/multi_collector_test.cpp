#include <tdrl/collectors/multi_collector.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <support/error_message.h>
#include <support/mock_envs.h>
#include <tdrl/envs/registry.h>
#include <tensordict/errors.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::collectors {
namespace {

using tdrl::test_util::error_message;
using namespace tdrl::testing;  // the mock envs
using tensordict::nn::TensorDictModule;
using tensordict::nn::TensorDictModuleOptions;
using ::testing::HasSubstr;

// NoisyCounterEnv of batch `batch` (action Bounded [-1, 1] float32 [*batch, 1],
// "observation" float32 [*batch, 2]).
EnvFactory noisy(std::vector<int64_t> batch = {2}, int64_t fail_at_step = 0,
                 std::chrono::microseconds step_delay = std::chrono::microseconds(0)) {
  return [batch, fail_at_step, step_delay]() -> std::shared_ptr<envs::EnvBase> {
    return std::make_shared<NoisyCounterEnv>(
        NoisyCounterOptions().batch_size(batch).fail_at_step(fail_at_step).step_delay(step_delay));
  };
}

// CountingEnv of batch `batch` whose episodes end after `max_count` steps.
EnvFactory counting_factory(std::vector<int64_t> batch, int64_t max_count) {
  return [batch, max_count]() -> std::shared_ptr<envs::EnvBase> {
    return std::make_shared<CountingEnv>(batch, max_count);
  };
}

// A deterministic policy "observation" [*, 2] -> "action" [*, 1]: a Linear with zero weight,
// so the action is its bias everywhere.
struct LinearPolicy {
  explicit LinearPolicy(double bias, int64_t in_features = 2) : linear(in_features, 1) {
    torch::NoGradGuard no_grad;
    linear->weight.zero_();
    linear->bias.fill_(bias);
    module = TensorDictModule(
        linear, TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action"}));
  }
  void set_bias(double bias) {
    torch::NoGradGuard no_grad;
    linear->bias.fill_(bias);
  }
  torch::nn::Linear linear;
  TensorDictModule module{nullptr};
};

PolicyFactory linear_factory(int64_t in_features = 2) {
  return [in_features] {
    // Random initial weights: the collector must overwrite them with the trainer's.
    return CollectorPolicy(LinearPolicy(0.0, in_features).module);
  };
}

// Writes a constant action 0.5 ([*batch, 1]).
CollectorPolicy constant_policy() {
  return CollectorPolicy([](TensorDict td) {
    auto shape = td.batch_size();
    shape.push_back(1);
    td.set("action", torch::full(shape, 0.5));
    return td;
  });
}

bool all_actions_equal(const TensorDict& batch, double value) {
  return batch.get("action").eq(value).all().item<bool>();
}

void expect_same_leaves(const TensorDict& a, const TensorDict& b) {
  ASSERT_EQ(a.batch_size(), b.batch_size());
  const auto keys = a.keys(true, true);
  ASSERT_EQ(keys.size(), b.keys(true, true).size());
  for (const auto& key : keys) {
    EXPECT_TRUE(torch::equal(a.get(key), b.get(key))) << key.to_string();
  }
}

int64_t scalar(const TensorDict& td, const NestedKey& key) { return td.get(key).item<int64_t>(); }

// ---- MultiSyncCollector ----------------------------------------------------------------------

TEST(MultiSyncCollectorTest, YieldsWorkersByEnvBatchByStepBatchesUntilExactTotal) {
  MultiSyncCollector collector(noisy({3}), 2, nullptr,
                               CollectorOptions().frames_per_batch(12).total_frames(36));
  EXPECT_EQ(collector.num_workers(), 2);
  EXPECT_EQ(collector.frames_per_batch(), 12);
  EXPECT_EQ(collector.total_frames(), 36);
  int64_t count = 0;
  for (const TensorDict& batch : collector) {
    EXPECT_EQ(batch.batch_size(), (std::vector<int64_t>{2, 3, 2}));
    EXPECT_EQ(batch.get("observation").sizes(), (std::vector<int64_t>{2, 3, 2, 2}));
    EXPECT_EQ(batch.get({"next", "reward"}).sizes(), (std::vector<int64_t>{2, 3, 2, 1}));
    EXPECT_EQ(batch.get(traj_ids_key()).sizes(), (std::vector<int64_t>{2, 3, 2}));
    ++count;
  }
  EXPECT_EQ(count, 3);
  EXPECT_EQ(collector.frames(), 36);
  EXPECT_EQ(collector.iterations(), 3);
  EXPECT_FALSE(collector.next().has_value());
}

TEST(MultiSyncCollectorTest, CollectsFromRegisteredCartPole) {
  envs::register_builtin_envs();
  MultiSyncCollector collector([] { return envs::make_env("CartPole-v1"); }, 2, nullptr,
                               CollectorOptions().frames_per_batch(20).total_frames(40));
  int64_t count = 0;
  for (const TensorDict& batch : collector) {
    EXPECT_EQ(batch.batch_size(), (std::vector<int64_t>{2, 10}));
    EXPECT_EQ(batch.get("observation").sizes(), (std::vector<int64_t>{2, 10, 4}));
    ++count;
  }
  EXPECT_EQ(count, 2);
  EXPECT_EQ(collector.frames(), 40);
}

TEST(MultiSyncCollectorTest, RoundsFramesPerBatchUpToWorkersTimesEnvNumelAndTotalToBatches) {
  MultiSyncCollector collector(noisy({3}), 2, nullptr,
                               CollectorOptions().frames_per_batch(10).total_frames(30));
  EXPECT_EQ(collector.frames_per_batch(), 12);
  EXPECT_EQ(collector.total_frames(), 36);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->batch_size(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(collector.frames(), 12);
}

TEST(MultiSyncCollectorTest, TrajIdsOfWorkerWAreLocalIdTimesWorkersPlusW) {
  const int64_t workers = 3;
  MultiSyncCollector collector(counting_factory({2}, 2), workers, nullptr,
                               CollectorOptions().frames_per_batch(36).total_frames(72));
  std::set<int64_t> all_ids;
  for (const TensorDict& batch : collector) {
    const auto ids = batch.get(traj_ids_key());
    for (int64_t w = 0; w < workers; ++w) {
      EXPECT_TRUE(ids.index({w}).remainder(workers).eq(w).all().item<bool>()) << "worker " << w;
    }
    const auto flat = ids.flatten().contiguous();
    all_ids.insert(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
  }
  // Episodes of 2 steps: 2 sub-envs x 12 steps / 2 = 12 trajectories per worker, ids
  // 0..35 once each.
  EXPECT_EQ(all_ids.size(), 36u);
  EXPECT_EQ(*all_ids.begin(), 0);
  EXPECT_EQ(*all_ids.rbegin(), 35);
}

TEST(MultiSyncCollectorTest, InitRandomFramesUseRandomActionsBeforeThePolicy) {
  MultiSyncCollector collector(
      noisy({2}), 2, constant_policy(),
      CollectorOptions().frames_per_batch(8).total_frames(32).init_random_frames(16));
  std::vector<bool> constant;
  for (const TensorDict& batch : collector) constant.push_back(all_actions_equal(batch, 0.5));
  EXPECT_EQ(constant, (std::vector<bool>{false, false, true, true}));
}

TEST(MultiSyncCollectorTest, OneWorkerWithSeedMatchesSingleCollectorWithSameSeed) {
  const auto options = CollectorOptions().frames_per_batch(8).total_frames(16);
  Collector single(noisy({2}), nullptr, options);
  MultiSyncCollector multi(noisy({2}), 1, nullptr, options);
  EXPECT_EQ(single.set_seed(7), multi.set_seed(7));
  for (int i = 0; i < 2; ++i) {
    auto a = single.next();
    auto b = multi.next();
    ASSERT_TRUE(a.has_value());
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->batch_size(), (std::vector<int64_t>{1, 2, 4}));
    expect_same_leaves(*a, b->index({0}));
  }
}

TEST(MultiSyncCollectorTest, SetSeedMakesRunsReproducibleAndWorkersDiffer) {
  auto run = [] {
    MultiSyncCollector collector(noisy({2}), 2, nullptr,
                                 CollectorOptions().frames_per_batch(8).total_frames(8));
    collector.set_seed(3);
    return *collector.next();
  };
  const TensorDict first = run();
  const TensorDict second = run();
  expect_same_leaves(first, second);
  // Worker 1's env is seeded with what worker 0's returned: its data differs.
  EXPECT_FALSE(torch::equal(first.get("action").index({0}), first.get("action").index({1})));
}

TEST(MultiSyncCollectorTest, UpdatePolicyWeightsReachesWorkerCopiesAtTheNextBatch) {
  LinearPolicy trainer(0.25);
  MultiSyncCollector collector(
      noisy({2}), 2, trainer.module,
      CollectorOptions().frames_per_batch(8).policy_factory(linear_factory()));
  EXPECT_TRUE(all_actions_equal(*collector.next(), 0.25));
  trainer.set_bias(-0.5);
  // Workers hold copies: the change is not seen before update_policy_weights_().
  EXPECT_TRUE(all_actions_equal(*collector.next(), 0.25));
  collector.update_policy_weights_();
  EXPECT_TRUE(all_actions_equal(*collector.next(), -0.5));
  EXPECT_TRUE(all_actions_equal(*collector.next(), -0.5));
}

TEST(MultiSyncCollectorTest, WithoutFactoryWorkersRunTheTrainersPolicy) {
  LinearPolicy trainer(0.25);
  MultiSyncCollector collector(noisy({2}), 2, trainer.module,
                               CollectorOptions().frames_per_batch(8));
  EXPECT_TRUE(all_actions_equal(*collector.next(), 0.25));
  trainer.set_bias(0.75);
  EXPECT_TRUE(all_actions_equal(*collector.next(), 0.75));
  collector.update_policy_weights_();  // a no-op for a shared policy
  EXPECT_TRUE(all_actions_equal(*collector.next(), 0.75));
}

TEST(MultiSyncCollectorTest, EarlyBreakThenDestructionJoinsWorkers) {
  const auto start = std::chrono::steady_clock::now();
  {
    MultiSyncCollector collector(noisy({2}), 2, nullptr, CollectorOptions().frames_per_batch(8));
    int64_t count = 0;
    for (const TensorDict& batch : collector) {
      EXPECT_EQ(batch.numel(), 8);
      if (++count == 2) break;
    }
    EXPECT_EQ(collector.iterations(), 2);
    // Iterating again continues where the loop stopped.
    for (const TensorDict& batch : collector) {
      EXPECT_EQ(batch.numel(), 8);
      break;
    }
    EXPECT_EQ(collector.frames(), 24);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(MultiSyncCollectorTest, WorkerErrorIsRethrownWithWorkerIndexThenNextReturnsNullopt) {
  // Worker 1's env fails at its 5th step: during the second batch (4 steps per batch).
  MultiSyncCollector collector({noisy({2}), noisy({2}, 5)}, nullptr,
                               CollectorOptions().frames_per_batch(16));
  ASSERT_TRUE(collector.next().has_value());
  const std::string message = error_message<tensordict::ValueError>([&] { collector.next(); });
  EXPECT_THAT(message, HasSubstr("worker 1: "));
  EXPECT_THAT(message, HasSubstr("NoisyCounterEnv: step 5 fails on purpose"));
  EXPECT_FALSE(collector.next().has_value());
  EXPECT_FALSE(collector.next().has_value());
  EXPECT_EQ(collector.iterations(), 1);
  collector.shutdown();  // idempotent
}

TEST(MultiSyncCollectorTest, PolicyThatDoesNotWriteTheActionThrowsKeyError) {
  MultiSyncCollector collector(noisy({2}), 2, CollectorPolicy([](TensorDict td) { return td; }),
                               CollectorOptions().frames_per_batch(8));
  const std::string message = error_message<tensordict::KeyError>([&] { collector.next(); });
  EXPECT_THAT(message, HasSubstr("worker "));
  EXPECT_THAT(message, HasSubstr("did not write the action 'action'"));
  EXPECT_FALSE(collector.next().has_value());
}

TEST(MultiSyncCollectorTest, SplitTrajsSplitsTheCombinedBatchWithMask) {
  // Episodes of 3 steps, 5 steps per row: each of the 2 x 2 rows holds 2 trajectories
  // (3 steps and 2 steps).
  MultiSyncCollector collector(
      counting_factory({2}, 3), 2, nullptr,
      CollectorOptions().frames_per_batch(20).total_frames(20).split_trajs(true));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->batch_size(), (std::vector<int64_t>{8, 3}));
  const auto mask = batch->get(mask_key());
  EXPECT_EQ(mask.sum().item<int64_t>(), 20);
  EXPECT_EQ(collector.frames(), 20);
  // Within a trajectory the id is constant; ids are unique over rows.
  const auto ids = batch->get(traj_ids_key());
  const auto first = ids.select(1, 0);
  EXPECT_TRUE(ids.eq(first.unsqueeze(1)).logical_or(mask.logical_not()).all().item<bool>());
  EXPECT_EQ(std::get<0>(at::_unique(first)).numel(), 8);
}

TEST(MultiSyncCollectorTest, PostprocRunsOnTheCombinedBatch) {
  MultiSyncCollector collector(noisy({2}), 2, nullptr,
                               CollectorOptions().frames_per_batch(8).postproc(
                                   [](TensorDict td) { return td.reshape({td.numel()}); }));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->batch_size(), (std::vector<int64_t>{8}));
}

TEST(MultiSyncCollectorTest, StateDictRoundTripResumesCountersAndTrajIds) {
  const auto options = CollectorOptions().frames_per_batch(12).total_frames(48);
  MultiSyncCollector first(counting_factory({2}, 2), 2, nullptr, options);
  std::set<int64_t> seen;
  for (int i = 0; i < 2; ++i) {
    const auto ids = first.next()->get(traj_ids_key()).flatten().contiguous();
    seen.insert(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  }
  const TensorDict state = first.state_dict();
  EXPECT_EQ(scalar(state, "frames"), 24);
  EXPECT_EQ(scalar(state, "iterations"), 2);
  EXPECT_EQ(scalar(state, {"workers", "w0", "frames"}), 12);
  EXPECT_GT(scalar(state, {"workers", "w1", "next_traj_id"}), 0);

  MultiSyncCollector second(counting_factory({2}, 2), 2, nullptr, options);
  second.load_state_dict(state);
  EXPECT_EQ(second.frames(), 24);
  EXPECT_EQ(second.iterations(), 2);
  expect_same_leaves(second.state_dict(), state);
  int64_t more = 0;
  for (const TensorDict& batch : second) {
    const auto ids = batch.get(traj_ids_key()).flatten().contiguous();
    for (int64_t i = 0; i < ids.numel(); ++i) {
      EXPECT_EQ(seen.count(ids.data_ptr<int64_t>()[i]), 0u) << "id reused after resuming";
    }
    ++more;
  }
  EXPECT_EQ(more, 2);
}

TEST(MultiSyncCollectorTest, LoadStateDictNamesMissingKeyAndLeavesCountersUnchanged) {
  MultiSyncCollector collector(counting_factory({2}, 2), 2, nullptr,
                               CollectorOptions().frames_per_batch(4));
  collector.next();
  const TensorDict state = collector.state_dict();
  const std::string message = error_message<tensordict::KeyError>([&] {
    collector.load_state_dict(state.exclude(std::vector<NestedKey>{NestedKey("frames")}));
  });
  EXPECT_THAT(message, HasSubstr("MultiSyncCollector::load_state_dict"));
  EXPECT_THAT(message, HasSubstr("'frames'"));
  TensorDict no_worker = state.clone();
  no_worker.del_({"workers", "w1"});
  no_worker.set("frames", torch::tensor(int64_t{100}));
  const std::string message2 =
      error_message<tensordict::KeyError>([&] { collector.load_state_dict(no_worker); });
  EXPECT_THAT(message2, HasSubstr("('workers', 'w1')"));
  EXPECT_EQ(collector.frames(), 4);
}

TEST(MultiSyncCollectorTest, ConstructorRejectsBadArgumentsNamingTheFix) {
  const auto options = CollectorOptions().frames_per_batch(8);
  EXPECT_THROW(MultiSyncCollector(std::vector<EnvFactory>{}, nullptr, options),
               tensordict::ValueError);
  EXPECT_THROW(MultiSyncCollector(noisy(), 0, nullptr, options), tensordict::ValueError);
  const std::string message = error_message<tensordict::ValueError>(
      [&] { MultiSyncCollector(noisy(), 2, nullptr, CollectorOptions()); });
  EXPECT_THAT(message, HasSubstr("frames_per_batch is 0"));
  const std::string message2 = error_message<tensordict::ValueError>([&] {
    MultiSyncCollector(noisy(), 2, nullptr, CollectorOptions(options).max_frames_per_traj(0));
  });
  EXPECT_THAT(message2, HasSubstr("MultiSyncCollector: worker 0: "));
  EXPECT_THAT(message2, HasSubstr("max_frames_per_traj is 0"));
}

TEST(MultiSyncCollectorTest, FactoryPolicyThatDoesNotMatchTheTrainersIsRejected) {
  LinearPolicy trainer(0.25);
  const std::string message = error_message<tensordict::ShapeError>([&] {
    MultiSyncCollector(noisy(), 2, trainer.module,
                       CollectorOptions().frames_per_batch(8).policy_factory(linear_factory(3)));
  });
  EXPECT_THAT(message, HasSubstr("MultiSyncCollector: worker 0: load_policy_weights"));
}

// ---- MultiAsyncCollector ---------------------------------------------------------------------

TEST(MultiAsyncCollectorTest, YieldsOneWorkersBatchesUntilExactTotal) {
  MultiAsyncCollector collector(noisy({2}), 2, nullptr,
                                CollectorOptions().frames_per_batch(8).total_frames(40));
  EXPECT_EQ(collector.last_worker(), -1);
  int64_t count = 0;
  for (const TensorDict& batch : collector) {
    EXPECT_EQ(batch.batch_size(), (std::vector<int64_t>{2, 4}));
    const auto ids = batch.get(traj_ids_key());
    EXPECT_TRUE(ids.remainder(2).eq(collector.last_worker()).all().item<bool>());
    ++count;
  }
  EXPECT_EQ(count, 5);
  EXPECT_EQ(collector.frames(), 40);
  EXPECT_EQ(collector.iterations(), 5);
  EXPECT_FALSE(collector.next().has_value());
}

TEST(MultiAsyncCollectorTest, RoundsFramesPerBatchToEnvNumel) {
  MultiAsyncCollector collector(noisy({3}), 2, nullptr,
                                CollectorOptions().frames_per_batch(10).total_frames(20));
  EXPECT_EQ(collector.frames_per_batch(), 12);
  EXPECT_EQ(collector.total_frames(), 24);
  EXPECT_EQ(collector.next()->batch_size(), (std::vector<int64_t>{3, 4}));
}

TEST(MultiAsyncCollectorTest, YieldsFromBothWorkers) {
  MultiAsyncCollector collector(noisy({2}, 0, std::chrono::microseconds(500)), 2, nullptr,
                                CollectorOptions().frames_per_batch(8).total_frames(128));
  std::set<int64_t> workers;
  while (collector.next()) workers.insert(collector.last_worker());
  EXPECT_EQ(workers, (std::set<int64_t>{0, 1}));
}

TEST(MultiAsyncCollectorTest, RefusesSharedPolicyWithoutFactory) {
  LinearPolicy trainer(0.25);
  const std::string message = error_message<tensordict::ValueError>([&] {
    MultiAsyncCollector(noisy(), 2, trainer.module, CollectorOptions().frames_per_batch(8));
  });
  EXPECT_THAT(message, HasSubstr("MultiAsyncCollector"));
  EXPECT_THAT(message, HasSubstr("CollectorOptions().policy_factory(...)"));
}

TEST(MultiAsyncCollectorTest, UpdatePolicyWeightsReachesWorkersAtTheirNextBatch) {
  LinearPolicy trainer(0.25);
  MultiAsyncCollector collector(
      noisy({2}), 2, trainer.module,
      CollectorOptions().frames_per_batch(8).policy_factory(linear_factory()));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(all_actions_equal(*collector.next(), 0.25));
  trainer.set_bias(-0.5);
  collector.update_policy_weights_();
  // Batches requested after the update use the new weights: every batch of the worker just
  // re-requested, and the other worker's after its batch in flight (which started before or
  // after the update, so it may hold either).
  const int64_t last = collector.last_worker();
  std::vector<int64_t> yielded(2, 0);
  for (int i = 0; i < 6; ++i) {
    const TensorDict batch = *collector.next();
    const int64_t w = collector.last_worker();
    const bool updated = all_actions_equal(batch, -0.5);
    if (w == last || yielded[static_cast<size_t>(w)] > 0) {
      EXPECT_TRUE(updated) << "batch " << i << " of worker " << w;
    } else {
      EXPECT_TRUE(updated || all_actions_equal(batch, 0.25));
    }
    ++yielded[static_cast<size_t>(w)];
  }
}

TEST(MultiAsyncCollectorTest, InitRandomFramesUseRandomActionsFirst) {
  MultiAsyncCollector collector(
      noisy({2}), 2, nullptr,
      CollectorOptions().frames_per_batch(8).total_frames(48).init_random_frames(8).policy_factory(
          [] { return constant_policy(); }));
  // Each worker's first batch is requested at frame 0 (random); a worker is asked again only
  // after its batch was yielded, at >= 8 frames (the policy).
  std::vector<int64_t> yielded(2, 0);
  int64_t count = 0;
  for (const TensorDict& batch : collector) {
    const auto w = static_cast<size_t>(collector.last_worker());
    const bool first_of_worker = yielded[w]++ == 0;
    EXPECT_EQ(all_actions_equal(batch, 0.5), !first_of_worker) << "batch " << count;
    ++count;
  }
  EXPECT_EQ(count, 6);
}

TEST(MultiAsyncCollectorTest, EarlyBreakThenDestructionCancelsBatchesInFlight) {
  // A batch takes 200 steps x 5 ms = 1 s; destruction must not wait for one.
  auto collector =
      std::make_unique<MultiAsyncCollector>(noisy({1}, 0, std::chrono::milliseconds(5)), 2, nullptr,
                                            CollectorOptions().frames_per_batch(200));
  for (const TensorDict& batch : *collector) {
    EXPECT_EQ(batch.numel(), 200);
    break;
  }
  const auto start = std::chrono::steady_clock::now();
  collector.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

TEST(MultiAsyncCollectorTest, WorkerErrorIsRethrownThenNextReturnsNullopt) {
  MultiAsyncCollector collector({noisy({2}, 3), noisy({2}, 3)}, nullptr,
                                CollectorOptions().frames_per_batch(8));
  const std::string message = error_message<tensordict::ValueError>([&] { collector.next(); });
  EXPECT_THAT(message, HasSubstr("worker "));
  EXPECT_THAT(message, HasSubstr("step 3 fails on purpose"));
  EXPECT_FALSE(collector.next().has_value());
}

TEST(MultiAsyncCollectorTest, SetSeedWhileWorkersCollectThrows) {
  MultiAsyncCollector collector(noisy({1}, 0, std::chrono::milliseconds(2)), 2, nullptr,
                                CollectorOptions().frames_per_batch(20));
  collector.set_seed(1);  // before the first next(): fine
  collector.next();
  const std::string message = error_message<tensordict::Error>([&] { collector.set_seed(2); });
  EXPECT_THAT(message, HasSubstr("MultiAsyncCollector::set_seed"));
  EXPECT_THAT(message, HasSubstr("is collecting"));
}

TEST(MultiAsyncCollectorTest, StateDictWhileCollectingCountsYieldedFrames) {
  MultiAsyncCollector collector(noisy({2}), 2, nullptr,
                                CollectorOptions().frames_per_batch(8).total_frames(80));
  collector.next();
  collector.next();
  const TensorDict state = collector.state_dict();
  EXPECT_EQ(scalar(state, "frames"), 16);
  EXPECT_EQ(scalar(state, "iterations"), 2);
  EXPECT_TRUE(state.contains({"workers", "w0", "next_traj_id"}));
  EXPECT_TRUE(state.contains({"workers", "w1", "next_traj_id"}));

  MultiAsyncCollector resumed(noisy({2}), 2, nullptr,
                              CollectorOptions().frames_per_batch(8).total_frames(80));
  resumed.load_state_dict(state);
  int64_t count = 0;
  while (resumed.next()) ++count;
  EXPECT_EQ(count, 8);
  EXPECT_EQ(resumed.frames(), 80);
}

}  // namespace
}  // namespace tdrl::collectors
