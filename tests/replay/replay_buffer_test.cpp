// ReplayBuffer, TensorDictReplayBuffer and TensorDictPrioritizedReplayBuffer: writing,
// sampling, priorities, transforms, prefetching, and every bad input leaving the buffer as it
// was.

#include <cmath>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "replay/replay_test_util.h"

namespace tdrl::replay {
namespace {

using namespace tdrl::replay::testing;

std::shared_ptr<LazyTensorStorage> lazy(int64_t max_size) {
  return std::make_shared<LazyTensorStorage>(max_size);
}

// ---- Writing and sampling -----------------------------------------------------------------------

TEST(ReplayBufferTest, SampleReturnsStoredRowsAndTheirIndices) {
  torch::manual_seed(1);
  TensorDictReplayBuffer rb(lazy(100));
  rb.extend(transitions(10));  // row i holds value i
  auto batch = rb.sample(32);
  EXPECT_EQ(batch.batch_size(), (BatchSize{32}));
  EXPECT_TRUE(rows_consistent(batch));
  EXPECT_TRUE(batch.get("index").equal(row_values(batch)));
  EXPECT_FALSE(batch.contains("_weight"));
  EXPECT_EQ(rb.size(), 10);
}

TEST(ReplayBufferTest, PlainBufferSamplesCarryNoIndexKey) {
  ReplayBuffer rb(lazy(10), ReplayBufferOptions().batch_size(4));
  rb.extend(transitions(3));
  auto [batch, info] = rb.sample_with_info();
  EXPECT_FALSE(batch.contains("index"));
  EXPECT_TRUE(info.index.equal(row_values(batch)));
  EXPECT_EQ(rb.sample().batch_size(), (BatchSize{4}));
}

TEST(ReplayBufferTest, AddWritesOneElementAndReturnsItsRow) {
  ReplayBuffer rb(lazy(10));
  EXPECT_EQ(values_of(rb.add(transitions(1, 7).index({0}))), (std::vector<int64_t>{0}));
  EXPECT_EQ(values_of(rb.add(transitions(1, 8).index({0}))), (std::vector<int64_t>{1}));
  EXPECT_EQ(rb.size(), 2);
  EXPECT_EQ(sorted_values(row_values(rb.storage()->get(torch::arange(2)))),
            (std::vector<int64_t>{7, 8}));
}

TEST(ReplayBufferTest, ExtendReturnsTheRowsAndWrapsAroundWhenFull) {
  ReplayBuffer rb(lazy(5));
  EXPECT_EQ(values_of(rb.extend(transitions(4))), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(values_of(rb.extend(transitions(3))), (std::vector<int64_t>{4, 0, 1}));
  EXPECT_EQ(rb.size(), 5);
  EXPECT_EQ(rb.extend(TensorDict::empty({0})).numel(), 0);
}

TEST(ReplayBufferTest, SampleBeforeAnyInsertThrows) {
  TensorDictReplayBuffer rb(lazy(10));
  EXPECT_THAT(
      [&] { rb.sample(4); },
      ThrowsMessage<Error>(HasSubstr("TensorDictReplayBuffer::sample: the buffer is empty")));
}

TEST(ReplayBufferTest, SampleWithoutABatchSizeThrows) {
  ReplayBuffer rb(lazy(10));
  rb.extend(transitions(2));
  EXPECT_THAT([&] { rb.sample(); }, ThrowsMessage<ValueError>(HasSubstr("no batch size")));
  EXPECT_THAT([&] { rb.sample(0); },
              ThrowsMessage<ValueError>(HasSubstr("batch_size must be at least 1")));
}

TEST(ReplayBufferTest, ExtendWithAnotherStructureThrowsAndLeavesTheBufferIntact) {
  torch::manual_seed(2);
  TensorDictPrioritizedReplayBuffer rb(lazy(8), PrioritizedSamplerOptions(1.0, 1.0));
  rb.extend(transitions(6));
  rb.update_priority(torch::arange(6), torch::arange(1, 7).to(torch::kDouble));
  const auto priorities = rb.prioritized_sampler().priorities(8);
  const auto cursor = std::dynamic_pointer_cast<RoundRobinWriter>(rb.writer())->cursor();
  auto bad = transitions(4, 100);
  bad.set({"next", "observation"}, torch::zeros({4, kObs + 1}));
  EXPECT_THAT([&] { rb.extend(bad); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("('next', 'observation')"),
                                              HasSubstr("[4, 5]"), HasSubstr("[4] per element"))));
  auto missing = transitions(4, 100);
  missing.del_("action");
  EXPECT_THAT([&] { rb.extend(missing); },
              ThrowsMessage<KeyError>(HasSubstr("lacks key 'action'")));
  EXPECT_EQ(rb.size(), 6);
  EXPECT_EQ(std::dynamic_pointer_cast<RoundRobinWriter>(rb.writer())->cursor(), cursor);
  EXPECT_TRUE(rb.prioritized_sampler().priorities(8).equal(priorities));
  auto batch = rb.sample(64);
  EXPECT_TRUE(rows_consistent(batch));
  EXPECT_LT(row_values(batch).max().item<int64_t>(), 6);
}

TEST(ReplayBufferTest, ExtendWithoutBatchDimsSuggestsAdd) {
  ReplayBuffer rb(lazy(8));
  EXPECT_THAT(
      [&] { rb.extend(transitions(1).index({0})); },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("ReplayBuffer::extend"), HasSubstr("use add"))));
}

