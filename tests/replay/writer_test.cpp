// RoundRobinWriter and TensorDictMaxValueWriter.

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "replay/replay_test_util.h"

namespace tdrl::replay {
namespace {

using namespace tdrl::replay::testing;

TEST(RoundRobinWriterTest, OverwritesTheOldestRowsFirst) {
  LazyTensorStorage storage(5);
  RoundRobinWriter writer;
  EXPECT_EQ(values_of(writer.extend(transitions(3, 0), storage).rows),
            (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(values_of(writer.extend(transitions(4, 3), storage).rows),
            (std::vector<int64_t>{3, 4, 0, 1}));
  EXPECT_EQ(writer.cursor(), 2);
  // Rows now hold values 5, 6, 2, 3, 4: 0 and 1 were overwritten by the newest.
  EXPECT_EQ(values_of(row_values(storage.get(torch::arange(5)))),
            (std::vector<int64_t>{5, 6, 2, 3, 4}));
  writer.extend(transitions(1, 7), storage);
  EXPECT_EQ(values_of(row_values(storage.get(torch::arange(5)))),
            (std::vector<int64_t>{5, 6, 7, 3, 4}));
}

TEST(RoundRobinWriterTest, AWriteLongerThanTheStorageKeepsItsLastRows) {
  LazyTensorStorage storage(4);
  RoundRobinWriter writer;
  writer.extend(transitions(1, 0), storage);
  auto result = writer.extend(transitions(6, 10), storage);
  EXPECT_EQ(values_of(result.rows), (std::vector<int64_t>{3, 0, 1, 2}));
  EXPECT_EQ(values_of(result.source), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(values_of(row_values(storage.get(torch::arange(4)))),
            (std::vector<int64_t>{13, 14, 15, 12}));
  EXPECT_EQ(writer.cursor(), 3);  // (1 + 6) % 4
}

TEST(RoundRobinWriterTest, AWriteTheStorageRejectsLeavesTheCursor) {
  LazyTensorStorage storage(4);
  RoundRobinWriter writer;
  writer.extend(transitions(2), storage);
  auto bad = transitions(1);
  bad.set("observation", torch::zeros({1, 9}));
  EXPECT_THROW(writer.extend(bad, storage), ShapeError);
  EXPECT_EQ(writer.cursor(), 2);
  EXPECT_EQ(storage.size(), 2);
}

TEST(RoundRobinWriterTest, Ndim2StoragesAreWrittenRowByRow) {
  LazyTensorStorage storage(9, StorageOptions().ndim(2));
  RoundRobinWriter writer;
  TensorDict data({{"x", torch::ones({2, 3})}}, {2, 3});
  EXPECT_EQ(values_of(writer.extend(data, storage).rows), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(values_of(writer.extend(data, storage).rows), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(storage.size(), 9);
}

TEST(RoundRobinWriterTest, PrintsItsCursor) {
  LazyTensorStorage storage(4);
  RoundRobinWriter writer;
  writer.extend(transitions(3), storage);
  EXPECT_EQ(printed(writer), "RoundRobinWriter(cursor=3)");
}

// ---- TensorDictMaxValueWriter -------------------------------------------------------------------

TEST(TensorDictMaxValueWriterTest, KeepsTheRowsOfHighestRank) {
  LazyTensorStorage storage(3);
  TensorDictMaxValueWriter writer(NestedKey{"next", "reward"});
  writer.extend(transitions(2, 5), storage);  // ranks 5, 6: free rows take them
  writer.extend(transitions(3, 1), storage);  // 3 takes the free row; 1, 2 are below 5
  EXPECT_EQ(sorted_values(row_values(storage.get(torch::arange(3)))),
            (std::vector<int64_t>{3, 5, 6}));
  writer.extend(transitions(2, 10), storage);  // 10, 11 replace 3 and 5
  EXPECT_EQ(sorted_values(row_values(storage.get(torch::arange(3)))),
            (std::vector<int64_t>{6, 10, 11}));
  writer.extend(transitions(1, 0), storage);  // below everything: not written
  EXPECT_EQ(sorted_values(row_values(storage.get(torch::arange(3)))),
            (std::vector<int64_t>{6, 10, 11}));
  EXPECT_EQ(sorted_values(writer.ranks()), (std::vector<int64_t>{6, 10, 11}));
}

TEST(TensorDictMaxValueWriterTest, FillsFreeRowsInOrderWithTheBestIncomingRowsFirst) {
  LazyTensorStorage storage(4);
  TensorDictMaxValueWriter writer(NestedKey{"next", "reward"});
  auto result = writer.extend(transitions(6, 0), storage);  // ranks 0..5: keep 5, 4, 3, 2
  EXPECT_EQ(values_of(result.rows), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(values_of(row_values(storage.get(torch::arange(4)))),
            (std::vector<int64_t>{5, 4, 3, 2}));
}

TEST(TensorDictMaxValueWriterTest, RanksSumOverTheDimsPastTheRow) {
  LazyTensorStorage storage(1);
  TensorDictMaxValueWriter writer("score");
  writer.extend(TensorDict({{"score", torch::tensor({{1.0, 1.0}})}}, {1}), storage);
  writer.extend(TensorDict({{"score", torch::tensor({{3.0, -2.0}})}}, {1}), storage);  // 1 < 2
  EXPECT_EQ(storage.get(torch::tensor({0})).get("score")[0][1].item<double>(), 1.0);
  writer.extend(TensorDict({{"score", torch::tensor({{3.0, 0.0}})}}, {1}), storage);  // 3 > 2
  EXPECT_EQ(storage.get(torch::tensor({0})).get("score")[0][0].item<double>(), 3.0);
}

TEST(TensorDictMaxValueWriterTest, RejectsDataWithoutTheRankKeyOrWithNaNRanks) {
  LazyTensorStorage storage(3);
  TensorDictMaxValueWriter writer(NestedKey{"next", "value"});
  EXPECT_THAT([&] { writer.extend(transitions(2), storage); },
              ThrowsMessage<KeyError>(AllOf(HasSubstr("no rank key ('next', 'value')"),
                                            HasSubstr("('next', 'reward')"))));
  TensorDictMaxValueWriter by_reward(NestedKey{"next", "reward"});
  auto bad = transitions(2);
  bad.set({"next", "reward"}, torch::full({2, 1}, std::nanf("")));
  EXPECT_THAT([&] { by_reward.extend(bad, storage); },
              ThrowsMessage<ValueError>(HasSubstr("holds NaN")));
  EXPECT_EQ(storage.size(), 0);
}

TEST(TensorDictMaxValueWriterTest, PrintsItsKey) {
  EXPECT_EQ(printed(TensorDictMaxValueWriter(NestedKey{"next", "reward"})),
            "TensorDictMaxValueWriter(rank_key=('next', 'reward'))");
}

TEST(WriterTest, ACheckpointOfAnotherKindIsRefusedNamingBothAndTheWriterKept) {
  LazyTensorStorage storage(5);
  RoundRobinWriter writer;
  writer.extend(transitions(3, 0), storage);
  const TensorDict other = TensorDictMaxValueWriter().state_dict();
  EXPECT_THAT([&] { writer.load_state_dict(other); },
              ThrowsMessage<ValueError>(::testing::AllOf(
                  HasSubstr("RoundRobinWriter::load_state_dict"),
                  HasSubstr("holds a TensorDictMaxValueWriter but this is a RoundRobinWriter"))));
  EXPECT_EQ(writer.cursor(), 3);
}

TEST(WriterTest, ACheckpointRoundTripsThroughTheSharedComponentInterface) {
  LazyTensorStorage storage(5);
  RoundRobinWriter saved;
  saved.extend(transitions(4, 0), storage);
  RoundRobinWriter loaded;
  ReplayComponent& component = loaded;
  component.load_state_dict(saved.state_dict());
  EXPECT_EQ(loaded.cursor(), 4);
  EXPECT_EQ(printed(component), "RoundRobinWriter(cursor=4)");
}

}  // namespace
}  // namespace tdrl::replay
