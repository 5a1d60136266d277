// ReplayBuffer::dumps / loads: storage contents, sampler state and writer cursor come back, so
// a resumed buffer samples from the same distribution (the same samples, for the same seed).

#include <chrono>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "replay/replay_test_util.h"
#include "support/kill_loop.h"
#include "support/temp_dir.h"

namespace tdrl::replay {
namespace {

using namespace tdrl::replay::testing;
using tensordict::testing::TempDir;
namespace fs = std::filesystem;

std::unique_ptr<TensorDictPrioritizedReplayBuffer> prioritized(std::shared_ptr<Storage> storage) {
  return std::make_unique<TensorDictPrioritizedReplayBuffer>(
      std::move(storage), PrioritizedSamplerOptions(0.8, 0.6).eps(1e-3));
}

void expect_same_samples(ReplayBuffer& a, ReplayBuffer& b, int64_t batch_size) {
  torch::manual_seed(99);
  auto [x, x_info] = a.sample_with_info(batch_size);
  torch::manual_seed(99);
  auto [y, y_info] = b.sample_with_info(batch_size);
  EXPECT_TRUE(x_info.index.equal(y_info.index));
  EXPECT_TRUE(x.get("observation").equal(y.get("observation")));
  EXPECT_TRUE(x.get({"next", "reward"}).equal(y.get({"next", "reward"})));
  if (x_info.weight.defined()) {
    EXPECT_TRUE(x_info.weight.equal(y_info.weight));
  }
}

TEST(CheckpointTest, RoundTripRestoresDataPrioritiesAndCursor) {
  TempDir dir;
  auto rb = prioritized(std::make_shared<LazyTensorStorage>(16));
  rb->extend(transitions(20));  // wraps: cursor 4
  rb->update_priority(torch::arange(16), torch::arange(16).to(torch::kDouble).pow(2));
  rb->dumps(dir / "ckpt");

  auto resumed = prioritized(std::make_shared<LazyTensorStorage>(16));
  resumed->loads(dir / "ckpt");
  EXPECT_EQ(resumed->size(), 16);
  EXPECT_TRUE(resumed->prioritized_sampler().priorities(16).equal(
      rb->prioritized_sampler().priorities(16)));
  EXPECT_EQ(resumed->prioritized_sampler().max_priority(),
            rb->prioritized_sampler().max_priority());
  expect_same_samples(*rb, *resumed, 64);
  // The cursor came back: the next write lands where the original's would.
  EXPECT_EQ(values_of(resumed->extend(transitions(2, 50))), (std::vector<int64_t>{4, 5}));
}

TEST(CheckpointTest, MemmapStorageCheckpointsWithoutCopyingItsFiles) {
  TempDir dir;
  auto rb = prioritized(std::make_shared<LazyMemmapStorage>(32, dir / "data"));
  rb->extend(transitions(10, 3));
  rb->update_priority(torch::arange(10), torch::rand({10}, torch::kDouble));
  rb->dumps(dir / "ckpt");
  for (const auto& entry : fs::recursive_directory_iterator(dir / "ckpt/storage"))
    EXPECT_NE(entry.path().extension(), ".memmap") << entry.path();

  // A buffer built on another folder adopts the one the checkpoint names.
  auto storage = std::make_shared<LazyMemmapStorage>(32, dir / "elsewhere");
  auto resumed = prioritized(storage);
  resumed->loads(dir / "ckpt");
  EXPECT_EQ(storage->scratch_dir(), dir / "data");
  EXPECT_TRUE(storage->data().is_memmap());
  expect_same_samples(*rb, *resumed, 32);
}

TEST(CheckpointTest, ListStorageEntriesComeBack) {
  TempDir dir;
  TensorDictReplayBuffer rb(std::make_shared<ListStorage>(8));
  rb.add(TensorDict({{"obs", torch::zeros({3})}}));
  rb.add(TensorDict({{"obs", torch::ones({2})}, {"tag", "second"}}));
  rb.dumps(dir / "ckpt");
  auto storage = std::make_shared<ListStorage>(8);
  TensorDictReplayBuffer resumed(storage);
  resumed.loads(dir / "ckpt");
  EXPECT_EQ(resumed.size(), 2);
  EXPECT_TRUE(storage->at(1).get("obs").equal(torch::ones({2})));
  EXPECT_EQ(storage->at(1).get_non_tensor<std::string>("tag"), "second");
}

TEST(CheckpointTest, AnEpochWithoutReplacementResumesWhereItStopped) {
  TempDir dir;
  auto make = [] {
    return std::make_unique<ReplayBuffer>(std::make_shared<LazyTensorStorage>(6),
                                          std::make_shared<SamplerWithoutReplacement>(
                                              SamplerWithoutReplacementOptions().shuffle(false)));
  };
  auto rb = make();
  rb->extend(transitions(6));
  rb->sample(2);
  rb->dumps(dir / "ckpt");
  auto resumed = make();
  resumed->loads(dir / "ckpt");
  EXPECT_EQ(values_of(resumed->sample_with_info(4).second.index),
            (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_TRUE(resumed->sampler()->ran_out());
}

TEST(CheckpointTest, MaxValueWriterKeepsItsRanks) {
  TempDir dir;
  auto make = [] {
    return std::make_unique<ReplayBuffer>(
        std::make_shared<LazyTensorStorage>(3), nullptr,
        std::make_shared<TensorDictMaxValueWriter>(NestedKey{"next", "reward"}));
  };
  auto rb = make();
  rb->extend(transitions(3, 10));
  rb->dumps(dir / "ckpt");
  auto resumed = make();
  resumed->loads(dir / "ckpt");
  EXPECT_EQ(resumed->extend(transitions(1, 5)).numel(), 0);  // below every stored rank
  EXPECT_EQ(resumed->extend(transitions(1, 20)).numel(), 1);
}

TEST(CheckpointTest, LoadingOtherComponentsThrowsAndChangesNothing) {
  TempDir dir;
  TensorDictReplayBuffer uniform(std::make_shared<LazyTensorStorage>(16));
  uniform.extend(transitions(8));
  uniform.dumps(dir / "ckpt");
  auto rb = prioritized(std::make_shared<LazyTensorStorage>(16));
  rb->extend(transitions(3, 40));
  EXPECT_THAT([&] { rb->loads(dir / "ckpt"); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("holds a RandomSampler"),
                                              HasSubstr("this is a PrioritizedSampler"))));
  EXPECT_EQ(rb->size(), 3);
  EXPECT_EQ(sorted_values(row_values(rb->storage()->get(torch::arange(3)))),
            (std::vector<int64_t>{40, 41, 42}));

  auto small = prioritized(std::make_shared<LazyTensorStorage>(8));
  EXPECT_THAT([&] { small->loads(dir / "ckpt"); },
              ThrowsMessage<ValueError>(HasSubstr("max_size 16")));
}

TEST(CheckpointTest, LoadingAMissingFolderNamesThePath) {
  TempDir dir;
  TensorDictReplayBuffer rb(std::make_shared<LazyTensorStorage>(4));
  EXPECT_THAT([&] { rb.loads(dir / "nothing"); },
              ThrowsMessage<Error>(AllOf(HasSubstr("TensorDictReplayBuffer::loads"),
                                         HasSubstr(dir / "nothing/storage"))));
}

// The layout of releases up to 0.2: one folder per part, no meta.json of the checkpoint's own.
void dump_in_part_layout(ReplayBuffer& rb, const std::string& dir) {
  rb.storage()->state_dict().save(dir + "/storage");
  rb.sampler()->state_dict().save(dir + "/sampler");
  rb.writer()->state_dict().save(dir + "/writer");
}

TEST(CheckpointTest, TheLayoutOfRelease02IsReadAndReplacedByTheNextDump) {
  TempDir dir;
  const std::string path = dir / "ckpt";
  TensorDictReplayBuffer old(std::make_shared<LazyTensorStorage>(16));
  old.extend(transitions(5, 20));
  dump_in_part_layout(old, path);
  TensorDictReplayBuffer resumed(std::make_shared<LazyTensorStorage>(16));
  resumed.loads(path);
  EXPECT_EQ(sorted_values(row_values(resumed.storage()->get(torch::arange(5)))),
            (std::vector<int64_t>{20, 21, 22, 23, 24}));
  EXPECT_EQ(values_of(resumed.extend(transitions(1, 90))), (std::vector<int64_t>{5}));
  // A dump over it replaces it (it is tdrl's own, not a folder of other files).
  resumed.dumps(path);
  EXPECT_TRUE(fs::exists(fs::path(path) / "meta.json"));
  TensorDictReplayBuffer again(std::make_shared<LazyTensorStorage>(16));
  again.loads(path);
  EXPECT_EQ(again.size(), 6);
}

TEST(CheckpointTest, AMemmapStorageCheckpointOfRelease02WithoutStorageIdStillLoads) {
  // Release 0.2 recorded the folder but no storage_id; such checkpoints are trusted until 0.3.
  TempDir dir;
  const std::string path = dir / "ckpt";
  TensorDictReplayBuffer old(std::make_shared<LazyMemmapStorage>(16, dir / "data"));
  old.extend(transitions(5, 20));
  TensorDict storage_state = old.storage()->state_dict();
  ASSERT_TRUE(storage_state.contains("storage_id"));
  storage_state.exclude({"storage_id"}).save(path + "/storage");
  old.sampler()->state_dict().save(path + "/sampler");
  old.writer()->state_dict().save(path + "/writer");
  auto storage = std::make_shared<LazyMemmapStorage>(16, dir / "elsewhere");
  TensorDictReplayBuffer resumed(storage);
  resumed.loads(path);
  EXPECT_EQ(storage->scratch_dir(), dir / "data");
  EXPECT_EQ(sorted_values(row_values(resumed.storage()->get(torch::arange(5)))),
            (std::vector<int64_t>{20, 21, 22, 23, 24}));
}

TEST(CheckpointTest, AnEmptyBufferRoundTrips) {
  TempDir dir;
  TensorDictReplayBuffer rb(std::make_shared<LazyTensorStorage>(4));
  rb.dumps(dir / "ckpt");
  TensorDictReplayBuffer resumed(std::make_shared<LazyTensorStorage>(4));
  resumed.loads(dir / "ckpt");
  EXPECT_TRUE(resumed.is_empty());
}

// Dumps two different buffers alternately to one folder in a child process, kills it at random
// moments, and checks after each kill that the folder loads as all of one dump: the rows, the
// size and the writer's cursor of the same buffer (a dump used to write its parts one after
// another, so a kill could pair one dump's storage with another's writer).
TEST(CheckpointTest, AKilledDumpLeavesAllOfOneDump) {
  TempDir dir;
  const std::string path = dir / "ckpt";
  TensorDictReplayBuffer a(std::make_shared<LazyTensorStorage>(64));
  a.extend(transitions(30, 0));
  TensorDictReplayBuffer b(std::make_shared<LazyTensorStorage>(64));
  b.extend(transitions(50, 100));
  a.dumps(path);
  const int kills = tensordict::testing::kill_loop(
      30, std::chrono::seconds(30), std::chrono::microseconds(30000), 11,
      [&](int i) { (i % 2 ? a : b).dumps(path); },
      [&](int kill) {
        TensorDictReplayBuffer resumed(std::make_shared<LazyTensorStorage>(64));
        resumed.loads(path);
        const int64_t n = resumed.size();
        ASSERT_TRUE(n == 30 || n == 50) << "kill " << kill << ": size " << n;
        const double first = n == 30 ? 0 : 100;
        EXPECT_EQ(sorted_values(row_values(resumed.storage()->get(torch::arange(n)))),
                  values_of(torch::arange(n) + static_cast<int64_t>(first)))
            << "kill " << kill;
        // The writer's cursor belongs to the same dump: the next row lands right after the rows.
        EXPECT_EQ(values_of(resumed.extend(transitions(1, 500))), (std::vector<int64_t>{n}))
            << "kill " << kill;
      });
  EXPECT_GE(kills, 10);
}

// A checkpoint whose storage comes from one dump and whose `part` comes from another (as a
// torn or edited checkpoint would): `small` holds fewer rows than `large`.
fs::path mixed_checkpoint(const TempDir& dir, ReplayBuffer& small, ReplayBuffer& large,
                          const std::string& part) {
  const fs::path small_dir = dir / "small";
  const fs::path large_dir = dir / "large";
  small.dumps(small_dir);
  large.dumps(large_dir);
  fs::remove_all(small_dir / part);
  fs::copy(large_dir / part, small_dir / part, fs::copy_options::recursive);
  return small_dir;
}

TEST(CheckpointTest, AWriterCursorPastTheStoredRowsIsRefusedAndTheBufferKept) {
  TempDir dir;
  TensorDictReplayBuffer small(std::make_shared<LazyTensorStorage>(64));
  small.extend(transitions(30));
  TensorDictReplayBuffer large(std::make_shared<LazyTensorStorage>(64));
  large.extend(transitions(50));
  const auto ckpt = mixed_checkpoint(dir, small, large, "writer");
  TensorDictReplayBuffer target(std::make_shared<LazyTensorStorage>(64));
  target.extend(transitions(3, 40));
  EXPECT_THAT(
      [&] { target.loads(ckpt.string()); },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("cursor 50"), HasSubstr("30 rows written of 64"),
                                      HasSubstr("different saves"))));
  EXPECT_EQ(target.size(), 3);
  EXPECT_EQ(values_of(target.extend(transitions(1, 90))), (std::vector<int64_t>{3}));
}

TEST(CheckpointTest, AnEpochOverRowsNotStoredIsRefused) {
  TempDir dir;
  auto make = [] {
    return std::make_unique<ReplayBuffer>(std::make_shared<LazyTensorStorage>(64),
                                          std::make_shared<SamplerWithoutReplacement>());
  };
  auto small = make();
  small->extend(transitions(10));
  auto large = make();
  large->extend(transitions(50));
  large->sample(4);  // the epoch's permutation covers 50 elements
  const auto ckpt = mixed_checkpoint(dir, *small, *large, "sampler");
  EXPECT_THAT([&] { make()->loads(ckpt.string()); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("storage holds 10 elements"), HasSubstr("different saves"))));
}

