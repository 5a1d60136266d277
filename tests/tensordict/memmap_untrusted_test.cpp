// Saved folders from someone else, and saves interrupted at any moment (issue "Nothing lost,
// nothing escapes"): a loader never follows a link out of the folder, never blocks, never
// overflows its stack on a crafted meta.json; a save never empties a folder it did not write,
// and a save killed at any moment leaves exactly one complete save at its prefix.

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tensordict/tensordict.h>

#include "support/kill_loop.h"
#include "support/temp_dir.h"
#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;
namespace fs = std::filesystem;

class UntrustedFolderTest : public ::testing::Test {
 protected:
  // A saved folder {"x": [0, 1, 2, 3] float32, "inner": {"y": ...}} and a file outside it of
  // the same size as x's leaf file.
  void SetUp() override {
    TensorDict({{"x", torch::arange(4, torch::kFloat32)},
                {"inner", TensorDict({{"y", torch::ones({2})}}, {})}},
               {})
        .save(prefix_);
    write_file_bytes(outside_, std::string(16, 'o'));
  }

  TempDir dir_;
  const std::string prefix_ = (dir_.path() / "td").string();
  const std::string outside_ = (dir_.path() / "outside.bin").string();
  const std::string leaf_ = prefix_ + "/x.memmap";
};

TEST_F(UntrustedFolderTest, ALeafFileThatIsASymbolicLinkIsRefusedAndItsTargetKept) {
  fs::remove(leaf_);
  fs::create_symlink(outside_, leaf_);
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(leaf_), HasSubstr("symbolic link"))));
  EXPECT_EQ(read_file_bytes(outside_), std::string(16, 'o'));
}

TEST_F(UntrustedFolderTest, ALeafFileWithAnotherHardLinkIsRefused) {
  fs::remove(leaf_);
  fs::create_hard_link(outside_, leaf_);
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_, tensordict::MemmapMode::kReadOnly); },
              ThrowsMessage<Error>(AllOf(HasSubstr(leaf_), HasSubstr("2 hard links"))));
}

TEST_F(UntrustedFolderTest, AFifoInPlaceOfALeafIsRefusedWithoutBlocking) {
  fs::remove(leaf_);
  ASSERT_EQ(mkfifo(leaf_.c_str(), 0644), 0);
  // Opening a FIFO for reading without O_NONBLOCK would wait for a writer forever.
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(leaf_), HasSubstr("a FIFO"))));
}

TEST_F(UntrustedFolderTest, AMetaJsonThatIsASymbolicLinkIsRefused) {
  const std::string meta = prefix_ + "/meta.json";
  fs::rename(meta, outside_);
  fs::create_symlink(outside_, meta);
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(meta), HasSubstr("symbolic link"))));
}

TEST_F(UntrustedFolderTest, ASubfolderThatIsASymbolicLinkIsRefused) {
  const std::string inner = prefix_ + "/inner";
  const std::string elsewhere = (dir_.path() / "elsewhere").string();
  fs::rename(inner, elsewhere);
  fs::create_directory_symlink(elsewhere, inner);
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(inner), HasSubstr("symbolic link"))));
}

TEST_F(UntrustedFolderTest, AMetaJsonNestedHundredsOfThousandsDeepIsRefusedBeforeParsing) {
  // About 400 KB: nested deeper than any stack can recurse.
  const int64_t depth = 200000;
  const std::string text =
      "{\"batch_size\": [], \"_tdrl\": {\"order\": " + std::string(depth, '[') +
      std::string(depth, ']') + "}}";
  write_file_bytes(prefix_ + "/meta.json", text);
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/meta.json"),
                                         HasSubstr("200002 levels"), HasSubstr("more than 64"))));
}

TEST_F(UntrustedFolderTest, BracketsInsideStringsDoNotCountAsNesting) {
  auto td = TensorDict({{"x", torch::zeros({1})}}, {});
  td.set_non_tensor("note", std::string(1000, '['));
  td.save(prefix_);
  EXPECT_EQ(TensorDict::load_memmap(prefix_).get_non_tensor<std::string>("note"),
            std::string(1000, '['));
}

// ---- Metadata that contradicts itself --------------------------------------------------------

class InconsistentMetaTest : public ::testing::Test {
 protected:
  TempDir dir_;
  const std::string prefix_ = (dir_.path() / "td").string();
};

TEST_F(InconsistentMetaTest, AnEntryLeftOutOfTheKeyOrderIsRefusedNotDropped) {
  fs::create_directories(prefix_);
  write_file_bytes(prefix_ + "/a.memmap", std::string(8, '\0'));
  write_file_bytes(prefix_ + "/b.memmap", std::string(8, '\0'));
  write_file_bytes(prefix_ + "/meta.json",
                   R"({"batch_size": [], "device": null, "_tdrl": {"order": ["a"]},
                       "a": {"shape": [2], "dtype": "torch.float32"},
                       "b": {"shape": [2], "dtype": "torch.float32"}})");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr("entry 'b' missing from its _tdrl.order"),
                                         HasSubstr(prefix_ + "/meta.json"))));
}

