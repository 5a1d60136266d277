// Collector: batch shapes and keys, frame accounting, trajectories, options, errors, cancel,
// shutdown and state.

#include "collector_test_fixtures.h"

namespace tdrl::collectors {
namespace {

// ---- Shapes and keys -------------------------------------------------------------------------

TEST(CollectorTest, UnbatchedEnvYieldsBatchOfTStepsWithEveryKey) {
  Collector collector(make("CartPole-v1"), nullptr, options(20, 40));
  collector.set_seed(0);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->batch_size(), (Shape{20}));
  EXPECT_EQ(shape(batch->get(kObs)), (Shape{20, 4}));
  EXPECT_EQ(shape(batch->get(kAction)), (Shape{20}));
  EXPECT_EQ(batch->get(kAction).scalar_type(), torch::kInt64);
  EXPECT_EQ(shape(batch->get(kNextObs)), (Shape{20, 4}));
  EXPECT_EQ(shape(batch->get(kNextReward)), (Shape{20, 1}));
  for (const char* flag : {"done", "terminated", "truncated"}) {
    EXPECT_EQ(shape(batch->get(flag)), (Shape{20, 1})) << flag;
    EXPECT_EQ(shape(batch->get({"next", flag})), (Shape{20, 1})) << flag;
    EXPECT_EQ(batch->get({"next", flag}).scalar_type(), torch::kBool) << flag;
  }
  const auto ids = batch->get(traj_ids_key());
  EXPECT_EQ(shape(ids), (Shape{20}));
  EXPECT_EQ(ids.scalar_type(), torch::kInt64);
  EXPECT_FALSE(batch->contains("_reset"));
  EXPECT_EQ(collector.steps_per_batch(), 20);
}

TEST(CollectorTest, NativelyBatchedEnvYieldsEnvBatchThenTime) {
  Collector collector(make("CartPole-v1", {4}), nullptr, options(32));
  collector.set_seed(0);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->batch_size(), (Shape{4, 8}));
  EXPECT_EQ(shape(batch->get(kObs)), (Shape{4, 8, 4}));
  EXPECT_EQ(shape(batch->get(kAction)), (Shape{4, 8}));
  EXPECT_EQ(shape(batch->get(kNextDone)), (Shape{4, 8, 1}));
  EXPECT_EQ(shape(batch->get(traj_ids_key())), (Shape{4, 8}));
  EXPECT_EQ(ints(batch->get(traj_ids_key()).select(1, 0)), (Ints{0, 1, 2, 3}));
  EXPECT_EQ(collector.steps_per_batch(), 8);
}