TEST(CheckpointTest, PrioritiesOfRowsNeverWrittenAreRefused) {
  TempDir dir;
  auto small = prioritized(std::make_shared<LazyTensorStorage>(64));
  small->extend(transitions(10));
  auto large = prioritized(std::make_shared<LazyTensorStorage>(64));
  large->extend(transitions(50));
  const auto ckpt = mixed_checkpoint(dir, *small, *large, "sampler");
  auto target = prioritized(std::make_shared<LazyTensorStorage>(64));
  EXPECT_THAT([&] { target->loads(ckpt.string()); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("gives element 10 a priority"),
                                              HasSubstr("storage holds 10 elements"))));
  EXPECT_TRUE(target->is_empty());
}

TEST(CheckpointTest, AMemmapCheckpointRefusesAFolderWrittenAgainByAnotherBuffer) {
  TempDir dir;
  TensorDictReplayBuffer first(std::make_shared<LazyMemmapStorage>(32, dir / "data"));
  first.extend(transitions(10));
  first.dumps(dir / "ckpt");
  // Another buffer on the same folder writes it anew.
  TensorDictReplayBuffer second(std::make_shared<LazyMemmapStorage>(32, dir / "data"));
  second.extend(transitions(20, 100));
  TensorDictReplayBuffer resumed(std::make_shared<LazyMemmapStorage>(32, dir / "elsewhere"));
  EXPECT_THAT([&] { resumed.loads(dir / "ckpt"); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr(dir / "data"), HasSubstr("no longer holds the data of this "
                                                           "checkpoint"))));
  EXPECT_TRUE(resumed.is_empty());
}

}  // namespace
}  // namespace tdrl::replay
