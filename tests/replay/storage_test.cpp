// The storages: one conformance suite run on every storage, then each storage's own
// behaviour (lazy allocation, structure checks, ndim 2, memory-mapped files, list entries).

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/lazy_stacked_tensordict.h>

#include "replay/replay_test_util.h"
#include "support/temp_dir.h"

namespace tdrl::replay {
namespace {

using namespace tdrl::replay::testing;
using tensordict::testing::TempDir;

// ---- One suite on every storage --------------------------------------------------------------

struct ListMaker {
  static std::shared_ptr<Storage> make(int64_t max_size, const TempDir&) {
    return std::make_shared<ListStorage>(max_size);
  }
};
struct TensorMaker {
  static std::shared_ptr<Storage> make(int64_t max_size, const TempDir&) {
    return std::make_shared<TensorStorage>(transitions(max_size).zero_());
  }
};
struct LazyMaker {
  static std::shared_ptr<Storage> make(int64_t max_size, const TempDir&) {
    return std::make_shared<LazyTensorStorage>(max_size);
  }
};
struct MemmapMaker {
  static std::shared_ptr<Storage> make(int64_t max_size, const TempDir& dir) {
    return std::make_shared<LazyMemmapStorage>(max_size, dir / "storage");
  }
};

template <class Maker>
class StorageConformanceTest : public ::testing::Test {
 protected:
  std::shared_ptr<Storage> make(int64_t max_size) { return Maker::make(max_size, dir_); }
  TempDir dir_;
};

using AllStorages = ::testing::Types<ListMaker, TensorMaker, LazyMaker, MemmapMaker>;
TYPED_TEST_SUITE(StorageConformanceTest, AllStorages);

TYPED_TEST(StorageConformanceTest, SizeCountsRowsUpToTheHighestWritten) {
  auto storage = this->make(8);
  EXPECT_EQ(storage->size(), 0);
  storage->set(torch::arange(3), transitions(3));
  EXPECT_EQ(storage->size(), 3);
  storage->set(torch::tensor({5}), transitions(1));
  EXPECT_EQ(storage->size(), 6);
  EXPECT_EQ(storage->last_row(), 5);
  EXPECT_EQ(storage->max_rows(), 8);
}

TYPED_TEST(StorageConformanceTest, GetReturnsTheRowsAtTheIndicesInOrder) {
  auto storage = this->make(8);
  storage->set(torch::arange(4), transitions(4, 10));
  auto rows = storage->get(torch::tensor({3, 0, 0, 2}));
  EXPECT_EQ(rows.batch_size(), (BatchSize{4}));
  EXPECT_EQ(values_of(row_values(rows)), (std::vector<int64_t>{13, 10, 10, 12}));
  EXPECT_TRUE(rows_consistent(rows));
}

TYPED_TEST(StorageConformanceTest, WritesAtNonConsecutiveRowsLandThere) {
  auto storage = this->make(8);
  storage->set(torch::arange(8), transitions(8, 0));
  storage->set(torch::tensor({6, 1}), transitions(2, 100));
  EXPECT_EQ(values_of(row_values(storage->get(torch::arange(8)))),
            (std::vector<int64_t>{0, 101, 2, 3, 4, 5, 100, 7}));
}

TYPED_TEST(StorageConformanceTest, GetRejectsAnIndexPastTheSize) {
  auto storage = this->make(8);
  storage->set(torch::arange(4), transitions(4));
  EXPECT_THAT(
      [&] {
        storage->get(torch::tensor({1, 4}));
      },
      ThrowsMessage<IndexError>(AllOf(HasSubstr("::get"), HasSubstr("index 4"),
                                      HasSubstr("position 1"), HasSubstr("size 4"))));
}

TYPED_TEST(StorageConformanceTest, SetRejectsARowPastMaxRowsAndWritesNothing) {
  auto storage = this->make(8);
  storage->set(torch::arange(2), transitions(2, 5));
  EXPECT_THAT(
      [&] {
        storage->set(torch::tensor({2, 8}), transitions(2, 50));
      },
      ThrowsMessage<IndexError>(AllOf(HasSubstr("row 8"), HasSubstr("max_rows 8"))));
  EXPECT_EQ(storage->size(), 2);
  EXPECT_EQ(values_of(row_values(storage->get(torch::arange(2)))), (std::vector<int64_t>{5, 6}));
}

TYPED_TEST(StorageConformanceTest, SetRejectsRowsOfAnotherLengthThanTheData) {
  auto storage = this->make(8);
  EXPECT_THAT([&] { storage->set(torch::arange(3), transitions(2)); },
              ThrowsMessage<ShapeError>(
                  AllOf(HasSubstr("rows has 3 entries"), HasSubstr("data has 2 rows"))));
  EXPECT_EQ(storage->size(), 0);
}

TYPED_TEST(StorageConformanceTest, SetRejectsARepeatedRow) {
  auto storage = this->make(8);
  EXPECT_THAT(
      [&] {
        storage->set(torch::tensor({3, 1, 3}), transitions(3));
      },
      ThrowsMessage<ValueError>(HasSubstr("row 3 appears more than once")));
  EXPECT_EQ(storage->size(), 0);
}

TYPED_TEST(StorageConformanceTest, SetRejectsFloatRows) {
  auto storage = this->make(8);
  EXPECT_THAT(
      [&] {
        storage->set(torch::tensor({0.0, 1.0}), transitions(2));
      },
      ThrowsMessage<TypeError>(HasSubstr("rows must hold integers")));
}

TYPED_TEST(StorageConformanceTest, ClearForgetsEveryElement) {
  auto storage = this->make(8);
  storage->set(torch::arange(4), transitions(4));
  const auto version = storage->version();
  storage->clear();
  EXPECT_EQ(storage->size(), 0);
  EXPECT_EQ(storage->last_row(), -1);
  EXPECT_NE(storage->version(), version);
  EXPECT_THROW(storage->get(torch::tensor({0})), IndexError);
}

TYPED_TEST(StorageConformanceTest, ColumnReadsAKeyOverTheStoredElements) {
  auto storage = this->make(8);
  storage->set(torch::arange(3), transitions(3, 7));
  auto reward = storage->column({"next", "reward"});
  EXPECT_EQ(reward.sizes().vec(), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(reward.reshape({-1}).equal(torch::tensor({7.0f, 8.0f, 9.0f})));
}

TYPED_TEST(StorageConformanceTest, ColumnOfAMissingKeyThrowsKeyErrorNamingIt) {
  auto storage = this->make(8);
  storage->set(torch::arange(3), transitions(3));
  EXPECT_THAT([&] { storage->column("missing"); }, ThrowsMessage<KeyError>(HasSubstr("'missing'")));
}

TYPED_TEST(StorageConformanceTest, StateDictSavedAndLoadedRestoresTheRows) {
  auto storage = this->make(8);
  storage->set(torch::arange(5), transitions(5, 20));
  storage->state_dict().save(this->dir_ / "state");
  auto restored = this->make(8);
  restored->load_state_dict(TensorDict::load_memmap(this->dir_ / "state"));
  EXPECT_EQ(restored->size(), 5);
  EXPECT_EQ(restored->last_row(), 4);
  auto rows = restored->get(torch::arange(5));
  EXPECT_EQ(values_of(row_values(rows)), (std::vector<int64_t>{20, 21, 22, 23, 24}));
  EXPECT_TRUE(rows_consistent(rows));
}

TYPED_TEST(StorageConformanceTest, LoadStateDictOfAnotherMaxSizeThrowsAndChangesNothing) {
  auto storage = this->make(8);
  storage->set(torch::arange(2), transitions(2, 3));
  auto other = this->make(16);
  other->set(torch::arange(4), transitions(4));
  EXPECT_THAT([&] { storage->load_state_dict(other->state_dict()); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("max_size 16"), HasSubstr("max_size 8"))));
  EXPECT_EQ(storage->size(), 2);
  EXPECT_EQ(values_of(row_values(storage->get(torch::arange(2)))), (std::vector<int64_t>{3, 4}));
}

// ---- Tensor storages --------------------------------------------------------------------------

template <class Maker>
class TensorStorageStructureTest : public StorageConformanceTest<Maker> {};
using TensorStorages = ::testing::Types<TensorMaker, LazyMaker, MemmapMaker>;
TYPED_TEST_SUITE(TensorStorageStructureTest, TensorStorages);

TYPED_TEST(TensorStorageStructureTest, SetRejectsAFeatureShapeThatDiffersAndKeepsTheData) {
  auto storage = this->make(8);
  storage->set(torch::arange(2), transitions(2, 1));
  auto bad = transitions(3);
  bad.set("observation", torch::zeros({3, 5}));
  EXPECT_THAT([&] { storage->set(torch::arange(2, 5), bad); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("'observation'"), HasSubstr("[3, 5]"),
                                              HasSubstr("[5] per element"),
                                              HasSubstr("holds [4] per element"))));
  EXPECT_EQ(storage->size(), 2);
  EXPECT_EQ(values_of(row_values(storage->get(torch::arange(2)))), (std::vector<int64_t>{1, 2}));
}

TYPED_TEST(TensorStorageStructureTest, SetRejectsDataLackingAStoredKey) {
  auto storage = this->make(8);
  storage->set(torch::arange(2), transitions(2));
  auto bad = transitions(2);
  bad.del_({"next", "reward"});
  EXPECT_THAT([&] { storage->set(torch::arange(2, 4), bad); },
              ThrowsMessage<KeyError>(
                  AllOf(HasSubstr("lacks key ('next', 'reward')"), HasSubstr("stored keys"))));
  EXPECT_EQ(storage->size(), 2);
}

TYPED_TEST(TensorStorageStructureTest, SetRejectsDataWithAKeyTheStorageLacks) {
  auto storage = this->make(8);
  storage->set(torch::arange(2), transitions(2));
  auto bad = transitions(2);
  bad.set("extra", torch::zeros({2}));
  EXPECT_THAT([&] { storage->set(torch::arange(2, 4), bad); },
              ThrowsMessage<KeyError>(
                  AllOf(HasSubstr("data has key 'extra'"), HasSubstr("does not hold"))));
  EXPECT_EQ(storage->size(), 2);
}

TYPED_TEST(TensorStorageStructureTest, SetRejectsAnotherDtype) {
  auto storage = this->make(8);
  storage->set(torch::arange(2), transitions(2));
  auto bad = transitions(2);
  bad.set("action", torch::zeros({2, kAct}, torch::kDouble));
  EXPECT_THAT([&] { storage->set(torch::arange(2, 4), bad); },
              ThrowsMessage<TypeError>(
                  AllOf(HasSubstr("'action'"), HasSubstr("Double"), HasSubstr("Float"))));
}

TYPED_TEST(TensorStorageStructureTest, SetRejectsAnotherElementBatch) {
  auto storage = this->make(8);
  storage->set(torch::arange(2), transitions(2));
  auto bad = TensorDict({{"observation", torch::zeros({2, 3, kObs})}}, {2, 3});
  EXPECT_THAT([&] { storage->set(torch::arange(2, 4), bad); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("batch_size [2, 3]"),
                                              HasSubstr("takes data of batch_size [n]"))));
}

