// split_trajectories: from trajectory ids, from done flags, errors, and a collector batch.

#include "collector_test_fixtures.h"

namespace tdrl::collectors {
namespace {

// ---- split_trajectories ----------------------------------------------------------------------

// Batch [2, 5]: "obs" = 1..10, "feat" [2, 5, 3] = 1..30, "flag" true, ("next", "obs") =
// 10 * obs. Trajectories: (row 0: steps 0-1 | 2-4), (row 1: steps 0-2 | 3 | 4).
TensorDict two_rows() {
  const auto obs = torch::arange(1, 11, torch::kFloat32).view({2, 5});
  return TensorDict({{"obs", obs},
                     {"feat", torch::arange(1, 31, torch::kFloat32).view({2, 5, 3})},
                     {"flag", torch::ones({2, 5}, torch::kBool)},
                     {{"next", "obs"}, obs * 10}},
                    {2, 5});
}

const Floats kSplitObs{1, 2, 0, 3, 4, 5, 6, 7, 8, 9, 0, 0, 10, 0, 0};
const Ints kSplitMask{1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0};

void expect_two_rows_split(const TensorDict& out) {
  EXPECT_EQ(out.batch_size(), (Shape{5, 3}));
  EXPECT_EQ(floats(out.get("obs")), kSplitObs);
  EXPECT_EQ(ints(out.get(mask_key())), kSplitMask);
  EXPECT_EQ(out.get(mask_key()).scalar_type(), torch::kBool);
  EXPECT_EQ(ints(out.get("flag")), kSplitMask);
  EXPECT_EQ(out.get("flag").scalar_type(), torch::kBool);
  Floats next_obs;
  for (float v : kSplitObs) next_obs.push_back(v * 10);
  EXPECT_EQ(floats(out.get({"next", "obs"})), next_obs);
  // "feat" rows are the source steps' 3 values (steps numbered 0..9 over both rows).
  const std::vector<std::vector<int64_t>> steps{{0, 1}, {2, 3, 4}, {5, 6, 7}, {8}, {9}};
  Floats feat;
  for (const auto& traj : steps) {
    for (int64_t p = 0; p < 3; ++p) {
      for (int64_t c = 0; c < 3; ++c) {
        const bool real = p < static_cast<int64_t>(traj.size());
        feat.push_back(real ? static_cast<float>(traj[static_cast<size_t>(p)] * 3 + c + 1) : 0.0F);
      }
    }
  }
  EXPECT_EQ(shape(out.get("feat")), (Shape{5, 3, 3}));
  EXPECT_EQ(floats(out.get("feat")), feat);
}

TEST(SplitTrajectoriesTest, SplitsByTrajectoryIdsOrderedBySubEnvThenTime) {
  TensorDict batch = two_rows();
  batch.set(traj_ids_key(),
            torch::tensor({0, 0, 1, 1, 1, 2, 2, 2, 3, 4}, torch::kInt64).view({2, 5}));
  const TensorDict out = split_trajectories(batch);
  expect_two_rows_split(out);
  EXPECT_EQ(ints(out.get(traj_ids_key())), (Ints{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 0, 0, 4, 0, 0}));
  // The input is left alone.
  EXPECT_EQ(batch.batch_size(), (Shape{2, 5}));
  EXPECT_FALSE(batch.contains(mask_key()));
}

TEST(SplitTrajectoriesTest, SplitsByDoneFlagsWithATrailingDimWhenThereAreNoIds) {
  TensorDict batch = two_rows();
  auto done = torch::zeros({2, 5, 1}, torch::kBool);
  done[0][1] = true;
  done[1][2] = true;
  done[1][3] = true;
  done[1][4] = true;
  batch.set(kNextDone, done);
  const TensorDict out = split_trajectories(batch);
  expect_two_rows_split(out);
  EXPECT_EQ(shape(out.get(kNextDone)), (Shape{5, 3, 1}));
  EXPECT_EQ(ints(out.get(kNextDone)), (Ints{0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0}));
}

TEST(SplitTrajectoriesTest, SplitsByDoneFlagsWithoutATrailingDim) {
  TensorDict batch = two_rows();
  auto done = torch::zeros({2, 5}, torch::kBool);
  done[0][1] = true;
  done[1][2] = true;
  done[1][3] = true;
  batch.set(kNextDone, done);
  expect_two_rows_split(split_trajectories(batch));
}

TEST(SplitTrajectoriesTest, OneBatchDimIsOneSubEnv) {
  TensorDict batch({{"obs", torch::arange(1, 7, torch::kFloat32)},
                    {{"collector", "traj_ids"}, torch::tensor({5, 5, 7, 7, 7, 9}, torch::kInt64)}},
                   {6});
  const TensorDict out = split_trajectories(batch);
  EXPECT_EQ(out.batch_size(), (Shape{3, 3}));
  EXPECT_EQ(floats(out.get("obs")), (Floats{1, 2, 0, 3, 4, 5, 6, 0, 0}));
  EXPECT_EQ(ints(out.get(mask_key())), (Ints{1, 1, 0, 1, 1, 1, 1, 0, 0}));
}

TEST(SplitTrajectoriesTest, SeveralEnvDimsAreFlattenedInRowMajorOrder) {
  // [2, 2, 3]: four sub-envs; the second (index [0, 1]) switches trajectory at step 2.
  const auto ids =
      torch::tensor({0, 0, 0, 1, 1, 4, 2, 2, 2, 3, 3, 3}, torch::kInt64).view({2, 2, 3});
  TensorDict batch({{"obs", torch::arange(12, torch::kFloat32).view({2, 2, 3})},
                    {{"collector", "traj_ids"}, ids}},
                   {2, 2, 3});
  const TensorDict out = split_trajectories(batch);
  EXPECT_EQ(out.batch_size(), (Shape{5, 3}));
  EXPECT_EQ(floats(out.get("obs")), (Floats{0, 1, 2, 3, 4, 0, 5, 0, 0, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(ints(out.get(mask_key())), (Ints{1, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1}));
}

TEST(SplitTrajectoriesTest, HonoursCustomKeys) {
  TensorDict batch({{"obs", torch::arange(1, 5, torch::kFloat32)},
                    {"episode", torch::tensor({3, 8, 8, 8}, torch::kInt64)}},
                   {4});
  const TensorDict out = split_trajectories(batch, "episode", kNextDone, "valid");
  EXPECT_EQ(out.batch_size(), (Shape{2, 3}));
  EXPECT_EQ(ints(out.get("valid")), (Ints{1, 0, 0, 1, 1, 1}));
  EXPECT_EQ(floats(out.get("obs")), (Floats{1, 0, 0, 2, 3, 4}));
  EXPECT_FALSE(out.contains(mask_key()));
}

TEST(SplitTrajectoriesTest, RejectsABatchWithoutBatchDims) {
  TensorDict batch({{"obs", torch::zeros({3})}, {{"collector", "traj_ids"}, torch::tensor(0)}});
  const std::string message =
      error_message<tensordict::ValueError>([&] { split_trajectories(batch); });
  EXPECT_THAT(message, HasSubstr("no batch dims"));
}

TEST(SplitTrajectoriesTest, RejectsABatchWithNeitherIdsNorDone) {
  TensorDict batch({{"obs", torch::zeros({2, 4})}}, {2, 4});
  const std::string message =
      error_message<tensordict::KeyError>([&] { split_trajectories(batch); });
  EXPECT_THAT(message, HasSubstr("('collector', 'traj_ids')"));
  EXPECT_THAT(message, HasSubstr("('next', 'done')"));
}

TEST(SplitTrajectoriesTest, RejectsIdsOrDoneOfTheWrongShape) {
  TensorDict ids_batch({{"obs", torch::zeros({2, 4})},
                        {{"collector", "traj_ids"}, torch::zeros({2, 4, 1}, torch::kInt64)}},
                       {2, 4});
  const std::string message =
      error_message<tensordict::ShapeError>([&] { split_trajectories(ids_batch); });
  EXPECT_THAT(message, HasSubstr("[2, 4, 1]"));
  EXPECT_THAT(message, HasSubstr("expected the batch size [2, 4]"));
  TensorDict done_batch(
      {{"obs", torch::zeros({2, 4})}, {{"next", "done"}, torch::zeros({2, 4, 2}, torch::kBool)}},
      {2, 4});
  const std::string message2 =
      error_message<tensordict::ShapeError>([&] { split_trajectories(done_batch); });
  EXPECT_THAT(message2, HasSubstr("('next', 'done') is [2, 4, 2]"));
}

TEST(SplitTrajectoriesTest, CollectorBatchSplitsIntoConstantIdRows) {
  Collector collector(make("CartPole-v1", {2}), nullptr, options(80));
  collector.set_seed(2);
  auto batch = collector.next();
  ASSERT_TRUE(batch.has_value());
  const TensorDict out = split_trajectories(*batch);
  const auto mask = out.get(mask_key());
  const auto ids = out.get(traj_ids_key());
  EXPECT_EQ(mask.sum().item<int64_t>(), 80);
  const auto unique_ids = std::get<0>(torch::_unique(batch->get(traj_ids_key()).flatten()));
  EXPECT_EQ(out.batch_size()[0], unique_ids.numel());
  for (int64_t r = 0; r < out.batch_size()[0]; ++r) {
    const auto row = ids[r].masked_select(mask[r]);
    EXPECT_TRUE((row == row[0]).all().item<bool>()) << r;
    // Only a row's last real step may be done.
    const auto done = out.get(kNextDone)[r].squeeze(-1).masked_select(mask[r]);
    EXPECT_EQ(done.slice(0, 0, done.numel() - 1).sum().item<int64_t>(), 0) << r;
  }
}

}  // namespace
}  // namespace tdrl::collectors