TEST(CollectorTest, SerialEnvOfBatchedSubEnvsYieldsAllEnvDimsThenTime) {
  auto env = std::make_shared<envs::SerialEnv>(2, [] { return counting({3}); });
  Collector collector(env, nullptr, options(12));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->batch_size(), (Shape{2, 3, 2}));
  EXPECT_EQ(shape(batch->get(kObs)), (Shape{2, 3, 2, 1}));
  EXPECT_EQ(ints(batch->get(traj_ids_key())), (Ints{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(CollectorTest, BatchHoldsWhatTheProbabilisticActorWrites) {
  torch::manual_seed(0);
  auto actor = pendulum_actor();
  Collector collector(make("Pendulum-v1"), actor, options(10));
  collector.set_seed(0);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(shape(batch->get("loc")), (Shape{10, 1}));
  EXPECT_EQ(shape(batch->get("scale")), (Shape{10, 1}));
  EXPECT_EQ(shape(batch->get(kAction)), (Shape{10, 1}));
  ASSERT_TRUE(batch->contains("sample_log_prob"));
  EXPECT_EQ(batch->get("sample_log_prob").size(0), 10);
  EXPECT_TRUE(torch::allclose(batch->get("scale"), torch::full({10, 1}, 0.1)));
  EXPECT_FALSE(batch->get("loc").requires_grad());
}

TEST(CollectorTest, CountingEnvBatchRecordsEveryStepResetAndTrajectoryId) {
  Collector collector(counting({}, 3), nullptr, options(8));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{0, 1, 2, 0, 1, 2, 0, 1}));
  EXPECT_EQ(floats(batch->get(kNextObs)), (Floats{1, 2, 3, 1, 2, 3, 1, 2}));
  EXPECT_EQ(ints(batch->get(kNextDone)), (Ints{0, 0, 1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(ints(batch->get(kNextTerminated)), (Ints{0, 0, 1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(ints(batch->get("done")), (Ints{0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(floats(batch->get(kNextReward)), (Floats(8, 1.0F)));
  EXPECT_EQ(ints(batch->get(traj_ids_key())), (Ints{0, 0, 0, 1, 1, 1, 2, 2}));
}

TEST(CollectorTest, SimultaneousResetsTakeIdsInSubEnvOrder) {
  Collector collector(two_counters(), nullptr, options(16));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 0, 1, 2, 0, 1}));
  // Sub-env 0 is done at steps 1, 3, 5, 7; sub-env 1 at 2, 5; both at 5 (0 gets 5, 1 gets 6).
  EXPECT_EQ(ints(batch->get(traj_ids_key())),
            (Ints{0, 0, 2, 2, 4, 4, 5, 5, 1, 1, 1, 3, 3, 3, 6, 6}));
}

// ---- Frame accounting ------------------------------------------------------------------------

TEST(CollectorTest, CollectsExactlyTotalFramesInFullBatches) {
  Collector collector(counting({2}), nullptr, options(6, 18));
  EXPECT_EQ(collector.frames_per_batch(), 6);
  EXPECT_EQ(collector.total_frames(), 18);
  std::vector<int64_t> frames_after;
  while (auto batch = collector.next()) {
    EXPECT_EQ(batch->batch_size(), (Shape{2, 3}));
    frames_after.push_back(collector.frames());
  }
  EXPECT_EQ(frames_after, (Ints{6, 12, 18}));
  EXPECT_EQ(collector.iterations(), 3);
  EXPECT_FALSE(collector.next().has_value());
  EXPECT_EQ(collector.frames(), 18);
  EXPECT_EQ(collector.iterations(), 3);
}

TEST(CollectorTest, FramesPerBatchRoundsUpToAMultipleOfTheSubEnvs) {
  Collector collector(counting({3}), nullptr, options(10, 25));
  EXPECT_EQ(collector.frames_per_batch(), 12);
  EXPECT_EQ(collector.steps_per_batch(), 4);
  // 25 rounds up to a multiple of 12.
  EXPECT_EQ(collector.total_frames(), 36);
  int64_t batches = 0;
  for (const TensorDict& batch : collector) {
    EXPECT_EQ(batch.batch_size(), (Shape{3, 4}));
    ++batches;
  }
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(collector.frames(), 36);
}

TEST(CollectorTest, TotalFramesRoundsUpToAMultipleOfFramesPerBatch) {
  Collector collector(counting(), nullptr, options(4, 9));
  EXPECT_EQ(collector.total_frames(), 12);
  int64_t batches = 0;
  for (const TensorDict& batch : collector) {
    EXPECT_EQ(batch.batch_size(), (Shape{4}));
    ++batches;
  }
  EXPECT_EQ(batches, 3);
}

TEST(CollectorTest, EndlessCollectionRunsUntilTheLoopBreaks) {
  Collector collector(counting(), nullptr, options(5));
  EXPECT_EQ(collector.total_frames(), -1);
  int64_t batches = 0;
  for (const TensorDict& batch : collector) {
    EXPECT_EQ(batch.batch_size(), (Shape{5}));
    if (++batches == 7) break;
  }
  EXPECT_EQ(collector.frames(), 35);
  EXPECT_EQ(collector.iterations(), 7);
  EXPECT_TRUE(collector.next().has_value());
}

TEST(CollectorTest, IteratingAgainAfterBreakContinuesTheCollection) {
  Collector collector(counting(), nullptr, options(4, 20));
  int64_t first = 0;
  for (const TensorDict& batch : collector) {
    EXPECT_EQ(batch.batch_size(), (Shape{4}));
    if (++first == 2) break;
  }
  EXPECT_EQ(collector.frames(), 8);
  std::vector<float> starts;
  for (const TensorDict& batch : collector) starts.push_back(batch.get(kObs)[0].item<float>());
  // The counter keeps counting across loops: batches start at 8, 12, 16.
  EXPECT_EQ(starts, (Floats{8, 12, 16}));
  EXPECT_EQ(collector.frames(), 20);
  EXPECT_EQ(collector.iterations(), 5);
}

TEST(CollectorTest, EachBatchIsANewTensorDict) {
  Collector collector(make("CartPole-v1", {2}), nullptr, options(20));
  collector.set_seed(3);
  auto first = collector.next();
  ASSERT_TRUE(first.has_value());
  const TensorDict snapshot = first->clone();
  auto second = collector.next();
  ASSERT_TRUE(second.has_value());
  expect_same(*first, snapshot);
  for (const auto& key : first->keys(true, true)) {
    EXPECT_NE(first->get(key).data_ptr(), second->get(key).data_ptr()) << key;
  }
  EXPECT_FALSE(torch::equal(first->get(kObs), second->get(kObs)));
}

// ---- Trajectories ----------------------------------------------------------------------------

TEST(CollectorTest, EpisodesContinueAcrossBatches) {
  Collector collector(counting(), nullptr, options(4));
  auto first = collector.next();
  auto second = collector.next();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(floats(first->get(kObs)), (Floats{0, 1, 2, 3}));
  EXPECT_EQ(floats(second->get(kObs)), (Floats{4, 5, 6, 7}));
  EXPECT_EQ(ints(second->get(traj_ids_key())), (Ints{0, 0, 0, 0}));
}

TEST(CollectorTest, CartPoleTrajectoriesAreConsistentWithinAndAcrossBatches) {
  Collector collector(make("CartPole-v1", {4}), nullptr, options(4 * 16, 4 * 16 * 6));
  collector.set_seed(0);
  std::vector<TensorDict> batches;
  for (const TensorDict& batch : collector) batches.push_back(batch);
  ASSERT_EQ(batches.size(), 6U);
  const TensorDict all = cat_time(batches);
  const auto ids = all.get(traj_ids_key());
  const auto done = all.get(kNextDone).squeeze(-1);
  const auto root_done = all.get("done").squeeze(-1);
  const auto obs = all.get(kObs);
  const auto next_obs = all.get(kNextObs);
  const int64_t steps = ids.size(1);
  EXPECT_EQ(ints(ids.select(1, 0)), (Ints{0, 1, 2, 3}));
  std::map<int64_t, int64_t> owner;  // trajectory id -> sub-env
  int64_t continued = 0;
  int64_t restarted = 0;
  for (int64_t t = 0; t < steps; ++t) {
    const int64_t max_id_so_far = ids.slice(1, 0, t + 1).max().item<int64_t>();
    for (int64_t i = 0; i < 4; ++i) {
      const int64_t id = ids[i][t].item<int64_t>();
      auto it = owner.emplace(id, i).first;
      EXPECT_EQ(it->second, i) << "id " << id << " used by two sub-envs";
      if (t + 1 == steps) continue;
      const int64_t next_id = ids[i][t + 1].item<int64_t>();
      if (!done[i][t].item<bool>()) {
        EXPECT_EQ(next_id, id) << "sub-env " << i << " step " << t;
        EXPECT_TRUE(torch::equal(obs[i][t + 1], next_obs[i][t]))
            << "sub-env " << i << " step " << t;
        ++continued;
      } else {
        EXPECT_GT(next_id, max_id_so_far) << "sub-env " << i << " step " << t;
        EXPECT_FALSE(root_done[i][t + 1].item<bool>());
        EXPECT_FALSE(torch::equal(obs[i][t + 1], next_obs[i][t]));
        ++restarted;
      }
    }
  }
  EXPECT_GT(continued, 0);
  EXPECT_GT(restarted, 0);
  // Ids are handed out in order without gaps.
  const auto unique = std::get<0>(torch::_unique(ids.flatten(), /*sorted=*/true));
  EXPECT_TRUE(torch::equal(unique, torch::arange(unique.numel(), torch::kInt64)));
  // The batch boundary: step 0 of batch k+1 continues the last step of batch k.
  for (size_t k = 0; k + 1 < batches.size(); ++k) {
    const auto last_done = batches[k].get(kNextDone).select(1, 15).squeeze(-1);
    for (int64_t i = 0; i < 4; ++i) {
      if (last_done[i].item<bool>()) continue;
      EXPECT_TRUE(torch::equal(batches[k + 1].get(kObs)[i][0], batches[k].get(kNextObs)[i][15]));
      EXPECT_EQ(batches[k + 1].get(traj_ids_key())[i][0].item<int64_t>(),
                batches[k].get(traj_ids_key())[i][15].item<int64_t>());
    }
  }
}

TEST(CollectorTest, UnbatchedCartPoleTransitionsChainWithinABatch) {
  Collector collector(make("CartPole-v1"), nullptr, options(100));
  collector.set_seed(1);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  const auto obs = batch->get(kObs);
  const auto next_obs = batch->get(kNextObs);
  const auto done = batch->get(kNextDone);
  int64_t dones = 0;
  for (int64_t t = 0; t + 1 < 100; ++t) {
    if (done[t].item<bool>()) {
      ++dones;
      EXPECT_FALSE(torch::equal(obs[t + 1], next_obs[t])) << t;
    } else {
      EXPECT_TRUE(torch::equal(obs[t + 1], next_obs[t])) << t;
    }
  }
  EXPECT_GT(dones, 0);
  EXPECT_TRUE(torch::equal(batch->get(kNextReward), torch::ones({100, 1})));
}

TEST(CollectorTest, ResetAtEachIterStartsNewTrajectoriesEveryBatch) {
  Collector collector(counting({2}), nullptr, options(6).reset_at_each_iter(true));
  auto first = collector.next();
  auto second = collector.next();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(floats(first->get(kObs)), (Floats{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(floats(second->get(kObs)), (Floats{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(ints(first->get(traj_ids_key())), (Ints{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(ints(second->get(traj_ids_key())), (Ints{2, 2, 2, 3, 3, 3}));
}

// ---- Options ---------------------------------------------------------------------------------

TEST(CollectorTest, InitRandomFramesUseRandomActionsUntilReached) {
  ConstantActionPolicy policy;
  Collector collector(counting({4}), policy, options(16, 64).init_random_frames(20));
  collector.set_seed(0);
  std::vector<TensorDict> batches;
  for (const TensorDict& batch : collector) batches.push_back(batch);
  ASSERT_EQ(batches.size(), 4U);
  // Batches start at frames 0 and 16 (< 20): random; at 32 and 48: the policy.
  for (int k = 0; k < 2; ++k) {
    const auto action = batches[k].get(kAction);
    EXPECT_FALSE(torch::equal(action, torch::ones_like(action))) << k;
    EXPECT_TRUE(((action == 0) | (action == 1)).all().item<bool>()) << k;
  }
  for (int k = 2; k < 4; ++k) {
    const auto action = batches[k].get(kAction);
    EXPECT_TRUE(torch::equal(action, torch::ones_like(action))) << k;
  }
  EXPECT_EQ(*policy.calls, 8);
}

TEST(CollectorTest, MaxFramesPerTrajTruncatesAndResets) {
  Collector collector(counting({2}), nullptr, options(20).max_frames_per_traj(4));
  auto first = collector.next();
  auto second = collector.next();
  ASSERT_TRUE(first && second);
  const Floats obs_row{0, 1, 2, 3, 0, 1, 2, 3, 0, 1};
  const Ints cut_row{0, 0, 0, 1, 0, 0, 0, 1, 0, 0};
  auto twice = [](auto row) {
    auto out = row;
    out.insert(out.end(), row.begin(), row.end());
    return out;
  };
  EXPECT_EQ(floats(first->get(kObs)), twice(obs_row));
  EXPECT_EQ(ints(first->get(kNextTruncated)), twice(cut_row));
  EXPECT_EQ(ints(first->get(kNextDone)), twice(cut_row));
  EXPECT_EQ(ints(first->get(kNextTerminated)), Ints(20, 0));
  EXPECT_EQ(ints(first->get(traj_ids_key())),
            (Ints{0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 1, 1, 1, 1, 3, 3, 3, 3, 5, 5}));
  // The step count carries over the batch boundary.
  EXPECT_EQ(floats(second->get(kObs)), twice(Floats{2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(ints(second->get(kNextTruncated)), twice(Ints{0, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
}

TEST(CollectorTest, MaxFramesPerTrajBoundsCartPoleTrajectories) {
  Collector collector(make("CartPole-v1", {3}), nullptr, options(3 * 40).max_frames_per_traj(5));
  collector.set_seed(0);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  const auto split = split_trajectories(*batch);
  const auto lengths = split.get(mask_key()).sum(1);
  EXPECT_LE(lengths.max().item<int64_t>(), 5);
  EXPECT_EQ(lengths.sum().item<int64_t>(), 120);
  const auto truncated = batch->get(kNextTruncated).squeeze(-1);
  EXPECT_GT(truncated.sum().item<int64_t>(), 0);
}

TEST(CollectorTest, ResetWhenDoneFalseNeverResetsDoneSubEnvs) {
  auto env = std::make_shared<NoisyCounterEnv>(NoisyCounterOptions().episode_length(3));
  Collector collector(env, nullptr, options(8).reset_when_done(false));
  collector.set_seed(0);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(env->reset_calls, 1);
  EXPECT_EQ(ints(batch->get({"next", "stats", "count"})), (Ints{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(ints(batch->get(kNextDone)), (Ints{0, 0, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(ints(batch->get(traj_ids_key())), Ints(8, 0));
}

TEST(CollectorTest, ResetWhenDoneResetsEachDoneSubEnv) {
  auto env = std::make_shared<NoisyCounterEnv>(NoisyCounterOptions().episode_length(3));
  Collector collector(env, nullptr, options(8));
  collector.set_seed(0);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(env->reset_calls, 3);
  EXPECT_EQ(ints(batch->get({"next", "stats", "count"})), (Ints{1, 2, 3, 1, 2, 3, 1, 2}));
  EXPECT_EQ(ints(batch->get({"stats", "count"})), (Ints{0, 1, 2, 0, 1, 2, 0, 1}));
}

TEST(CollectorTest, ModeExplorationWritesTheDistributionModeDeterministically) {
  torch::manual_seed(0);
  auto actor = pendulum_actor();
  auto collect = [&actor] {
    Collector collector(make("Pendulum-v1"), actor,
                        options(50).exploration_type(InteractionType::kMode));
    collector.set_seed(4);
    return *collector.next();
  };
  const TensorDict first = collect();
  const TensorDict second = collect();
  EXPECT_TRUE(torch::equal(first.get(kAction), first.get("loc")));
  expect_same(first, second);
}

TEST(CollectorTest, RandomExplorationSamplesAroundTheMode) {
  torch::manual_seed(0);
  auto actor = pendulum_actor();
  Collector collector(make("Pendulum-v1"), actor, options(50));
  collector.set_seed(4);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  const auto diff = (batch->get(kAction) - batch->get("loc")).abs();
  EXPECT_GT(diff.min().item<float>(), 0.0F);
  EXPECT_LT(diff.max().item<float>(), 1.0F);
}

TEST(CollectorTest, SameSeedSameBatchesDifferentSeedDifferentBatches) {
  auto collect = [](uint64_t seed) {
    Collector collector(make("CartPole-v1", {3}), nullptr, options(30, 90));
    EXPECT_EQ(collector.set_seed(seed), seed + 1);
    std::vector<TensorDict> out;
    for (const TensorDict& batch : collector) out.push_back(batch);
    return out;
  };
  const auto a = collect(7);
  const auto b = collect(7);
  const auto c = collect(8);
  ASSERT_EQ(a.size(), 3U);
  ASSERT_EQ(b.size(), 3U);
  for (size_t k = 0; k < a.size(); ++k) expect_same(a[k], b[k]);
  EXPECT_FALSE(torch::equal(a[0].get(kObs), c[0].get(kObs)));
  EXPECT_FALSE(torch::equal(a[0].get(kAction), c[0].get(kAction)));
}

TEST(CollectorTest, SplitTrajsYieldsTrajectoriesWithMask) {
  Collector collector(two_counters(), nullptr, options(16).split_trajs(true));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  // Sub-env 0: ids 0, 2, 4, 5 (2 steps each); sub-env 1: ids 1, 3 (3 steps), 6 (2 steps).
  EXPECT_EQ(batch->batch_size(), (Shape{7, 3}));
  EXPECT_EQ(ints(batch->get(traj_ids_key())),
            (Ints{0, 0, 0, 2, 2, 0, 4, 4, 0, 5, 5, 0, 1, 1, 1, 3, 3, 3, 6, 6, 0}));
  EXPECT_EQ(ints(batch->get(mask_key())),
            (Ints{1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(floats(batch->get(kObs)),
            (Floats{0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 2, 0, 1, 2, 0, 1, 0}));
  EXPECT_EQ(collector.frames(), 16);
}

TEST(CollectorTest, PostprocRunsOnEveryBatchAfterSplitTrajs) {
  auto calls = std::make_shared<int64_t>(0);
  auto postproc = [calls](TensorDict td) {
    ++*calls;
    EXPECT_EQ(td.batch_dims(), 2);
    EXPECT_TRUE(td.contains(mask_key()));
    td.set("valid_steps", td.get(mask_key()).to(torch::kInt64));
    return td;
  };
  Collector collector(two_counters(), nullptr,
                      options(16, 32).split_trajs(true).postproc(postproc));
  for (const TensorDict& batch : collector) {
    ASSERT_TRUE(batch.contains("valid_steps"));
    EXPECT_EQ(batch.get("valid_steps").sum().item<int64_t>(), 16);
  }
  EXPECT_EQ(*calls, 2);
}

TEST(CollectorTest, PostprocCanReplaceTheBatch) {
  Collector collector(counting(), nullptr, options(4).postproc([](TensorDict td) {
    return td.reshape({2, 2});
  }));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->batch_size(), (Shape{2, 2}));
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{0, 1, 2, 3}));
}

TEST(CollectorTest, ExplicitNextChoosesActionsAndIgnoresTotalFrames) {
  ConstantActionPolicy policy;
  Collector collector(counting({4}), policy, options(16, 16));
  collector.set_seed(0);
  ASSERT_TRUE(collector.next().has_value());
  EXPECT_FALSE(collector.next().has_value());
  auto random = collector.next(true);
  ASSERT_TRUE(random.has_value());
  const auto action = random->get(kAction);
  EXPECT_FALSE(torch::equal(action, torch::ones_like(action)));
  auto with_policy = collector.next(false);
  ASSERT_TRUE(with_policy.has_value());
  EXPECT_TRUE(torch::equal(with_policy->get(kAction), torch::ones_like(action)));
  EXPECT_EQ(collector.frames(), 48);
  EXPECT_EQ(*policy.calls, 8);
}

TEST(CollectorTest, RunsTheSharedPolicyModuleWithItsCurrentWeights) {
  torch::nn::Linear linear(nullptr);
  auto actor = pendulum_actor(&linear);
  Collector collector(make("Pendulum-v1"), actor,
                      options(5).exploration_type(InteractionType::kMode));
  EXPECT_EQ(collector.policy().weights_module().get(), actor.ptr().get());
  {
    torch::NoGradGuard no_grad;
    linear->weight.zero_();
    linear->bias.fill_(0.25);
  }
  collector.update_policy_weights_();
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_TRUE(torch::equal(batch->get(kAction), torch::full({5, 1}, 0.25)));
  {
    torch::NoGradGuard no_grad;
    linear->bias.fill_(-0.5);
  }
  batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_TRUE(torch::equal(batch->get(kAction), torch::full({5, 1}, -0.5)));
}

TEST(CollectorTest, StoringAndPolicyDeviceOnTheEnvDeviceChangeNothing) {
  auto collect = [](CollectorOptions opts) {
    Collector collector(make("CartPole-v1", {2}), nullptr, opts);
    collector.set_seed(5);
    return *collector.next();
  };
  const TensorDict plain = collect(options(10));
  const TensorDict placed =
      collect(options(10).storing_device(torch::kCPU).policy_device(torch::kCPU));
  ASSERT_TRUE(placed.device().has_value());
  EXPECT_EQ(*placed.device(), torch::Device(torch::kCPU));
  expect_same(plain, placed);
  ConstantActionPolicy policy;
  Collector with_policy(counting({2}), policy, options(4).policy_device(torch::kCPU));
  auto batch = with_policy.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(ints(batch->get(kAction)), Ints(4, 1));
  EXPECT_EQ(*policy.calls, 2);
}

TEST(CollectorCUDATest, BatchesStoredOnTheGpuEqualTheCpuOnesAndLiveThere) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  // Three batches in a row: each is filled in pinned memory and copied across without blocking,
  // so a buffer reused before its copy finished would show here as a wrong later batch.
  auto collect = [](CollectorOptions opts) {
    Collector collector(make("CartPole-v1", {3}), nullptr, opts);
    collector.set_seed(11);
    std::vector<TensorDict> out;
    for (const TensorDict& batch : collector) out.push_back(batch);
    return out;
  };
  const auto on_cpu = collect(options(30, 90));
  const auto on_gpu = collect(options(30, 90).storing_device(torch::Device(torch::kCUDA, 0)));
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  for (size_t k = 0; k < on_gpu.size(); ++k) {
    ASSERT_TRUE(on_gpu[k].device().has_value());
    EXPECT_TRUE(on_gpu[k].device()->is_cuda());
    for (const auto& key : on_gpu[k].keys(true, true))
      EXPECT_TRUE(on_gpu[k].get(key).is_cuda()) << key;
    expect_same(on_gpu[k].to(torch::kCPU), on_cpu[k]);
  }
}

// ---- Errors ----------------------------------------------------------------------------------

TEST(CollectorTest, PolicyThatDoesNotWriteTheActionThrowsKeyErrorAndNextBatchResets) {
  auto calls = std::make_shared<int64_t>(0);
  auto policy = [calls](TensorDict td) {
    if (++*calls == 3) {
      td.set("not_the_action", torch::zeros({1}));
    } else {
      td.set(kAction, torch::zeros({1}, torch::kInt64));
    }
    return td;
  };
  Collector collector(counting(), policy, options(4));
  const std::string message = error_message<tensordict::KeyError>([&] { collector.next(); });
  EXPECT_THAT(message, HasSubstr("the policy did not write the action 'action'"));
  EXPECT_EQ(collector.frames(), 0);
  EXPECT_EQ(collector.iterations(), 0);
  // The two steps of the failed batch are dropped and the env starts afresh.
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{0, 1, 2, 3}));
  EXPECT_EQ(ints(batch->get(traj_ids_key())), (Ints{1, 1, 1, 1}));
  EXPECT_EQ(collector.frames(), 4);
}

TEST(CollectorTest, WrongActionShapeThrowsTheEnvsShapeErrorAndNextBatchWorks) {
  auto calls = std::make_shared<int64_t>(0);
  auto policy = [calls](TensorDict td) {
    const Shape bad{2};
    const Shape good{1};
    td.set(kAction, torch::zeros(++*calls == 2 ? bad : good, torch::kInt64));
    return td;
  };
  Collector collector(counting(), policy, options(4));
  const std::string message = error_message<tensordict::ShapeError>([&] { collector.next(); });
  EXPECT_THAT(message, HasSubstr("action 'action' has shape [2]"));
  EXPECT_THAT(message, HasSubstr("the action spec expects [1]"));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{0, 1, 2, 3}));
}

TEST(CollectorTest, EnvErrorsPropagateAndTheNextBatchStartsFromAReset) {
  auto env = std::make_shared<NoisyCounterEnv>(NoisyCounterOptions().fail_at_step(3));
  Collector collector(env, nullptr, options(4));
  const std::string message = error_message<tensordict::ValueError>([&] { collector.next(); });
  EXPECT_THAT(message, HasSubstr("step 3 fails on purpose"));
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(ints(batch->get({"stats", "count"})), (Ints{0, 1, 2, 3}));
  EXPECT_EQ(env->reset_calls, 2);
}

template <class F>
void expect_value_error(F&& build, const std::string& message) {
  EXPECT_THAT(error_message<tensordict::ValueError>(build), HasSubstr(message));
}

TEST(CollectorTest, ConstructorRejectsInvalidArguments) {
  auto env = counting();
  expect_value_error([] { Collector(std::shared_ptr<envs::EnvBase>(), nullptr, options(4)); },
                     "the env is null");
  expect_value_error([] { Collector(envs::EnvFactory(), nullptr, options(4)); },
                     "the env factory is empty");
  expect_value_error(
      [] {
        Collector(envs::EnvFactory([] { return std::shared_ptr<envs::EnvBase>(); }), nullptr,
                  options(4));
      },
      "the env the factory returned is null");
  expect_value_error([&env] { Collector(env, nullptr, CollectorOptions()); },
                     "frames_per_batch is 0");
  expect_value_error([&env] { Collector(env, nullptr, options(-3)); }, "frames_per_batch is -3");
  expect_value_error([&env] { Collector(env, nullptr, options(4, 0)); }, "total_frames is 0");
  expect_value_error([&env] { Collector(env, nullptr, options(4, -2)); }, "total_frames is -2");
  expect_value_error([&env] { Collector(env, nullptr, options(4).init_random_frames(-1)); },
                     "init_random_frames is -1");
  expect_value_error([&env] { Collector(env, nullptr, options(4).max_frames_per_traj(0)); },
                     "max_frames_per_traj is 0");
  expect_value_error([&env] { Collector(env, nullptr, options(4).max_frames_per_traj(-2)); },
                     "max_frames_per_traj is -2");
}

TEST(CollectorTest, BuildsItsEnvOnceFromAFactory) {
  auto built = std::make_shared<int64_t>(0);
  Collector collector(
      [built] {
        ++*built;
        return std::make_shared<CountingEnv>();
      },
      nullptr, options(3));
  EXPECT_EQ(*built, 1);
  ASSERT_NE(collector.env(), nullptr);
  EXPECT_EQ(collector.env()->name(), "CountingEnv");
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{0, 1, 2}));
  EXPECT_EQ(*built, 1);
}

// ---- Cancel, shutdown, state -----------------------------------------------------------------

TEST(CollectorTest, CancelBeforeNextReturnsNulloptThenCollectionResumes) {
  Collector collector(counting(), nullptr, options(4, 8));
  ASSERT_TRUE(collector.next().has_value());
  collector.cancel();
  EXPECT_FALSE(collector.next().has_value());
  EXPECT_EQ(collector.frames(), 4);
  EXPECT_EQ(collector.iterations(), 1);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{4, 5, 6, 7}));
  EXPECT_FALSE(collector.next().has_value());
}

TEST(CollectorTest, CancelDuringNextDropsThePartialBatchAndKeepsTheEnvState) {
  Collector* self = nullptr;
  auto calls = std::make_shared<int64_t>(0);
  ConstantActionPolicy constant;
  auto policy = [&self, calls, constant](TensorDict td) {
    if (++*calls == 3) self->cancel();
    return constant(std::move(td));
  };
  Collector collector(counting(), policy, options(6));
  self = &collector;
  EXPECT_FALSE(collector.next().has_value());
  EXPECT_EQ(collector.frames(), 0);
  EXPECT_EQ(collector.iterations(), 0);
  // Steps 0-2 ran (the one that cancelled completes); the next batch goes on from there.
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(ints(batch->get(traj_ids_key())), Ints(6, 0));
}

TEST(CollectorTest, CancelFromAnotherThreadStopsTheRunningNext) {
  // 5000 steps of 1 ms each: without the cancel, next() would run for 5 s.
  auto env = std::make_shared<NoisyCounterEnv>(
      NoisyCounterOptions().step_delay(std::chrono::microseconds(1000)));
  Collector collector(env, nullptr, options(5000));
  std::thread canceller([&collector] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    collector.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  const auto batch = collector.next();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  canceller.join();
  EXPECT_FALSE(batch.has_value());
  EXPECT_LT(env->step_calls, 5000);
  EXPECT_LT(elapsed, std::chrono::seconds(4));
  EXPECT_EQ(collector.frames(), 0);
  EXPECT_EQ(collector.iterations(), 0);
}

TEST(CollectorTest, CancelEndsARangeForLoop) {
  Collector collector(counting(), nullptr, options(2));
  int64_t batches = 0;
  for (const TensorDict& batch : collector) {
    EXPECT_EQ(batch.batch_size(), (Shape{2}));
    if (++batches == 3) collector.cancel();
  }
  EXPECT_EQ(batches, 3);
  EXPECT_TRUE(collector.next().has_value());
}

TEST(CollectorTest, ShutdownEndsCollection) {
  Collector collector(counting(), nullptr, options(4));
  ASSERT_TRUE(collector.next().has_value());
  collector.shutdown();
  EXPECT_FALSE(collector.next().has_value());
  EXPECT_FALSE(collector.next(true).has_value());
  int64_t batches = 0;
  for (const TensorDict& batch : collector) {
    (void)batch;
    ++batches;
  }
  EXPECT_EQ(batches, 0);
  EXPECT_NO_THROW(collector.shutdown());
  EXPECT_EQ(collector.frames(), 4);
}

TEST(CollectorTest, StateDictHoldsTheCounters) {
  Collector collector(counting({2}, 3), nullptr, options(8));
  ASSERT_TRUE(collector.next().has_value());
  ASSERT_TRUE(collector.next().has_value());
  const TensorDict state = collector.state_dict();
  EXPECT_EQ(state.batch_size(), Shape{});
  EXPECT_EQ(state.get("frames").item<int64_t>(), 16);
  EXPECT_EQ(state.get("iterations").item<int64_t>(), 2);
  // Ids 0 and 1 at the start; both sub-envs are done at steps 2 and 5 of the 8: ids 2 to 5.
  EXPECT_EQ(state.get("next_traj_id").item<int64_t>(), 6);
  EXPECT_EQ(state.get("frames").scalar_type(), torch::kInt64);
}

TEST(CollectorTest, LoadStateDictContinuesTheCountsInAFreshCollector) {
  Collector first(counting({2}), nullptr, options(4, 16));
  ASSERT_TRUE(first.next().has_value());
  ASSERT_TRUE(first.next().has_value());
  const TensorDict state = first.state_dict();

  Collector second(counting({2}), nullptr, options(4, 16));
  second.load_state_dict(state);
  EXPECT_EQ(second.frames(), 8);
  EXPECT_EQ(second.iterations(), 2);
  std::vector<TensorDict> batches;
  for (const TensorDict& batch : second) batches.push_back(batch);
  ASSERT_EQ(batches.size(), 2U);
  EXPECT_EQ(second.frames(), 16);
  EXPECT_EQ(second.iterations(), 4);
  // Trajectory ids go on from the saved counter, with freshly reset envs.
  EXPECT_EQ(ints(batches[0].get(traj_ids_key())), (Ints{2, 2, 3, 3}));
  EXPECT_EQ(floats(batches[0].get(kObs)), (Floats{0, 1, 0, 1}));
}

TEST(CollectorTest, LoadStateDictRestartsEpisodesInFlight) {
  Collector collector(counting(), nullptr, options(3));
  ASSERT_TRUE(collector.next().has_value());
  collector.load_state_dict(collector.state_dict());
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{0, 1, 2}));
  EXPECT_EQ(ints(batch->get(traj_ids_key())), (Ints{1, 1, 1}));
}

// An env that saves its state (every built-in one) lets a fresh collector continue the
// episodes in flight: the batches after the load are those the first collector yields next.
TEST(CollectorTest, LoadStateDictContinuesTheEpisodesInFlightBitForBit) {
  envs::register_builtin_envs();
  const auto pendulum = [] {
    return envs::make_env("Pendulum-v1",
                          envs::EnvOptions().batch_size({2}).seed(3).set("max_episode_steps", 7));
  };
  Collector first(pendulum(), nullptr, options(10));
  ASSERT_TRUE(first.next().has_value());
  const TensorDict state = first.state_dict();
  EXPECT_TRUE(state.contains("current"));
  EXPECT_EQ(ints(state.get("step_count")), (Ints{5, 5}));  // 5 steps into 7-step episodes
  const TensorDict expected_a = *first.next();
  const TensorDict expected_b = *first.next();

  Collector second(pendulum(), nullptr, options(10));
  second.load_state_dict(state);
  expect_same(*second.next(), expected_a);
  expect_same(*second.next(), expected_b);
  EXPECT_EQ(second.frames(), first.frames());
}

TEST(CollectorTest, LoadStateDictWithEpisodesOfAnotherBatchSizeThrowsAndKeepsItsOwn) {
  Collector collector(make("Pendulum-v1", {2}), nullptr, options(4));
  ASSERT_TRUE(collector.next().has_value());
  Collector other(make("Pendulum-v1", {3}), nullptr, options(6));
  ASSERT_TRUE(other.next().has_value());
  const TensorDict before = collector.state_dict();
  EXPECT_THAT(
      error_message<tensordict::ShapeError>([&] { collector.load_state_dict(other.state_dict()); }),
      HasSubstr("\"current\" has batch size [3], the env's is [2]"));
  expect_same(collector.state_dict(), before);
  EXPECT_EQ(collector.frames(), 4);
}

TEST(CollectorTest, LoadStateDictRejectsMissingOrNegativeCountersAndKeepsItsOwn) {
  Collector collector(counting(), nullptr, options(3));
  ASSERT_TRUE(collector.next().has_value());
  TensorDict missing = collector.state_dict();
  missing.set("frames", torch::tensor(int64_t{30}));
  missing.del_("iterations");
  const std::string message =
      error_message<tensordict::KeyError>([&] { collector.load_state_dict(missing); });
  EXPECT_THAT(message, HasSubstr("'iterations'"));
  EXPECT_EQ(collector.frames(), 3);
  TensorDict negative = collector.state_dict();
  negative.set("frames", torch::tensor(int64_t{-4}));
  const std::string message2 =
      error_message<tensordict::ValueError>([&] { collector.load_state_dict(negative); });
  EXPECT_THAT(message2, HasSubstr("'frames' is -4"));
  EXPECT_EQ(collector.frames(), 3);
  EXPECT_EQ(collector.iterations(), 1);
  // The episode in flight was not interrupted by the failed loads.
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(floats(batch->get(kObs)), (Floats{3, 4, 5}));
}

}  // namespace
}  // namespace tdrl::collectors