TYPED_TEST(TensorStorageStructureTest, WritesAreCopiesAndSamplesAreCopies) {
  auto storage = this->make(8);
  auto data = transitions(2, 1);
  storage->set(torch::arange(2), data);
  data.get("observation").fill_(-1);
  auto rows = storage->get(torch::arange(2));
  rows.get("observation").fill_(-2);
  EXPECT_EQ(values_of(row_values(storage->get(torch::arange(2)))), (std::vector<int64_t>{1, 2}));
}

TYPED_TEST(TensorStorageStructureTest, DataRequiringGradIsStoredDetached) {
  auto storage = this->make(8);
  auto data = transitions(2);
  data.set("observation", torch::ones({2, kObs}, torch::requires_grad()));
  storage->set(torch::arange(2), data);
  EXPECT_FALSE(storage->get(torch::arange(2)).get("observation").requires_grad());
}

TEST(LazyTensorStorageTest, FirstWriteAllocatesMaxSizeRowsOfTheDataStructure) {
  LazyTensorStorage storage(10);
  EXPECT_FALSE(storage.is_initialized());
  storage.set(torch::arange(3), transitions(3));
  ASSERT_TRUE(storage.is_initialized());
  const auto& data = storage.data();
  EXPECT_EQ(data.batch_size(), (BatchSize{10}));
  EXPECT_EQ(data.get("observation").sizes().vec(), (std::vector<int64_t>{10, kObs}));
  EXPECT_EQ(data.get({"next", "done"}).scalar_type(), torch::kBool);
  EXPECT_EQ(data.get_tensordict("next").batch_size(), (BatchSize{10}));
  EXPECT_TRUE(data.get("observation").narrow(0, 3, 7).eq(0).all().item<bool>());
}

