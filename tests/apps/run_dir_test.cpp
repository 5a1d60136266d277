#include "tdrl/apps/run_dir.h"

#include <tdrl/apps/checkpoint_store.h>
#include <tdrl/apps/metrics.h>
#include <tdrl/apps/progress.h>
#include <tdrl/apps/stop_signal.h>

#include <signal.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#include "support/count_of.h"
#include "support/error_message.h"
#include "support/temp_dir.h"

namespace tdrl::apps {
namespace {

namespace fs = std::filesystem;
using tensordict::testing::read_file_bytes;
using tensordict::testing::TempDir;
using tensordict::testing::write_file_bytes;
using ::testing::HasSubstr;

using tdrl::test_util::error_message;

using tdrl::testing::count_of;

std::vector<std::string> sorted_entries_of(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

std::string local_stamp(std::time_t t) {
  std::tm local{};
  localtime_r(&t, &local);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &local);
  return buf;
}

// ---------------------------------------------------------------- RunDir

TEST(RunDirTest, CreateMakesSanitisedTimestampedFolderAndParent) {
  TempDir tmp;
  RunDir run = RunDir::create(tmp / "runs/nested", "ppo cartpole/v1");
  const fs::path path(run.path());
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_EQ(path.parent_path(), fs::path(tmp / "runs/nested"));
  EXPECT_TRUE(
      std::regex_match(path.filename().string(), std::regex(R"(ppo_cartpole_v1-\d{8}-\d{6})")))
      << path.filename();
}

TEST(RunDirTest, CreateAddsSuffixWhenFolderIsTaken) {
  TempDir tmp;
  // Take the names of the next few seconds so the call cannot miss them.
  const std::time_t now = std::time(nullptr);
  std::set<std::string> taken;
  for (int i = 0; i < 5; ++i) {
    taken.insert("exp-" + local_stamp(now + i));
    fs::create_directories(tmp.path() / ("exp-" + local_stamp(now + i)));
  }
  RunDir second = RunDir::create(tmp.path().string(), "exp");
  RunDir third = RunDir::create(tmp.path().string(), "exp");
  const std::string name = fs::path(second.path()).filename();
  ASSERT_GT(name.size(), 2u);
  EXPECT_EQ(name.substr(name.size() - 2), "-2");
  EXPECT_EQ(taken.count(name.substr(0, name.size() - 2)), 1u) << name;
  EXPECT_NE(third.path(), second.path());
  EXPECT_TRUE(fs::is_directory(third.path()));
}

TEST(RunDirTest, CreateThrowsNamingParentThatIsAFile) {
  TempDir tmp;
  write_file_bytes(tmp / "file", "x");
  std::string message =
      error_message<std::runtime_error>([&] { RunDir::create(tmp / "file", "run"); });
  EXPECT_THAT(message, HasSubstr("RunDir::create: cannot create the parent folder"));
  EXPECT_THAT(message, HasSubstr(tmp / "file"));
}

TEST(RunDirTest, FileJoinsNameToPath) {
  TempDir tmp;
  write_file_bytes(tmp / "config.yaml", "a: 1\n");
  RunDir run = RunDir::open(tmp.path().string());
  EXPECT_EQ(run.path(), tmp.path().string());
  EXPECT_EQ(run.file("metrics.csv"), tmp / "metrics.csv");
}

TEST(RunDirTest, OpenRejectsFolderWithoutConfigYaml) {
  TempDir tmp;
  std::string message =
      error_message<std::runtime_error>([&] { RunDir::open(tmp.path().string()); });
  EXPECT_THAT(message, HasSubstr("is not a run folder: no config.yaml"));
  EXPECT_THAT(message, HasSubstr(tmp.path().string()));
}

TEST(RunDirTest, OpenRejectsMissingFolder) {
  TempDir tmp;
  std::string message = error_message<std::runtime_error>([&] { RunDir::open(tmp / "nope"); });
  EXPECT_THAT(message, HasSubstr("is not a run folder: no such folder"));
}

TEST(RunDirTest, WriteFileAtomicallyReplacesContentAndLeavesNoTemporaryFile) {
  TempDir tmp;
  write_file_atomically(tmp / "a.txt", "first");
  write_file_atomically(tmp / "a.txt", "second\n");
  EXPECT_EQ(read_file_bytes(tmp / "a.txt"), "second\n");
  EXPECT_EQ(sorted_entries_of(tmp.path()), std::vector<std::string>{"a.txt"});
}

TEST(RunDirTest, WriteFileAtomicallyThrowsNamingPathWhenFolderIsMissing) {
  TempDir tmp;
  std::string message =
      error_message<std::runtime_error>([&] { write_file_atomically(tmp / "missing/a.txt", "x"); });
  EXPECT_THAT(message, HasSubstr("write_file_atomically"));
  EXPECT_THAT(message, HasSubstr(tmp / "missing/a.txt"));
}

// ---------------------------------------------------------------- MetricsWriter

TEST(MetricsWriterTest, WritesHeaderAndRowsWithEmptyCellsForMissingValues) {
  TempDir tmp;
  MetricsWriter writer(tmp / "metrics.csv", {"frames", "return", "loss"});
  writer.write({{"frames", 1000}, {"return", 12.5}});
  writer.write({{"frames", 2000}, {"loss", 0.25}});
  EXPECT_EQ(read_file_bytes(tmp / "metrics.csv"), "frames,return,loss\n1000,12.5,\n2000,,0.25\n");
  auto rows = read_metrics(tmp / "metrics.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::map<std::string, double>{{"frames", 1000}, {"return", 12.5}}));
  EXPECT_EQ(rows[1], (std::map<std::string, double>{{"frames", 2000}, {"loss", 0.25}}));
}

TEST(MetricsWriterTest, NumbersReadBackExactly) {
  TempDir tmp;
  const std::vector<double> values = {0.1,  1.0 / 3.0, 1e-300, 123456789012.0,    -7.0,
                                      1e20, -2.5e-7,   0.0,    4503599627370497.0};
  {
    MetricsWriter writer(tmp / "m.csv", {"v"});
    for (double v : values) writer.write({{"v", v}});
  }
  EXPECT_THAT(read_file_bytes(tmp / "m.csv"), HasSubstr("\n123456789012\n"));
  auto rows = read_metrics(tmp / "m.csv");
  ASSERT_EQ(rows.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(rows[i].at("v"), values[i]) << i;
}

TEST(MetricsWriterTest, NanAndInfinitiesAreWrittenAsWordsAndReadBack) {
  TempDir tmp;
  {
    MetricsWriter writer(tmp / "m.csv", {"a", "b", "c"});
    writer.write({{"a", std::nan("")},
                  {"b", std::numeric_limits<double>::infinity()},
                  {"c", -std::numeric_limits<double>::infinity()}});
  }
  EXPECT_EQ(read_file_bytes(tmp / "m.csv"), "a,b,c\nnan,inf,-inf\n");
  auto rows = read_metrics(tmp / "m.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(std::isnan(rows[0].at("a")));
  EXPECT_EQ(rows[0].at("b"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(rows[0].at("c"), -std::numeric_limits<double>::infinity());
}

TEST(MetricsWriterTest, ReopeningWithSameColumnsAppendsWithoutSecondHeader) {
  TempDir tmp;
  { MetricsWriter(tmp / "m.csv", {"frames", "return"}).write({{"frames", 1}}); }
  { MetricsWriter(tmp / "m.csv", {"frames", "return"}).write({{"frames", 2}}); }
  EXPECT_EQ(read_file_bytes(tmp / "m.csv"), "frames,return\n1,\n2,\n");
}

TEST(MetricsWriterTest, ReopeningWithDifferentColumnsThrowsAndKeepsFile) {
  TempDir tmp;
  { MetricsWriter(tmp / "m.csv", {"frames", "return"}).write({{"frames", 1}}); }
  std::string message = error_message<std::runtime_error>([&] {
    MetricsWriter(tmp / "m.csv", {"frames", "loss"});
  });
  EXPECT_THAT(message, HasSubstr("has the columns ['frames', 'return']; expected ['frames', "
                                 "'loss']"));
  EXPECT_EQ(read_file_bytes(tmp / "m.csv"), "frames,return\n1,\n");
}

TEST(MetricsWriterTest, EmptyExistingFileGetsHeader) {
  TempDir tmp;
  write_file_bytes(tmp / "m.csv", "");
  MetricsWriter(tmp / "m.csv", {"x"}).write({{"x", 3}});
  EXPECT_EQ(read_file_bytes(tmp / "m.csv"), "x\n3\n");
}

TEST(MetricsWriterTest, PartialLastRowFromCrashIsDroppedOnAppend) {
  TempDir tmp;
  write_file_bytes(tmp / "m.csv", "frames,return\n1,2\n3,4.");
  MetricsWriter(tmp / "m.csv", {"frames", "return"}).write({{"frames", 5}, {"return", 6}});
  EXPECT_EQ(read_file_bytes(tmp / "m.csv"), "frames,return\n1,2\n5,6\n");
}

TEST(MetricsWriterTest, UnknownKeyThrowsListingColumnsAndWritesNothing) {
  TempDir tmp;
  MetricsWriter writer(tmp / "m.csv", {"frames", "return"});
  std::string message = error_message<tensordict::ValueError>([&] {
    writer.write({{"frames", 1}, {"retrun", 2}});
  });
  EXPECT_THAT(message, HasSubstr("'retrun' is not a column"));
  EXPECT_THAT(message, HasSubstr("['frames', 'return']"));
  EXPECT_EQ(read_file_bytes(tmp / "m.csv"), "frames,return\n");
}

TEST(MetricsWriterTest, InvalidColumnsThrow) {
  TempDir tmp;
  EXPECT_THAT(error_message<tensordict::ValueError>([&] { MetricsWriter(tmp / "a.csv", {}); }),
              HasSubstr("no columns"));
  EXPECT_THAT(error_message<tensordict::ValueError>([&] {
                MetricsWriter(tmp / "b.csv", {"x", "y", "x"});
              }),
              HasSubstr("column 'x' is given twice"));
  EXPECT_THAT(error_message<tensordict::ValueError>([&] { MetricsWriter(tmp / "c.csv", {"a,b"}); }),
              HasSubstr("column name 'a,b' holds ','"));
}

TEST(MetricsWriterTest, ReadMetricsThrowsForMissingFile) {
  TempDir tmp;
  std::string message =
      error_message<std::runtime_error>([&] { read_metrics(tmp / "missing.csv"); });
  EXPECT_THAT(message, HasSubstr("read_metrics: cannot open"));
  EXPECT_THAT(message, HasSubstr("missing.csv"));
}

TEST(MetricsWriterTest, ReadMetricsThrowsNamingLineOfMalformedRow) {
  TempDir tmp;
  write_file_bytes(tmp / "m.csv", "a,b\n1,2\n3\n");
  EXPECT_THAT(error_message<std::runtime_error>([&] { read_metrics(tmp / "m.csv"); }),
              HasSubstr("line 3 has 1 cells; the header has 2"));
  write_file_bytes(tmp / "n.csv", "a,b\n1,x2\n");
  EXPECT_THAT(error_message<std::runtime_error>([&] { read_metrics(tmp / "n.csv"); }),
              HasSubstr("line 2 column 'b': 'x2' is not a number"));
}

TEST(MetricsWriterTest, TruncateKeepsTheRowsUpToTheFramesAndDropsACutRow) {
  TempDir tmp;
  const std::string path = tmp / "m.csv";
  write_file_bytes(path, "frames,train_return\n64,1.5\n128,2\n192,3\n256,4\n320,");
  truncate_metrics(path, 192);
  EXPECT_EQ(read_file_bytes(path), "frames,train_return\n64,1.5\n128,2\n192,3\n");
  // A row with too few cells (a kill between two writes of a row) goes too.
  write_file_bytes(path, "frames,train_return\n64,1.5\n128\n");
  truncate_metrics(path, 1000);
  EXPECT_EQ(read_file_bytes(path), "frames,train_return\n64,1.5\n");
  truncate_metrics(tmp / "none.csv", 10);  // no file: nothing to do
  EXPECT_FALSE(fs::exists(tmp / "none.csv"));
  write_file_bytes(path, "step,x\n1,2\n");
  EXPECT_THAT([&] { truncate_metrics(path, 1); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("has no 'frames' column")));
}

TEST(MetricsWriterTest, ReadMetricsOfEmptyFileHasNoRows) {
  TempDir tmp;
  write_file_bytes(tmp / "m.csv", "");
  EXPECT_TRUE(read_metrics(tmp / "m.csv").empty());
}

// ---------------------------------------------------------------- ProgressDisplay

TEST(ProgressDisplayTest, LinesModePrintsFirstUpdateThenOncePerInterval) {
  ProgressDisplay display("lines", 10000, std::chrono::seconds(10));
  EXPECT_FALSE(display.is_bar());
  ::testing::internal::CaptureStdout();
  display.update(1000, 500, std::nan(""), 0.0);
  display.update(2000, 500, 1.0, 5.0);
  display.update(3000, 500, 2.0, 10.0);
  display.update(4000, 500, 3.0, 12.0);
  display.finish();
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out,
            "1000/10000 frames (10%) | 500 fps | return n/a | elapsed 0:00:00 | ETA 0:00:18\n"
            "3000/10000 frames (30%) | 500 fps | return 2 | elapsed 0:00:10 | ETA 0:00:14\n");
}

TEST(ProgressDisplayTest, LinesModeAlwaysPrintsTheUpdateThatReachesTotal) {
  ProgressDisplay display("lines", 1000, std::chrono::hours(1));
  ::testing::internal::CaptureStdout();
  display.update(100, 50, 10.0, 2.0);
  display.update(500, 50, 10.0, 10.0);
  display.update(1000, 50, 123.456, 20.0);
  display.update(1100, 50, 123.456, 22.0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(count_of(out, "\n"), 2u) << out;
  EXPECT_THAT(out, HasSubstr("1000/1000 frames (100%) | 50 fps | return 123.5 | elapsed 0:00:20 "
                             "| ETA 0:00:00\n"));
}

TEST(ProgressDisplayTest, BarModeRedrawsOneLineInPlace) {
  ProgressDisplay display("bar", 10000, std::chrono::seconds(10));
  EXPECT_TRUE(display.is_bar());
  ::testing::internal::CaptureStdout();
  display.update(5000, 1000, 123.44, 1.0);
  display.update(6000, 1000, 5.0, 1.5);
  display.finish();
  display.finish();
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string first =
      "\r[###############---------------] 50% 5000/10000 frames | 1000 fps | return 123.4 | "
      "ETA 0:00:05";
  const std::string second =
      "\r[##################------------] 60% 6000/10000 frames | 1000 fps | return 5 | "
      "ETA 0:00:04";
  // The shorter second line is padded to wipe the end of the first.
  EXPECT_EQ(out, first + second + std::string(first.size() - second.size(), ' ') + "\n");
}

TEST(ProgressDisplayTest, AMessagePrintsAboveTheBarWhichIsRedrawnBelowIt) {
  ProgressDisplay bar("bar", 10000, std::chrono::seconds(10));
  ::testing::internal::CaptureStdout();
  bar.update(5000, 1000, 1.0, 1.0);
  bar.message("eval at 5000 frames: return 9.00");
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string drawn =
      "[###############---------------] 50% 5000/10000 frames | 1000 fps | return 1 | ETA 0:00:05";
  EXPECT_EQ(out, "\r" + drawn + "\r" + "eval at 5000 frames: return 9.00" +
                     std::string(drawn.size() - 32, ' ') + "\n" + drawn);

  ProgressDisplay lines("lines", 10000, std::chrono::seconds(10));
  ProgressDisplay none("none", 10000, std::chrono::seconds(10));
  ::testing::internal::CaptureStdout();
  lines.message("eval at 5000 frames");
  none.message("not shown");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "eval at 5000 frames\n");
}

TEST(ProgressDisplayTest, EtaIsUnknownWithoutPositiveFps) {
  ProgressDisplay display("lines", 100, std::chrono::seconds(0));
  ::testing::internal::CaptureStdout();
  display.update(10, 0.0, 1.0, 0.0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr("| 0 fps |"));
  EXPECT_THAT(out, HasSubstr("| ETA n/a\n"));
}

TEST(ProgressDisplayTest, NoneModePrintsNothing) {
  ProgressDisplay display("none", 100, std::chrono::seconds(0));
  ::testing::internal::CaptureStdout();
  display.update(10, 5.0, 1.0, 0.0);
  display.update(100, 5.0, 1.0, 1.0);
  display.finish();
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
}

TEST(ProgressDisplayTest, AutoModeWithoutTtyPrintsLines) {
  ::testing::internal::CaptureStdout();  // stdout is now a file, not a TTY
  ProgressDisplay display("auto", 100, std::chrono::seconds(0));
  display.update(10, 5.0, 1.0, 0.0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_FALSE(display.is_bar());
  EXPECT_EQ(out.rfind("10/100 frames (10%)", 0), 0u) << out;
}

TEST(ProgressDisplayTest, UnknownModeThrowsListingModes) {
  EXPECT_THAT(
      error_message<tensordict::ValueError>(
          [] { ProgressDisplay("fancy", 100, std::chrono::seconds(1)); }),
      ::testing::AllOf(HasSubstr("unknown mode 'fancy'; the modes are ['"), HasSubstr("'auto'"),
                       HasSubstr("'bar'"), HasSubstr("'lines'"), HasSubstr("'none'")));
}

// ---------------------------------------------------------------- CheckpointStore

void write_text(const std::string& folder, const std::string& text) {
  write_file_bytes((fs::path(folder) / "state.txt").string(), text);
}

std::string read_text(const std::string& folder) {
  return read_file_bytes((fs::path(folder) / "state.txt").string());
}

TEST(CheckpointStoreTest, WriteCommitsFolderAndLatestNamesIt) {
  TempDir tmp;
  CheckpointStore store(tmp / "checkpoints");
  EXPECT_EQ(store.latest(), std::nullopt);
  std::string folder = store.write(42000, [](const std::string& f) { write_text(f, "a"); });
  EXPECT_EQ(folder, tmp / "checkpoints/ckpt-000000042000");
  EXPECT_EQ(read_text(folder), "a");
  EXPECT_EQ(store.latest(), folder);
  EXPECT_EQ(read_file_bytes(tmp / "checkpoints/latest"), "ckpt-000000042000\n");
  EXPECT_EQ(sorted_entries_of(tmp.path() / "checkpoints"),
            (std::vector<std::string>{"ckpt-000000042000", "latest"}));
}

// Two checkpoints, 1000 ("a") and 2000 ("bb" and a replay file); returns the store.
CheckpointStore two_checkpoints(const TempDir& tmp) {
  CheckpointStore store(tmp / "checkpoints");
  store.write(1000, [](const std::string& f) { write_text(f, "a"); });
  store.write(2000, [](const std::string& f) {
    write_text(f, "bb");
    fs::create_directories(fs::path(f) / "replay");
    write_file_bytes((fs::path(f) / "replay/rows.memmap").string(), std::string(4096, 'r'));
  });
  return store;
}

TEST(CheckpointStoreTest, AnIntactCheckpointHasAManifestAndIsTheLatestIntact) {
  TempDir tmp;
  const auto store = two_checkpoints(tmp);
  const auto newest = tmp / "checkpoints/ckpt-000000002000";
  EXPECT_THAT(read_file_bytes(newest + "/MANIFEST"), HasSubstr(" 4096 replay/rows.memmap\n"));
  EXPECT_EQ(CheckpointStore::damage(newest), std::nullopt);
  const auto intact = store.latest_intact();
  ASSERT_TRUE(intact.has_value());
  EXPECT_EQ(intact->folder, newest);
  EXPECT_TRUE(intact->passed_over.empty());
}

TEST(CheckpointStoreTest, ATruncatedFileIsNamedAndTheCheckpointBeforeIsTaken) {
  TempDir tmp;
  const auto store = two_checkpoints(tmp);
  const auto newest = tmp / "checkpoints/ckpt-000000002000";
  fs::resize_file(newest + "/replay/rows.memmap", 100);
  const auto damaged = CheckpointStore::damage(newest);
  ASSERT_TRUE(damaged.has_value());
  EXPECT_THAT(*damaged, HasSubstr("replay/rows.memmap' holds 100 bytes, 4096 when written"));
  const auto intact = store.latest_intact();
  ASSERT_TRUE(intact.has_value());
  EXPECT_EQ(intact->folder, tmp / "checkpoints/ckpt-000000001000");
  ASSERT_EQ(intact->passed_over.size(), 1u);
  EXPECT_THAT(intact->passed_over[0], HasSubstr("ckpt-000000002000: "));
}

TEST(CheckpointStoreTest, FlippedBytesAndADeletedFolderAreFound) {
  TempDir tmp;
  const auto store = two_checkpoints(tmp);
  const auto newest = tmp / "checkpoints/ckpt-000000002000";
  std::string bytes = read_file_bytes(newest + "/replay/rows.memmap");
  bytes[2000] = 'x';
  write_file_bytes(newest + "/replay/rows.memmap", bytes);
  EXPECT_THAT(CheckpointStore::damage(newest).value_or(""),
              HasSubstr("rows.memmap' does not hold what was written (checksum mismatch)"));
  fs::remove_all(newest + "/replay");
  EXPECT_THAT(CheckpointStore::damage(newest).value_or(""),
              HasSubstr("replay/rows.memmap' is missing"));
}

// The manifest's format line and zlib's CRC-32 of each file ("a" is 0xe8b7be43).
TEST(CheckpointStoreTest, TheManifestCarriesItsFormatAndEachFilesCrc32) {
  TempDir tmp;
  two_checkpoints(tmp);
  const std::string manifest = read_file_bytes(tmp / "checkpoints/ckpt-000000001000/MANIFEST");
  EXPECT_EQ(manifest.substr(0, manifest.find('\n')), "tdrl-manifest 2 crc32");
  EXPECT_THAT(manifest, HasSubstr("\ne8b7be43 1 "));
}

// A manifest of tdrl 0.1 (no format line, its own 64-bit checksum) is not checked with
// another checksum: the checkpoint is passed over, saying which version wrote it.
TEST(CheckpointStoreTest, AManifestOfTdrl01IsRefusedNamingTheVersion) {
  TempDir tmp;
  const auto store = two_checkpoints(tmp);
  const auto newest = tmp / "checkpoints/ckpt-000000002000";
  write_file_bytes(newest + "/MANIFEST", "0123456789abcdef 2 state.txt\n");
  EXPECT_THAT(CheckpointStore::damage(newest).value_or(""),
              HasSubstr("its MANIFEST was written by tdrl 0.1"));
  const auto intact = store.latest_intact();
  ASSERT_TRUE(intact.has_value());
  EXPECT_EQ(intact->folder, tmp / "checkpoints/ckpt-000000001000");
}

// A named checkpoint (best/) is written the same way, replaced whole, and leaves `latest` and
// the ckpt-* folders alone; the store's own names are refused.
TEST(CheckpointStoreTest, ANamedCheckpointIsWrittenWithItsManifestBesideTheOthers) {
  TempDir tmp;
  auto store = two_checkpoints(tmp);
  const std::string best =
      store.write_named("best", [](const std::string& f) { write_text(f, "first"); });
  EXPECT_EQ(best, tmp / "checkpoints/best");
  store.write_named("best", [](const std::string& f) { write_text(f, "second"); });
  EXPECT_EQ(read_file_bytes(best + "/state.txt"), "second");
  EXPECT_EQ(CheckpointStore::damage(best), std::nullopt);
  EXPECT_EQ(store.latest(), tmp / "checkpoints/ckpt-000000002000");
  EXPECT_TRUE(fs::exists(tmp / "checkpoints/ckpt-000000001000"));
  for (const std::string name : {"ckpt-000000000005", "latest", "a/b", "", "tmp-x"})
    EXPECT_THAT(
        [&] { store.write_named(name, [](const std::string&) {}); },
        ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("is not a plain folder name")))
        << name;
  // A fill that throws leaves the previous best as it was.
  EXPECT_THROW(
      store.write_named("best", [](const std::string&) { throw std::runtime_error("full"); }),
      std::runtime_error);
  EXPECT_EQ(read_file_bytes(best + "/state.txt"), "second");
}

TEST(CheckpointStoreTest, LatestNamingAMissingFolderFallsBackSayingSo) {
  TempDir tmp;
  const auto store = two_checkpoints(tmp);
  fs::remove_all(tmp / "checkpoints/ckpt-000000002000");
  const auto intact = store.latest_intact();
  ASSERT_TRUE(intact.has_value());
  EXPECT_EQ(intact->folder, tmp / "checkpoints/ckpt-000000001000");
  ASSERT_EQ(intact->passed_over.size(), 1u);
  EXPECT_THAT(intact->passed_over[0], HasSubstr("names 'ckpt-000000002000', which is not"));
}

TEST(CheckpointStoreTest, FoldersLeftByAnInterruptedCleanUpAreNeitherTakenNorKept) {
  TempDir tmp;
  CheckpointStore store(tmp / "checkpoints");
  store.write(1000, [](const std::string& f) { write_text(f, "a"); });
  // A kill during the clean-up of an earlier write left two older checkpoints, one of them
  // half removed (its MANIFEST already gone).
  store.write(500, [](const std::string& f) { write_text(f, "old"); });
  fs::create_directories(tmp / "checkpoints/ckpt-000000000200");
  write_text(tmp / "checkpoints/ckpt-000000000200", "half");
  fs::remove(tmp / "checkpoints/ckpt-000000000500/MANIFEST");
  write_file_bytes(tmp / "checkpoints/latest", "ckpt-000000001000\n");
  fs::remove(tmp / "checkpoints/ckpt-000000001000/state.txt");  // and the newest is damaged
  std::vector<std::string> why;
  EXPECT_EQ(store.latest_intact(&why), std::nullopt);
  ASSERT_EQ(why.size(), 3u);
  EXPECT_THAT(why[1], HasSubstr("ckpt-000000000500: it has no MANIFEST"));
  // The next write keeps only the two newest.
  store.write(2000, [](const std::string& f) { write_text(f, "b"); });
  EXPECT_EQ(sorted_entries_of(tmp.path() / "checkpoints"),
            (std::vector<std::string>{"ckpt-000000001000", "ckpt-000000002000", "latest"}));
}

TEST(CheckpointStoreTest, NoIntactCheckpointGivesEveryReason) {
  TempDir tmp;
  const auto store = two_checkpoints(tmp);
  fs::remove(tmp / "checkpoints/ckpt-000000001000/state.txt");
  fs::remove(tmp / "checkpoints/ckpt-000000002000/state.txt");
  std::vector<std::string> why;
  EXPECT_EQ(store.latest_intact(&why), std::nullopt);
  ASSERT_EQ(why.size(), 2u);
  EXPECT_THAT(why[0], HasSubstr("ckpt-000000002000: "));
  EXPECT_THAT(why[1], HasSubstr("ckpt-000000001000: "));
}

TEST(CheckpointStoreTest, ThrowingFillLeavesLatestUnchangedAndRemovesTemporaryFolder) {
  TempDir tmp;
  CheckpointStore store(tmp / "checkpoints");
  std::string first = store.write(1000, [](const std::string& f) { write_text(f, "a"); });
  std::string message = error_message<std::runtime_error>([&] {
    store.write(2000, [](const std::string& f) {
      write_text(f, "half");
      throw std::runtime_error("disk on fire");
    });
  });
  EXPECT_EQ(message, "disk on fire");
  EXPECT_EQ(store.latest(), first);
  EXPECT_EQ(sorted_entries_of(tmp.path() / "checkpoints"),
            (std::vector<std::string>{"ckpt-000000001000", "latest"}));
}

TEST(CheckpointStoreTest, StaleTemporaryFolderIsIgnoredAndCleanedByNextWrite) {
  TempDir tmp;
  CheckpointStore store(tmp / "checkpoints");
  std::string first = store.write(1000, [](const std::string& f) { write_text(f, "a"); });
  // A crash while writing frames 5000 left its temporary folder behind.
  fs::create_directories(tmp.path() / "checkpoints/tmp-ckpt-000000005000-12345");
  write_text(tmp / "checkpoints/tmp-ckpt-000000005000-12345", "partial");
  EXPECT_EQ(store.latest(), first);
  store.write(2000, [](const std::string& f) { write_text(f, "b"); });
  EXPECT_EQ(sorted_entries_of(tmp.path() / "checkpoints"),
            (std::vector<std::string>{"ckpt-000000001000", "ckpt-000000002000", "latest"}));
}

TEST(CheckpointStoreTest, KeepRemovesOlderCheckpoints) {
  TempDir tmp;
  CheckpointStore store(tmp / "checkpoints", 2);
  for (int64_t frames : {1000, 2000, 3000, 10000}) {
    store.write(frames, [frames](const std::string& f) { write_text(f, std::to_string(frames)); });
  }
  EXPECT_EQ(sorted_entries_of(tmp.path() / "checkpoints"),
            (std::vector<std::string>{"ckpt-000000003000", "ckpt-000000010000", "latest"}));
  EXPECT_EQ(read_text(*store.latest()), "10000");

  CheckpointStore one(tmp / "one", 1);
  one.write(1, [](const std::string& f) { write_text(f, "1"); });
  one.write(2, [](const std::string& f) { write_text(f, "2"); });
  EXPECT_EQ(sorted_entries_of(tmp.path() / "one"),
            (std::vector<std::string>{"ckpt-000000000002", "latest"}));
}

TEST(CheckpointStoreTest, RewritingSameFramesReplacesCheckpoint) {
  TempDir tmp;
  CheckpointStore store(tmp / "checkpoints");
  store.write(500, [](const std::string& f) { write_text(f, "old"); });
  std::string folder = store.write(500, [](const std::string& f) { write_text(f, "new"); });
  EXPECT_EQ(read_text(folder), "new");
  EXPECT_EQ(store.latest(), folder);
  EXPECT_EQ(sorted_entries_of(tmp.path() / "checkpoints"),
            (std::vector<std::string>{"ckpt-000000000500", "latest"}));
}

TEST(CheckpointStoreTest, LatestNamingMissingOrInvalidFolderIsNullopt) {
  TempDir tmp;
  CheckpointStore store(tmp / "checkpoints");
  fs::create_directories(tmp.path() / "checkpoints");
  write_file_bytes(tmp / "checkpoints/latest", "ckpt-000000009999\n");
  EXPECT_EQ(store.latest(), std::nullopt);
  fs::create_directories(tmp.path() / "elsewhere");
  write_file_bytes(tmp / "checkpoints/latest", "../elsewhere\n");
  EXPECT_EQ(store.latest(), std::nullopt);
  write_file_bytes(tmp / "checkpoints/latest", "");
  EXPECT_EQ(store.latest(), std::nullopt);
}

TEST(CheckpointStoreTest, InvalidArgumentsThrow) {
  TempDir tmp;
  EXPECT_THAT(error_message<tensordict::ValueError>([&] { CheckpointStore(tmp / "c", 0); }),
              HasSubstr("keep must be >= 1"));
  CheckpointStore store(tmp / "c");
  EXPECT_THAT(
      error_message<tensordict::ValueError>([&] { store.write(-1, [](const std::string&) {}); }),
      HasSubstr("frames must be >= 0, got -1"));
}

// ---------------------------------------------------------------- StopSignal

class StopSignalTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    StopSignal::reset();
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
  }
};

TEST_F(StopSignalTest, SigintSetsFlagInsteadOfKilling) {
  StopSignal::install();
  StopSignal::reset();
  EXPECT_FALSE(StopSignal::requested());
  EXPECT_EQ(StopSignal::signal_number(), 0);
  ASSERT_EQ(::raise(SIGINT), 0);
  EXPECT_TRUE(StopSignal::requested());
  EXPECT_EQ(StopSignal::signal_number(), SIGINT);
  StopSignal::reset();
  EXPECT_FALSE(StopSignal::requested());
  EXPECT_EQ(StopSignal::signal_number(), 0);
}

TEST_F(StopSignalTest, SigtermSetsFlagAndResetRearms) {
  StopSignal::install();
  StopSignal::reset();
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_EQ(StopSignal::signal_number(), SIGTERM);
  StopSignal::reset();
  ASSERT_EQ(::raise(SIGTERM), 0);  // re-armed by reset(): still only sets the flag
  EXPECT_EQ(StopSignal::signal_number(), SIGTERM);
}

TEST_F(StopSignalTest, SecondSignalOfSameKindKillsTheProcess) {
  EXPECT_EXIT(
      {
        StopSignal::install();
        ::raise(SIGINT);
        if (!StopSignal::requested()) std::_Exit(3);
        ::raise(SIGINT);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

}  // namespace
}  // namespace tdrl::apps