TEST(ReplayBufferTest, TransformsApplyToEverySampleInOrder) {
  ReplayBuffer rb(lazy(8), ReplayBufferOptions().transforms({[](TensorDict td) {
    td.set("scaled", td.get("action") * 2);
    return td;
  }}));
  rb.append_transform([](TensorDict td) {
    td.set("scaled", td.get("scaled") + 1);
    return td;
  });
  rb.extend(transitions(4, 1));
  auto batch = rb.sample(8);
  EXPECT_TRUE(batch.get("scaled").equal(batch.get("action") * 2 + 1));
}

TEST(ReplayBufferTest, EmptyForgetsTheContentsTheCursorAndTheSamplerState) {
  TensorDictPrioritizedReplayBuffer rb(lazy(8), PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  rb.extend(transitions(5));
  rb.update_priority(torch::tensor({1}), torch::tensor({9.0}, torch::kDouble));
  rb.empty();
  EXPECT_TRUE(rb.is_empty());
  EXPECT_THROW(rb.sample(2), Error);
  EXPECT_EQ(rb.prioritized_sampler().sum_tree().sum(), 0.0);
  EXPECT_EQ(values_of(rb.extend(transitions(2, 40))), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(rb.size(), 2);
}

TEST(ReplayBufferTest, ConstructorRejectsBadComponentsAndOptions) {
  EXPECT_THAT([] { ReplayBuffer rb(nullptr); },
              ThrowsMessage<ValueError>(HasSubstr("storage is null")));
  EXPECT_THAT([] { ReplayBuffer rb(lazy(8), ReplayBufferOptions().prefetch(2)); },
              ThrowsMessage<ValueError>(HasSubstr("a batch_size")));
  EXPECT_THAT(
      [] {
        ReplayBuffer rb(lazy(8),
                        std::make_shared<PrioritizedSampler>(4, PrioritizedSamplerOptions(1, 1)));
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("tracks 4 elements"), HasSubstr("storage holds 8"))));
}

TEST(ReplayBufferTest, PrintsItsComponents) {
  TensorDictReplayBuffer rb(lazy(8), nullptr, nullptr, ReplayBufferOptions().batch_size(2));
  rb.extend(transitions(3));
  std::ostringstream os;
  os << rb;
  EXPECT_EQ(os.str(),
            "TensorDictReplayBuffer(storage=LazyTensorStorage(max_size=8, size=3, ndim=1, "
            "device=cpu), sampler=RandomSampler(), writer=RoundRobinWriter(cursor=3), "
            "batch_size=2, transforms=0, prefetch=0)");
}

TEST(ReplayBufferTest, WorksWithAListStorageOfAnyEntries) {
  torch::manual_seed(3);
  TensorDictReplayBuffer rb(std::make_shared<ListStorage>(4));
  rb.add(TensorDict({{"obs", torch::zeros({3})}}));
  rb.add(TensorDict({{"obs", torch::ones({3})}}));
  auto batch = rb.sample(6);
  EXPECT_EQ(batch.batch_size(), (BatchSize{6}));
  EXPECT_TRUE(batch.get("obs").select(1, 0).equal(batch.get("index").to(torch::kFloat)));
}

TEST(ReplayBufferTest, Ndim2BufferAddsRowsOfStepsAndSamplesSteps) {
  torch::manual_seed(4);
  TensorDictReplayBuffer rb(std::make_shared<LazyTensorStorage>(12, StorageOptions().ndim(2)));
  auto rows = (torch::arange(2).unsqueeze(1) * 10 + torch::arange(4)).to(torch::kFloat);
  rb.extend(TensorDict({{"x", rows}}, {2, 4}));
  rb.add(TensorDict({{"x", torch::arange(20, 24).to(torch::kFloat)}}, {4}));
  EXPECT_EQ(rb.size(), 12);
  auto batch = rb.sample(16);
  const auto index = batch.get("index");
  const auto expected = (index.div(4, "floor") * 10 + index.remainder(4)).to(torch::kFloat);
  EXPECT_TRUE(batch.get("x").equal(expected));
}

TEST(ReplayBufferTest, SliceSamplerGivesSlicesOfTrajectories) {
  torch::manual_seed(5);
  TensorDictReplayBuffer rb(lazy(40),
                            std::make_shared<SliceSampler>(SliceSamplerOptions().slice_len(5)));
  auto data = transitions(40);
  auto done = torch::zeros({40, 1}, torch::kBool);
  for (int64_t end : {9, 19, 29, 39}) done[end][0] = true;
  data.set({"next", "done"}, done);
  rb.extend(data);
  auto slices = row_values(rb.sample(20)).reshape({4, 5});
  EXPECT_TRUE(slices.select(1, 4).sub(slices.select(1, 0)).eq(4).all().item<bool>());
  EXPECT_TRUE(slices.select(1, 0)
                  .div(10, "floor")
                  .eq(slices.select(1, 4).div(10, "floor"))
                  .all()
                  .item<bool>());
}

// The SliceSampler's flags land in the sample: is_init true at each slice's first step, or-ed
// with the stored is_init (a trajectory's own start inside a slice stays marked), and burn_in
// true on each slice's first steps; with is_init_key unset the stored is_init is left as it is.
TEST(ReplayBufferTest, SliceSamplesMarkEachSliceStartAndItsBurnIn) {
  torch::manual_seed(6);
  auto data = transitions(40);
  auto done = torch::zeros({40, 1}, torch::kBool);
  auto is_init = torch::zeros({40, 1}, torch::kBool);
  for (int64_t end : {19, 39}) done[end][0] = true;
  for (int64_t start : {0, 20}) is_init[start][0] = true;
  data.set({"next", "done"}, done);
  data.set("is_init", is_init);
  TensorDictReplayBuffer rb(
      lazy(40), std::make_shared<SliceSampler>(SliceSamplerOptions().slice_len(5).burn_in(2)));
  rb.extend(data);
  for (int i = 0; i < 20; ++i) {
    const auto batch = rb.sample(20).reshape({4, 5});
    const auto rows = row_values(batch);
    const auto flags = batch.get("is_init").squeeze(-1);
    EXPECT_EQ(batch.get("is_init").sizes(), (std::vector<int64_t>{4, 5, 1}));
    EXPECT_TRUE(flags.select(1, 0).all().item<bool>());
    // Later steps are marked exactly where a trajectory starts (rows 0 and 20).
    EXPECT_TRUE(flags.slice(1, 1).eq(rows.slice(1, 1).remainder(20).eq(0)).all().item<bool>());
    const auto burn_in = batch.get("burn_in");
    EXPECT_EQ(burn_in.dtype(), torch::kBool);
    EXPECT_TRUE(burn_in.slice(1, 0, 2).all().item<bool>());
    EXPECT_FALSE(burn_in.slice(1, 2).any().item<bool>());
  }
  TensorDictReplayBuffer stored(
      lazy(40),
      std::make_shared<SliceSampler>(SliceSamplerOptions().slice_len(5).is_init_key(std::nullopt)));
  stored.extend(data);
  const auto batch = stored.sample(20);
  EXPECT_TRUE(batch.get("is_init")
                  .squeeze(-1)
                  .eq(row_values(batch).remainder(20).eq(0))
                  .all()
                  .item<bool>());
  EXPECT_FALSE(batch.contains("burn_in"));
}

TEST(ReplayBufferTest, MaxValueWriterKeepsTheBestTransitions) {
  ReplayBuffer rb(lazy(3), nullptr,
                  std::make_shared<TensorDictMaxValueWriter>(NestedKey{"next", "reward"}));
  rb.extend(transitions(10));
  EXPECT_EQ(sorted_values(row_values(rb.storage()->get(torch::arange(3)))),
            (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(rb.extend(transitions(1, 2)).numel(), 0);
}

// ---- Priorities ---------------------------------------------------------------------------------

TEST(PrioritizedReplayBufferTest, SamplesCarryWeightsAndTdErrorUpdatesPriorities) {
  torch::manual_seed(6);
  TensorDictPrioritizedReplayBuffer rb(lazy(8), PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  rb.extend(transitions(4));
  auto batch = rb.sample(4);
  ASSERT_TRUE(batch.contains("_weight"));
  EXPECT_TRUE(batch.get("_weight").eq(1).all().item<bool>());  // equal priorities
  batch.set("td_error", (batch.get("index") + 1).to(torch::kFloat).unsqueeze(1));
  rb.update_tensordict_priority(batch);
  const auto p = rb.prioritized_sampler().priorities(4);
  for (int64_t i = 0; i < 4; ++i) {
    const auto idx = batch.get("index")[i].item<int64_t>();
    EXPECT_EQ(p[idx].item<double>(), static_cast<double>(idx + 1));
  }
}

TEST(PrioritizedReplayBufferTest, ExtendReadsInitialPrioritiesFromThePriorityKey) {
  TensorDictPrioritizedReplayBuffer rb(lazy(8), PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  auto data = transitions(3);
  data.set("td_error", torch::tensor({{0.5}, {2.0}, {3.0}}));
  rb.extend(data);
  EXPECT_TRUE(
      rb.prioritized_sampler().priorities(3).equal(torch::tensor({0.5, 2.0, 3.0}, torch::kDouble)));
}

TEST(PrioritizedReplayBufferTest, ExtendWithNegativePrioritiesThrowsAndWritesNothing) {
  TensorDictPrioritizedReplayBuffer rb(lazy(8), PrioritizedSamplerOptions(1.0, 1.0));
  auto data = transitions(3);
  data.set("td_error", torch::tensor({0.5, -2.0, 3.0}, torch::kDouble));
  EXPECT_THAT([&] { rb.extend(data); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("'td_error'"), HasSubstr("negative or non-finite"))));
  EXPECT_TRUE(rb.is_empty());
}

TEST(PrioritizedReplayBufferTest, UpdatePriorityRejectsIndicesPastTheSizeAndBadValues) {
  TensorDictPrioritizedReplayBuffer rb(lazy(8), PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  rb.extend(transitions(4));
  const auto before = rb.prioritized_sampler().priorities(8);
  EXPECT_THAT(
      [&] {
        rb.update_priority(torch::tensor({0, 5}), torch::tensor({1.0, 1.0}, torch::kDouble));
      },
      ThrowsMessage<IndexError>(AllOf(HasSubstr("index 5 (position 1)"), HasSubstr("(size 4)"))));
  EXPECT_THAT(
      [&] {
        rb.update_priority(torch::tensor({0, 1}),
                           torch::tensor({1.0, std::nan("")}, torch::kDouble));
      },
      ThrowsMessage<ValueError>(HasSubstr("priority nan at position 1 (index 1)")));
  EXPECT_THAT(
      [&] {
        rb.update_priority(torch::tensor({0, 1}), torch::tensor({1.0, 2.0, 3.0}, torch::kDouble));
      },
      ThrowsMessage<ShapeError>(HasSubstr("index has 2 entries")));
  EXPECT_TRUE(rb.prioritized_sampler().priorities(8).equal(before));
}

TEST(PrioritizedReplayBufferTest, UpdateTensordictPriorityNamesAMissingKey) {
  TensorDictPrioritizedReplayBuffer rb(lazy(8), PrioritizedSamplerOptions(1.0, 1.0));
  rb.extend(transitions(4));
  auto batch = rb.sample(2);
  EXPECT_THAT([&] { rb.update_tensordict_priority(batch); },
              ThrowsMessage<KeyError>(
                  AllOf(HasSubstr("no priority key 'td_error'"), HasSubstr("'index'"))));
  batch.del_("index");
  batch.set("td_error", torch::ones({2}));
  EXPECT_THAT([&] { rb.update_tensordict_priority(batch); },
              ThrowsMessage<KeyError>(HasSubstr("no index key 'index'")));
}

TEST(PrioritizedReplayBufferTest, SetKeysRenamesTheKeys) {
  torch::manual_seed(7);
  TensorDictPrioritizedReplayBuffer rb(lazy(8), PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  auto keys = rb.keys();
  keys.index = "idx";
  keys.weight = {"info", "w"};
  keys.priority = "loss_td";
  rb.set_keys(keys);
  rb.extend(transitions(4));
  auto batch = rb.sample(3);
  EXPECT_TRUE(batch.contains("idx"));
  EXPECT_TRUE(batch.contains({"info", "w"}));
  batch.set("loss_td", torch::full({3}, 4.0));
  rb.update_tensordict_priority(batch);
  EXPECT_EQ(rb.prioritized_sampler().max_priority(), 4.0);
}

TEST(PrioritizedReplayBufferTest, UpdatePriorityIsANoOpWithoutPriorities) {
  TensorDictReplayBuffer rb(lazy(8));
  rb.extend(transitions(4));
  auto batch = rb.sample(2);
  rb.update_tensordict_priority(batch);  // no td_error needed: nothing to update
  rb.update_priority(torch::tensor({0}), torch::tensor({1.0}, torch::kDouble));
  EXPECT_EQ(rb.size(), 4);
}

// ---- Prefetching --------------------------------------------------------------------------------

TEST(PrefetchTest, SamplesComeFromTheBackgroundQueue) {
  torch::manual_seed(8);
  TensorDictReplayBuffer rb(lazy(64), nullptr, nullptr,
                            ReplayBufferOptions().batch_size(8).prefetch(3));
  rb.extend(transitions(64));
  for (int i = 0; i < 20; ++i) {
    auto batch = rb.sample();
    EXPECT_EQ(batch.batch_size(), (BatchSize{8}));
    EXPECT_TRUE(batch.get("index").equal(row_values(batch)));
  }
  EXPECT_EQ(rb.sample(5).batch_size(), (BatchSize{5}));  // another size: sampled directly
}

TEST(PrefetchTest, AnEmptyBufferStillThrows) {
  ReplayBuffer rb(lazy(8), ReplayBufferOptions().batch_size(2).prefetch(2));
  EXPECT_THAT([&] { rb.sample(); }, ThrowsMessage<Error>(HasSubstr("the buffer is empty")));
}

TEST(PrefetchTest, EmptyDropsBatchesDrawnBeforeIt) {
  TensorDictReplayBuffer rb(lazy(16), nullptr, nullptr,
                            ReplayBufferOptions().batch_size(4).prefetch(2));
  rb.extend(transitions(16, 0));
  rb.sample();  // the worker now keeps batches of values < 16 ready
  rb.empty();
  rb.extend(transitions(16, 100));
  for (int i = 0; i < 5; ++i) EXPECT_GE(row_values(rb.sample()).min().item<int64_t>(), 100);
}

TEST(PrefetchTest, ErrorsOfTheWorkerReachTheCaller) {
  ReplayBuffer rb(lazy(16),
                  ReplayBufferOptions().batch_size(4).prefetch(1).transforms(
                      {[](TensorDict) -> TensorDict { throw ValueError("transform failed"); }}));
  rb.extend(transitions(4));
  EXPECT_THAT([&] { rb.sample(); }, ThrowsMessage<ValueError>(HasSubstr("transform failed")));
}

}  // namespace
}  // namespace tdrl::replay