TEST(LazyTensorStorageTest, RejectsNonTensorDataWithTheListStorageHint) {
  LazyTensorStorage storage(10);
  auto data = transitions(2);
  data.set("env", "CartPole");
  EXPECT_THAT([&] { storage.set(torch::arange(2), data); },
              ThrowsMessage<TypeError>(AllOf(HasSubstr("'env'"), HasSubstr("ListStorage"))));
  EXPECT_FALSE(storage.is_initialized());
}

TEST(LazyTensorStorageTest, RejectsAMaxSizeBelowOneAndAnNdimOtherThanOneOrTwo) {
  EXPECT_THAT([] { LazyTensorStorage(0); },
              ThrowsMessage<ValueError>(HasSubstr("max_size must be at least 1, got 0")));
  EXPECT_THAT([] { LazyTensorStorage(10, StorageOptions().ndim(3)); },
              ThrowsMessage<ValueError>(HasSubstr("ndim must be 1")));
}

TEST(LazyTensorStorageTest, PrintsItsSizes) {
  LazyTensorStorage storage(10);
  storage.set(torch::arange(3), transitions(3));
  EXPECT_EQ(printed(storage), "LazyTensorStorage(max_size=10, size=3, ndim=1, device=cpu)");
}

TEST(TensorStorageTest, WritesIntoTheGivenTensorDict) {
  auto space = transitions(6).zero_();
  TensorStorage storage(space);
  EXPECT_EQ(storage.max_size(), 6);
  EXPECT_EQ(storage.size(), 0);
  storage.set(torch::tensor({4}), transitions(1, 9));
  EXPECT_EQ(space.get("action")[4][0].item<float>(), 9.0f);
}

