// RandomSampler, SamplerWithoutReplacement and SliceSampler.

#include <algorithm>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "replay/replay_test_util.h"

namespace tdrl::replay {
namespace {

using namespace tdrl::replay::testing;

std::shared_ptr<LazyTensorStorage> filled_storage(int64_t n, int64_t max_size = -1) {
  auto storage = std::make_shared<LazyTensorStorage>(max_size < 0 ? n : max_size);
  storage->set(torch::arange(n), transitions(n));
  return storage;
}

// ---- RandomSampler -----------------------------------------------------------------------------

TEST(RandomSamplerTest, CoversTheStoredElementsUniformly) {
  torch::manual_seed(7);
  auto storage = filled_storage(50, 100);  // only the 50 stored elements may be drawn
  RandomSampler sampler;
  auto counts = torch::zeros({100}, torch::kLong);
  for (int i = 0; i < 200; ++i) {
    auto info = sampler.sample(*storage, 500);
    EXPECT_FALSE(info.weight.defined());
    counts.index_add_(0, info.index, torch::ones({500}, torch::kLong));
  }
  EXPECT_EQ(counts.narrow(0, 50, 50).sum().item<int64_t>(), 0);
  // 100000 draws over 50 cells: chi-square with 49 degrees of freedom; 85.4 is its 0.999
  // quantile.
  EXPECT_LT(chi_square(counts.narrow(0, 0, 50), torch::full({50}, 2000.0)), 85.4);
}

TEST(RandomSamplerTest, RejectsAnEmptyStorageAndABatchSizeBelowOne) {
  LazyTensorStorage storage(10);
  RandomSampler sampler;
  EXPECT_THAT([&] { sampler.sample(storage, 4); },
              ThrowsMessage<Error>(HasSubstr("RandomSampler::sample: the storage is empty")));
  auto filled = filled_storage(3);
  EXPECT_THAT([&] { sampler.sample(*filled, 0); },
              ThrowsMessage<ValueError>(HasSubstr("batch_size must be at least 1, got 0")));
}

// ---- SamplerWithoutReplacement ------------------------------------------------------------------

TEST(SamplerWithoutReplacementTest, AnEpochVisitsEveryIndexOnce) {
  torch::manual_seed(3);
  auto storage = filled_storage(10);
  SamplerWithoutReplacement sampler;
  std::vector<int64_t> seen;
  std::vector<int64_t> sizes;
  while (true) {
    auto info = sampler.sample(*storage, 4);
    sizes.push_back(info.index.numel());
    auto v = values_of(info.index);
    seen.insert(seen.end(), v.begin(), v.end());
    if (sampler.ran_out()) break;
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // The next sample starts a new epoch.
  EXPECT_EQ(sampler.sample(*storage, 4).index.numel(), 4);
  EXPECT_FALSE(sampler.ran_out());
}

TEST(SamplerWithoutReplacementTest, SuccessiveEpochsAreShuffledDifferently) {
  torch::manual_seed(11);
  auto storage = filled_storage(32);
  SamplerWithoutReplacement sampler;
  auto first = values_of(sampler.sample(*storage, 32).index);
  auto second = values_of(sampler.sample(*storage, 32).index);
  EXPECT_NE(first, second);
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  EXPECT_EQ(first, second);
}

TEST(SamplerWithoutReplacementTest, WithoutShuffleVisitsInStorageOrder) {
  auto storage = filled_storage(5);
  SamplerWithoutReplacement sampler(SamplerWithoutReplacementOptions().shuffle(false));
  EXPECT_EQ(values_of(sampler.sample(*storage, 3).index), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(values_of(sampler.sample(*storage, 3).index), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(sampler.ran_out());
  EXPECT_EQ(values_of(sampler.sample(*storage, 3).index), (std::vector<int64_t>{0, 1, 2}));
}

TEST(SamplerWithoutReplacementTest, DropLastSkipsTheIncompleteBatch) {
  auto storage = filled_storage(5);
  SamplerWithoutReplacement sampler(
      SamplerWithoutReplacementOptions().shuffle(false).drop_last(true));
  EXPECT_EQ(values_of(sampler.sample(*storage, 2).index), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(values_of(sampler.sample(*storage, 2).index), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(sampler.ran_out());
  EXPECT_EQ(values_of(sampler.sample(*storage, 2).index), (std::vector<int64_t>{0, 1}));
}

TEST(SamplerWithoutReplacementTest, DropLastRejectsAStorageSmallerThanTheBatch) {
  auto storage = filled_storage(3);
  SamplerWithoutReplacement sampler(SamplerWithoutReplacementOptions().drop_last(true));
  EXPECT_THAT([&] { sampler.sample(*storage, 4); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("holds 3 elements"),
                                              HasSubstr("batch_size 4"), HasSubstr("drop_last"))));
}

TEST(SamplerWithoutReplacementTest, ElementsWrittenDuringAnEpochJoinTheNext) {
  auto storage = std::make_shared<LazyTensorStorage>(10);
  storage->set(torch::arange(4), transitions(4));
  SamplerWithoutReplacement sampler(SamplerWithoutReplacementOptions().shuffle(false));
  EXPECT_EQ(values_of(sampler.sample(*storage, 2).index), (std::vector<int64_t>{0, 1}));
  storage->set(torch::arange(4, 6), transitions(2));
  EXPECT_EQ(values_of(sampler.sample(*storage, 4).index), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of(sampler.sample(*storage, 6).index), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(SamplerWithoutReplacementTest, PrintsItsOptions) {
  EXPECT_EQ(printed(SamplerWithoutReplacement(SamplerWithoutReplacementOptions().drop_last(true))),
            "SamplerWithoutReplacement(drop_last=True, shuffle=True)");
}

// ---- SliceSampler -------------------------------------------------------------------------------

// Trajectories of the given lengths stored one after another, with ("next", "done") true at
// each last step and ("collector", "traj_ids") holding the trajectory number.
std::shared_ptr<LazyTensorStorage> trajectories(const std::vector<int64_t>& lengths,
                                                int64_t max_size = -1) {
  int64_t n = 0;
  for (auto l : lengths) n += l;
  auto data = transitions(n);
  auto done = torch::zeros({n, 1}, torch::kBool);
  auto ids = torch::zeros({n}, torch::kLong);
  int64_t at = 0;
  for (size_t t = 0; t < lengths.size(); ++t) {
    ids.narrow(0, at, lengths[t]).fill_(static_cast<int64_t>(t));
    at += lengths[t];
    done[at - 1][0] = true;
  }
  data.set({"next", "done"}, done);
  data.set({"collector", "traj_ids"}, ids);
  auto storage = std::make_shared<LazyTensorStorage>(max_size < 0 ? n : max_size);
  storage->set(torch::arange(n), data);
  return storage;
}

// The trajectory number of every element of `storage`.
std::vector<int64_t> traj_of(const Storage& storage) {
  return values_of(storage.column({"collector", "traj_ids"}));
}

void expect_slices_within_trajectories(const Storage& storage, const torch::Tensor& index,
                                       int64_t slice_len) {
  const auto traj = traj_of(storage);
  const auto idx = values_of(index);
  ASSERT_EQ(idx.size() % static_cast<size_t>(slice_len), 0u);
  for (size_t s = 0; s < idx.size(); s += static_cast<size_t>(slice_len)) {
    for (int64_t k = 1; k < slice_len; ++k) {
      ASSERT_EQ(idx[s + k], idx[s] + k) << "slice at " << s << " is not contiguous";
      ASSERT_EQ(traj[static_cast<size_t>(idx[s + k])], traj[static_cast<size_t>(idx[s])])
          << "slice at " << s << " crosses the end of trajectory " << traj[idx[s]];
    }
  }
}

TEST(SliceSamplerTest, SlicesNeverCrossTheEndOfATrajectory) {
  torch::manual_seed(5);
  auto storage = trajectories({5, 3, 9, 4, 6, 2, 8});
  SliceSampler sampler(SliceSamplerOptions().slice_len(4));
  std::set<int64_t> starts;
  for (int i = 0; i < 200; ++i) {
    auto info = sampler.sample(*storage, 32);
    ASSERT_EQ(info.index.numel(), 32);
    expect_slices_within_trajectories(*storage, info.index, 4);
    for (int64_t s = 0; s < 32; s += 4) starts.insert(info.index[s].item<int64_t>());
  }
  // Every valid start of every trajectory of at least 4 steps is drawn: 2 + 6 + 1 + 3 + 5.
  EXPECT_EQ(starts.size(), 17u);
}

TEST(SliceSamplerTest, TrajectoryIdsMarkTheEndsToo) {
  torch::manual_seed(6);
  auto storage = trajectories({3, 7, 5});
  SliceSampler sampler(
      SliceSamplerOptions().num_slices(4).traj_key(NestedKey{"collector", "traj_ids"}));
  for (int i = 0; i < 100; ++i) {
    auto info = sampler.sample(*storage, 12);  // 4 slices of 3
    expect_slices_within_trajectories(*storage, info.index, 3);
  }
}

TEST(SliceSamplerTest, TheNewestRowOfAFullCircularStorageEndsATrajectory) {
  torch::manual_seed(8);
  // One long trajectory in rows 0..9, then rows 0..3 overwritten by the start of another:
  // the element after row 3 is older data, never the continuation of row 3.
  auto storage = trajectories({10});
  auto newer = transitions(4);
  newer.set({"collector", "traj_ids"}, torch::full({4}, 1, torch::kLong));
  storage->set(torch::arange(4), newer);
  SliceSampler sampler(SliceSamplerOptions().slice_len(3));
  for (int i = 0; i < 100; ++i)
    expect_slices_within_trajectories(*storage, sampler.sample(*storage, 30).index, 3);
}

TEST(SliceSamplerTest, RowsOfAnNdim2StorageAreSeparateTrajectories) {
  torch::manual_seed(9);
  LazyTensorStorage storage(24, StorageOptions().ndim(2));
  // 4 rows of 6 steps, no done flag at all: only row ends bound the slices.
  TensorDict data({{"row", torch::arange(4).unsqueeze(1).expand({4, 6}).clone()},
                   {"next", {{"done", torch::zeros({4, 6, 1}, torch::kBool)}}}},
                  {4, 6});
  storage.set(torch::arange(4), data);
  SliceSampler sampler(SliceSamplerOptions().slice_len(4));
  for (int i = 0; i < 100; ++i) {
    auto rows = storage.get(sampler.sample(storage, 16).index).get("row").reshape({4, 4});
    EXPECT_TRUE(rows.eq(rows.select(1, 0).unsqueeze(1)).all().item<bool>());
  }
}

TEST(SliceSamplerTest, StrictLengthRejectsStoragesWithoutALongEnoughTrajectory) {
  auto storage = trajectories({2, 3});
  SliceSampler sampler(SliceSamplerOptions().slice_len(4));
  EXPECT_THAT([&] { sampler.sample(*storage, 8); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("no stored trajectory has slice_len=4"),
                                              HasSubstr("longest of 2 has 3"))));
}

TEST(SliceSamplerTest, WithoutStrictLengthShortTrajectoriesGiveShortSlices) {
  torch::manual_seed(10);
  auto storage = trajectories({2, 3});  // elements 0-1 and 2-4
  SliceSampler sampler(SliceSamplerOptions().slice_len(4).strict_length(false));
  auto index = values_of(sampler.sample(*storage, 16).index);
  // Each of the 4 slices is a whole trajectory: [0, 1] or [2, 3, 4].
  size_t at = 0;
  int slices = 0;
  while (at < index.size()) {
    if (index[at] == 0) {
      ASSERT_EQ(index[at + 1], 1);
      at += 2;
    } else {
      ASSERT_EQ(index[at], 2);
      ASSERT_EQ(index[at + 1], 3);
      ASSERT_EQ(index[at + 2], 4);
      at += 3;
    }
    ++slices;
  }
  EXPECT_EQ(slices, 4);
  EXPECT_LT(index.size(), 16u);
}

TEST(SliceSamplerTest, RejectsABatchSizeThatIsNotAMultiple) {
  auto storage = trajectories({8});
  SliceSampler by_len(SliceSamplerOptions().slice_len(3));
  EXPECT_THAT(
      [&] { by_len.sample(*storage, 8); },
      ThrowsMessage<ValueError>(HasSubstr("batch_size 8 is not a multiple of slice_len 3")));
  SliceSampler by_num(SliceSamplerOptions().num_slices(3));
  EXPECT_THAT([&] { by_num.sample(*storage, 8); },
              ThrowsMessage<ValueError>(HasSubstr("not a multiple of num_slices 3")));
}

// The flags come with the indices: one is_init per slice start, burn_in on the first steps of
// every slice, the short slices of strict_length(false) included; a slice no longer than the
// burn-in is refused.
TEST(SliceSamplerTest, FlagsMarkEachSliceStartAndItsBurnIn) {
  torch::manual_seed(11);
  auto storage = trajectories({2, 6});
  SliceSampler sampler(SliceSamplerOptions().slice_len(4).burn_in(1).strict_length(false));
  for (int i = 0; i < 20; ++i) {
    const auto info = sampler.sample(*storage, 12);
    ASSERT_EQ(info.flags.size(), 2u);
    EXPECT_EQ(info.flags[0].first, NestedKey("is_init"));
    EXPECT_EQ(info.flags[1].first, NestedKey("burn_in"));
    const auto index = values_of(info.index);
    const auto first = info.flags[0].second, warm = info.flags[1].second;
    ASSERT_EQ(first.numel(), static_cast<int64_t>(index.size()));
    // The slices are the whole short trajectory [0, 1] or 4 steps of the other.
    for (size_t k = 0; k < index.size();) {
      const size_t length = index[k] == 0 ? 2 : 4;
      for (size_t j = 0; j < length; ++j) {
        EXPECT_EQ(first[k + j].item<bool>(), j == 0) << k + j;
        EXPECT_EQ(warm[k + j].item<bool>(), j == 0) << k + j;
      }
      k += length;
    }
  }
  SliceSampler too_short(SliceSamplerOptions().slice_len(4).burn_in(2).strict_length(false));
  EXPECT_THAT(
      [&] {
        for (int i = 0; i < 50; ++i) too_short.sample(*storage, 12);
      },
      ThrowsMessage<ValueError>(HasSubstr("is not longer than burn_in 2")));
  EXPECT_THAT([] { SliceSampler(SliceSamplerOptions().slice_len(4).burn_in(4)); },
              ThrowsMessage<ValueError>(HasSubstr("burn_in must be in [0, slice_len), got 4")));
  EXPECT_THAT(SliceSampler(SliceSamplerOptions().slice_len(4).burn_in(1)).to_string(),
              HasSubstr("is_init_key='is_init', burn_in=1"));
}

TEST(SliceSamplerTest, RejectsInconsistentOptions) {
  EXPECT_THAT([] { SliceSampler sampler{SliceSamplerOptions()}; },
              ThrowsMessage<ValueError>(HasSubstr("exactly one of slice_len and num_slices")));
  EXPECT_THAT([] { SliceSampler(SliceSamplerOptions().slice_len(2).num_slices(2)); },
              ThrowsMessage<ValueError>(HasSubstr("got both")));
  EXPECT_THAT([] { SliceSampler(SliceSamplerOptions().slice_len(0)); },
              ThrowsMessage<ValueError>(HasSubstr("slice_len must be at least 1")));
  EXPECT_THAT(
      [] {
        SliceSampler(
            SliceSamplerOptions().slice_len(2).end_key(NestedKey("d")).traj_key(NestedKey("t")));
      },
      ThrowsMessage<ValueError>(HasSubstr("not both")));
}

TEST(SliceSamplerTest, AStorageWithoutTheEndKeyThrowsKeyError) {
  auto storage = filled_storage(6);
  SliceSampler sampler(SliceSamplerOptions().slice_len(2).end_key(NestedKey("terminal")));
  EXPECT_THAT([&] { sampler.sample(*storage, 4); },
              ThrowsMessage<KeyError>(HasSubstr("'terminal'")));
}

TEST(SliceSamplerTest, PrintsItsOptions) {
  EXPECT_EQ(printed(SliceSampler(SliceSamplerOptions().slice_len(8))),
            "SliceSampler(slice_len=8, end_key=('next', 'done'), strict_length=True, "
            "is_init_key='is_init')");
}

}  // namespace
}  // namespace tdrl::replay