TEST_F(InconsistentMetaTest, ALazyStackWhoseMembersDoNotMakeItsBatchSizeIsRefused) {
  TensorDict({{"x", torch::zeros({3})}}, {3}).save(prefix_ + "/0");
  TensorDict({{"x", torch::ones({3})}}, {3}).save(prefix_ + "/1");
  write_file_bytes(prefix_ + "/meta.json",
                   R"({"_type": "<class 'tensordict._lazy.LazyStackedTensorDict'>",
                       "batch_size": [5, 3], "device": null,
                       "_tdrl": {"stack_dim": 0, "num_members": 2}})");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(
                  AllOf(HasSubstr("declares batch_size [5, 3]"), HasSubstr("stack to [2, 3]"))));
}

TEST_F(InconsistentMetaTest, TheMetaDeviceIsRefusedRatherThanLosingTheData) {
  fs::create_directories(prefix_);
  write_file_bytes(prefix_ + "/meta.json", R"({"batch_size": [], "device": "meta"})");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(HasSubstr("names device 'meta', which holds no data")));
}

// ---- Saving -------------------------------------------------------------------------------

class SaveTargetTest : public ::testing::Test {
 protected:
  TempDir dir_;
  const std::string prefix_ = (dir_.path() / "td").string();
};

TEST_F(SaveTargetTest, AFolderOfOtherFilesIsNeverEmptied) {
  fs::create_directories(prefix_);
  write_file_bytes(prefix_ + "/notes.txt", "mine");
  EXPECT_THAT(
      [&] {
        TensorDict({{"x", torch::zeros({2})}}, {}).save(prefix_);
      },
      ThrowsMessage<Error>(AllOf(HasSubstr(prefix_), HasSubstr("holding other files"),
                                 HasSubstr("new or empty folder"))));
  EXPECT_EQ(read_file_bytes(prefix_ + "/notes.txt"), "mine");
}

TEST_F(SaveTargetTest, AnEmptyFolderOrAnEarlierSaveIsReplaced) {
  fs::create_directories(prefix_);
  TensorDict({{"x", torch::zeros({2})}}, {}).save(prefix_);
  TensorDict({{"y", torch::ones({3})}}, {}).save(prefix_);
  const auto loaded = TensorDict::load_memmap(prefix_);
  EXPECT_FALSE(loaded.contains("x"));
  EXPECT_TRUE(torch::equal(loaded.get("y"), torch::ones({3})));
}

TEST_F(SaveTargetTest, LeftoversOfADeadSaverAreRemovedAndALiveOnesKept) {
  // pid 2^30 exceeds Linux's pid_max (at most 2^22): no such process exists.
  const std::string dead_tmp = prefix_ + ".tmp.1073741824.0";
  const std::string dead_old = prefix_ + ".old.1073741824.3";
  const std::string live_tmp = prefix_ + ".tmp." + std::to_string(getppid()) + ".0";
  for (const auto& p : {dead_tmp, dead_old, live_tmp}) fs::create_directories(p);
  TensorDict({{"x", torch::zeros({2})}}, {}).save(prefix_);
  EXPECT_FALSE(fs::exists(dead_tmp));
  EXPECT_FALSE(fs::exists(dead_old));
  EXPECT_TRUE(fs::exists(live_tmp));
}

// Saves A and B alternately to one prefix in a child process, kills it at a random moment,
// and checks that the prefix then holds all of A or all of B; many times, in bounded time.
TEST_F(SaveTargetTest, AKilledSaveLeavesExactlyOneCompleteSave) {
  const auto a = TensorDict({{"v", torch::full({64}, 1.0f)}, {"w", torch::full({8}, 1L)}}, {});
  const auto b = TensorDict({{"v", torch::full({64}, 2.0f)}, {"w", torch::full({8}, 2L)}}, {});
  a.save(prefix_);
  const int kills = tensordict::testing::kill_loop(
      40, std::chrono::seconds(20), std::chrono::microseconds(20000), 7,
      [&](int i) { (i % 2 ? a : b).save(prefix_); },
      [&](int kill) {
        const auto loaded = TensorDict::load_memmap(prefix_);
        const float v = loaded.get("v")[0].item<float>();
        ASSERT_TRUE(v == 1.0f || v == 2.0f) << "kill " << kill;
        const auto& expected = v == 1.0f ? a : b;
        ASSERT_TRUE(torch::equal(loaded.get("v"), expected.get("v"))) << "kill " << kill;
        ASSERT_TRUE(torch::equal(loaded.get("w"), expected.get("w"))) << "kill " << kill;
      });
  EXPECT_GE(kills, 10);
  // The next save clears what the killed savers left behind.
  a.save(prefix_);
  for (const auto& entry : fs::directory_iterator(dir_.path()))
    EXPECT_EQ(entry.path().filename().string(), "td");
}

}  // namespace