TEST(TensorStorageTest, RejectsATensorDictWithoutBatchDims) {
  EXPECT_THAT(
      [] {
        TensorStorage(TensorDict({{"a", torch::zeros({3})}}));
      },
      ThrowsMessage<ValueError>(HasSubstr("batch_size []")));
}

// ---- ndim 2 ------------------------------------------------------------------------------------

TEST(Ndim2StorageTest, RowsHoldStepsAndElementsAreFlatIndices) {
  LazyTensorStorage storage(12, StorageOptions().ndim(2));
  EXPECT_EQ(storage.row_numel(), 0);
  // Two rows of 3 steps; step t of row r holds 10 * r + t.
  auto steps = (torch::arange(2).unsqueeze(1) * 10 + torch::arange(3)).to(torch::kFloat);
  TensorDict data({{"x", steps}}, {2, 3});
  storage.set(torch::arange(2), data);
  EXPECT_EQ(storage.row_numel(), 3);
  EXPECT_EQ(storage.max_rows(), 4);
  EXPECT_EQ(storage.size(), 6);
  EXPECT_EQ(storage.data().batch_size(), (BatchSize{4, 3}));
  auto got = storage.get(torch::tensor({4, 0, 2}));
  EXPECT_EQ(got.batch_size(), (BatchSize{3}));
  EXPECT_TRUE(got.get("x").equal(torch::tensor({11.0f, 0.0f, 2.0f})));
  EXPECT_TRUE(storage.column("x").equal(torch::tensor({0.0f, 1.0f, 2.0f, 10.0f, 11.0f, 12.0f})));
}

TEST(Ndim2StorageTest, RejectsRowsOfAnotherLength) {
  LazyTensorStorage storage(12, StorageOptions().ndim(2));
  storage.set(torch::arange(2), TensorDict({{"x", torch::zeros({2, 3})}}, {2, 3}));
  EXPECT_THAT(
      [&] {
        storage.set(torch::tensor({2}), TensorDict({{"x", torch::zeros({1, 4})}}, {1, 4}));
      },
      ThrowsMessage<ShapeError>(
          AllOf(HasSubstr("batch_size [1, 4]"), HasSubstr("takes data of batch_size [n, 3]"))));
}

TEST(Ndim2StorageTest, RejectsDataWithOneBatchDim) {
  LazyTensorStorage storage(12, StorageOptions().ndim(2));
  EXPECT_THAT([&] { storage.set(torch::arange(2), transitions(2)); },
              ThrowsMessage<ShapeError>(HasSubstr("needs at least 2 batch dims")));
}

// ---- LazyMemmapStorage --------------------------------------------------------------------------

TEST(LazyMemmapStorageTest, FirstWriteCreatesFilesThatHoldTheWrites) {
  TempDir dir;
  LazyMemmapStorage storage(100, dir / "rb");
  storage.set(torch::arange(3), transitions(3, 40));
  EXPECT_TRUE(storage.data().is_memmap());
  EXPECT_TRUE(std::filesystem::exists(dir / "rb/observation.memmap"));
  auto mapped = TensorDict::load_memmap(dir / "rb");
  EXPECT_EQ(mapped.batch_size(), (BatchSize{100}));
  EXPECT_EQ(values_of(row_values(mapped.index({Slice(0, 3)}))), (std::vector<int64_t>{40, 41, 42}));
}

TEST(LazyMemmapStorageTest, RejectsAnEmptyFolderNameAndAnotherDevice) {
  EXPECT_THAT([] { LazyMemmapStorage(10, ""); },
              ThrowsMessage<ValueError>(HasSubstr("scratch_dir is empty")));
  EXPECT_THAT([] { LazyMemmapStorage(10, "/tmp/x", StorageOptions().device(torch::kMeta)); },
              ThrowsMessage<ValueError>(HasSubstr("live on the CPU")));
}

// ---- ListStorage
// ---------------------------------------------------------------------------------

TEST(ListStorageTest, HoldsEntriesOfDifferentStructures) {
  ListStorage storage(4);
  storage.set(torch::tensor({0}), TensorDict({{"obs", torch::zeros({1, 3})}}, {1}));
  storage.set(torch::tensor({1}),
              TensorDict({{"obs", torch::ones({1, 5})}, {"extra", torch::ones({1})}}, {1}));
  EXPECT_EQ(storage.size(), 2);
  EXPECT_TRUE(storage.at(1).contains("extra"));
  EXPECT_EQ(storage.at(1).get("obs").sizes().vec(), (std::vector<int64_t>{5}));
  EXPECT_FALSE(storage.at(0).contains("extra"));
}

TEST(ListStorageTest, GetReturnsALazyStackAndKeysAddedToItNeverReachTheEntries) {
  ListStorage storage(4);
  storage.set(torch::arange(2), transitions(2, 5));
  auto rows = storage.get(torch::tensor({1, 0}));
  EXPECT_TRUE(rows.is_lazy_stack());
  EXPECT_EQ(values_of(row_values(rows)), (std::vector<int64_t>{6, 5}));
  rows.set("index", torch::tensor({1, 0}));
  EXPECT_FALSE(storage.at(0).contains("index"));
}

TEST(ListStorageTest, StoresCopies) {
  ListStorage storage(4);
  auto data = transitions(1, 3);
  storage.set(torch::tensor({0}), data);
  data.get("observation").fill_(-1);
  EXPECT_EQ(storage.at(0).get("observation")[0].item<float>(), 3.0f);
}

TEST(ListStorageTest, AtRejectsAnUnwrittenRow) {
  ListStorage storage(4);
  EXPECT_THAT(
      [&] { storage.at(0); },
      ThrowsMessage<IndexError>(HasSubstr("ListStorage::at: row 0 is out of range [0, 0)")));
}

TEST(ListStorageTest, PrintsItsSizes) {
  ListStorage storage(5);
  EXPECT_EQ(printed(storage), "ListStorage(max_size=5, size=0, ndim=1)");
}

}  // namespace
}  // namespace tdrl::replay
