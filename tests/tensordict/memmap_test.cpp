// TensorDict persistence: memmap_, memmap, memmap_like, load_memmap, save and load (README:
// "TensorDict for parameter serialization and building datasets").

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <torch/cuda.h>

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensordict.h>

#include "support/temp_dir.h"
#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;
using ::testing::IsEmpty;
namespace fs = std::filesystem;

constexpr const char* kTensorDictType = "<class 'tensordict._td.TensorDict'>";

struct PidGains {
  double kp;
  double kd;
};

// Every file under `dir`, by path relative to it, with its bytes.
std::map<std::string, std::string> files_under(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      out[fs::relative(e.path(), dir).string()] = read_file_bytes(e.path().string());
  return out;
}

// Names in `dir` left behind by an interrupted or failed save.
std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos || name.find(".old.") != std::string::npos)
      out.push_back(name);
  }
  return out;
}

// A field of /proc/self/status ("VmRSS", "RssAnon", "RssFile") in bytes.
int64_t proc_status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  ADD_FAILURE() << field << " not in /proc/self/status";
  return 0;
}

void replace_in_file(const std::string& path, const std::string& from, const std::string& to) {
  std::string text = read_file_bytes(path);
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << "'" << from << "' not in " << path;
  text.replace(at, from.size(), to);
  write_file_bytes(path, text);
}

class MemmapTest : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(0); }

  /// A folder holding a hand-written meta.json.
  std::string folder_with_meta(const std::string& text) {
    fs::create_directories(prefix_);
    write_file_bytes(prefix_ + "/meta.json", text);
    return prefix_;
  }

  TempDir dir_;
  const std::string prefix_ = dir_ / "td";
};

TensorDict mixed_dtypes_td() {
  return TensorDict({{"f32", torch::randn({3, 4, 5})},
                     {"f64", torch::randn({3, 4}, torch::kDouble)},
                     {"i64", torch::randint(-1000, 1000, {3, 4, 2}, torch::kLong)},
                     {"u8", torch::randint(0, 256, {3, 4}).to(torch::kByte)},
                     {"flag", torch::randint(0, 2, {3, 4}).to(torch::kBool)}},
                    {3, 4});
}

// ---- round trips --------------------------------------------------------------------------------

TEST_F(MemmapTest, SaveThenLoadGivesTheSameFlatTensorDict) {
  auto td = mixed_dtypes_td();
  td.save(prefix_);
  auto loaded = TensorDict::load(prefix_);
  expect_same(td, loaded);
  EXPECT_TRUE(loaded.allclose(td));
  EXPECT_TRUE(loaded.is_memmap());
}

TEST_F(MemmapTest, EachLeafIsOneRawFileNamedAfterItsKey) {
  auto td = mixed_dtypes_td();
  td.save(prefix_);
  EXPECT_EQ(read_file_bytes(prefix_ + "/f32.memmap").size(), 60u * sizeof(float));
  EXPECT_EQ(read_file_bytes(prefix_ + "/i64.memmap").size(), 24u * sizeof(int64_t));
  auto f64 = td.get("f64");
  EXPECT_EQ(read_file_bytes(prefix_ + "/f64.memmap"),
            std::string(static_cast<const char*>(f64.data_ptr()), 12 * sizeof(double)));
  EXPECT_TRUE(fs::is_regular_file(prefix_ + "/meta.json"));
}

TEST_F(MemmapTest, SaveThenLoadKeepsNestingAndNestedBatchSizesLongerThanTheParent) {
  TensorDict td({{"obs", torch::randn({3, 2})},
                 {"next", TensorDict({{"reward", torch::randn({3, 2, 1})},
                                      {"deeper", {{"x", torch::arange(6).reshape({3, 2})}}}},
                                     {3, 2})}},
                {3});
  td.save(prefix_);
  auto loaded = TensorDict::load(prefix_);
  expect_same(td, loaded);
  EXPECT_EQ(loaded.get_tensordict("next").batch_size(), (BatchSize{3, 2}));
  EXPECT_EQ(loaded.get_tensordict({"next", "deeper"}).batch_size(), (BatchSize{3, 2}));
  EXPECT_TRUE(fs::is_regular_file(prefix_ + "/next/deeper/x.memmap"));
}

TEST_F(MemmapTest, LazyStackLoadsBackAsALazyStackOfHeterogeneousMembers) {
  TensorDict a({{"obs", torch::randn({2, 3})}, {"id", torch::zeros({2}, torch::kLong)}}, {2});
  TensorDict b({{"obs", torch::randn({2, 5})}, {"id", torch::ones({2}, torch::kLong)}}, {2});
  TensorDict stacked = tensordict::stack({a, b}, 1);  // batch [2, 2]
  stacked.save(prefix_);
  auto loaded = TensorDict::load_memmap(prefix_);
  ASSERT_TRUE(loaded.is_lazy_stack());
  EXPECT_EQ(loaded.batch_size(), (BatchSize{2, 2}));
  LazyStackedTensorDict lazy(loaded);
  EXPECT_EQ(lazy.stack_dim(), 1);
  ASSERT_EQ(lazy.tensordicts().size(), 2u);
  EXPECT_EQ(shape_of(lazy.tensordicts()[0].get("obs")), (Shape{2, 3}));
  EXPECT_EQ(shape_of(lazy.tensordicts()[1].get("obs")), (Shape{2, 5}));
  expect_same(stacked, loaded);
  EXPECT_TRUE(torch::equal(loaded.get("id"), stacked.get("id")));
}

TEST_F(MemmapTest, LazyStackNestedInATensorDictLoadsBackAsALazyStack) {
  auto stacked = tensordict::stack(
      {TensorDict({{"x", torch::randn({2})}}, {}), TensorDict({{"x", torch::randn({4})}}, {})});
  TensorDict td({{"members", stacked}, {"y", torch::randn({2, 1})}}, {2});
  td.save(prefix_);
  auto loaded = TensorDict::load(prefix_);
  ASSERT_TRUE(loaded.get_tensordict("members").is_lazy_stack());
  expect_same(td, loaded);
}

TEST_F(MemmapTest, UniformNonTensorValuesKeepTheirTypes) {
  TensorDict td({{"x", torch::zeros({2})}}, {2});
  td.set("name", "walker \"2d\"\n\u00e9");
  td.set_non_tensor("steps", int64_t{-9007199254740993});
  td.set_non_tensor("big", std::numeric_limits<int64_t>::max());
  td.set_non_tensor("gamma", 2.0);
  td.set_non_tensor("third", 1.0 / 3.0);
  td.set_non_tensor("done", false);
  td.save(prefix_);
  auto loaded = TensorDict::load(prefix_);
  expect_same(td, loaded);
  EXPECT_EQ(loaded.get_non_tensor<std::string>("name"), "walker \"2d\"\n\u00e9");
  EXPECT_TRUE(loaded.get_non_tensor("steps").value().type() == typeid(int64_t));
  EXPECT_EQ(loaded.get_non_tensor<int64_t>("steps"), int64_t{-9007199254740993});
  EXPECT_EQ(loaded.get_non_tensor<int64_t>("big"), std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(loaded.get_non_tensor("gamma").value().type() == typeid(double));
  EXPECT_EQ(loaded.get_non_tensor<double>("third"), 1.0 / 3.0);
  EXPECT_TRUE(loaded.get_non_tensor("done").value().type() == typeid(bool));
  EXPECT_EQ(loaded.get_non_tensor("name").batch_size(), BatchSize{2});
}

TEST_F(MemmapTest, PerElementNonTensorValuesRoundTrip) {
  auto positions = torch::tensor({0, 1, 1, 2}, torch::kLong).reshape({2, 2});
  auto labels =
      NonTensorData::per_element({AnyValue("cat"), AnyValue("dog"), AnyValue("cow")}, positions);
  auto scores = NonTensorData::per_element(
      {AnyValue(1), AnyValue(2.5)}, torch::tensor({1, 0, 0, 1}, torch::kLong).reshape({2, 2}));
  TensorDict td({{"x", torch::zeros({2, 2})}, {"label", labels}, {"score", scores}}, {2, 2});
  td.save(prefix_);
  auto loaded = TensorDict::load(prefix_);
  expect_same(td, loaded);
  std::vector<std::string> got;
  for (const auto& v : loaded.get_non_tensor("label").tolist()) got.push_back(v.get<std::string>());
  EXPECT_THAT(got, ElementsAre("cat", "dog", "dog", "cow"));
  EXPECT_TRUE(loaded.get_non_tensor("score").tolist()[0].type() == typeid(double));
  EXPECT_TRUE(loaded.get_non_tensor("score").tolist()[1].type() == typeid(int64_t));
}

TEST_F(MemmapTest, EmptyTensorDictRoundTrips) {
  TensorDict().save(prefix_);
  auto loaded = TensorDict::load(prefix_);
  EXPECT_TRUE(loaded.is_empty());
  EXPECT_EQ(loaded.batch_size(), BatchSize{});
  TensorDict::empty({4, 2}).save(dir_ / "batched");
  EXPECT_EQ(TensorDict::load(dir_ / "batched").batch_size(), (BatchSize{4, 2}));
}

TEST_F(MemmapTest, EmptyBatchSizeRoundTrips) {
  TensorDict td({{"vec", torch::randn({5})}, {"scalar", torch::tensor(7, torch::kLong)}}, {});
  td.save(prefix_);
  expect_same(td, TensorDict::load(prefix_));
}

TEST_F(MemmapTest, ZeroSizedBatchRoundTrips) {
  TensorDict td({{"x", torch::zeros({0, 3})}, {"s", "none yet"}}, {0});
  td.save(prefix_);
  expect_same(td, TensorDict::load(prefix_));
}

TEST_F(MemmapTest, InsertionOrderOfKeysSurvivesARoundTrip) {
  TensorDict td({{"zeta", torch::zeros({2})},
                 {"alpha", {{"z", torch::zeros({2})}, {"a", torch::zeros({2})}}},
                 {"mid", "text"},
                 {"beta", torch::zeros({2})}},
                {2});
  td.save(prefix_);
  auto loaded = TensorDict::load(prefix_);
  EXPECT_THAT(loaded.keys(), ElementsAre("zeta", "alpha", "mid", "beta"));
  EXPECT_THAT(loaded.get_tensordict("alpha").keys(), ElementsAre("z", "a"));
}

TEST_F(MemmapTest, SubfolderLoadsOnItsOwn) {
  // README: TensorDict.load_memmap("/path/to/saved/folder/0") loads one slice of the model.
  TensorDict params({{"0", {{"weight", torch::randn({4, 3})}, {"bias", torch::randn({4})}}},
                     {"1", {{"weight", torch::randn({3, 4})}, {"bias", torch::randn({3})}}}},
                    {});
  params.save(prefix_);
  auto first = TensorDict::load_memmap(prefix_ + "/0");
  expect_same(params.get_tensordict("0"), first);
  auto nested_batch = TensorDict({{"n", TensorDict({{"y", torch::randn({3, 2})}}, {3, 2})}}, {3});
  nested_batch.save(dir_ / "nb");
  EXPECT_EQ(TensorDict::load_memmap(dir_ / "nb/n").batch_size(), (BatchSize{3, 2}));
}

TEST_F(MemmapTest, PrefixWithATrailingSlashIsTheSameFolder) {
  auto td = mixed_dtypes_td();
  td.save(prefix_ + "/");
  expect_same(td, TensorDict::load(prefix_ + "/"));
  expect_same(td, TensorDict::load(prefix_));
  EXPECT_EQ(MemoryMappedTensor::filename(TensorDict::load(prefix_ + "/").get("f32")),
            prefix_ + "/f32.memmap");
  EXPECT_THAT(leftovers(dir_.path()), IsEmpty());
}

// ---- memmap_, memmap, memmap_like ---------------------------------------------------------------

TEST_F(MemmapTest, MemmapInPlaceReplacesEveryLeafByAMappedTensor) {
  auto td = mixed_dtypes_td();
  td.set({"nested", "x"}, torch::randn({3, 4, 2}));
  const auto before = td.clone();
  td.memmap_(prefix_);
  EXPECT_TRUE(td.is_memmap());
  EXPECT_EQ(MemoryMappedTensor::filename(td.get("f32")), prefix_ + "/f32.memmap");
  EXPECT_EQ(MemoryMappedTensor::filename(td.get({"nested", "x"})), prefix_ + "/nested/x.memmap");
  expect_same(before, td);
}

TEST_F(MemmapTest, WritesAfterMemmapInPlaceReachTheFiles) {
  TensorDict td({{"a", torch::zeros({4, 3})}, {"n", {{"b", torch::zeros({4}, torch::kLong)}}}},
                {4});
  td.memmap_(prefix_);
  td.set_("a", torch::ones({4, 3}));
  td.index_put_({2}, TensorDict({{"n", {{"b", torch::tensor(5, torch::kLong)}}}}, {}));
  td.get({"n", "b"}).index_put_({0}, 7);
  auto again = TensorDict::load_memmap(prefix_);
  EXPECT_TRUE(torch::equal(again.get("a"), torch::ones({4, 3})));
  EXPECT_TRUE(torch::equal(again.get({"n", "b"}), torch::tensor({7, 0, 5, 0}, torch::kLong)));
}

TEST_F(MemmapTest, MemmapInPlaceOfALazyStackMapsEveryMember) {
  TensorDict a({{"obs", torch::randn({3})}}, {});
  TensorDict b({{"obs", torch::randn({5})}}, {});
  auto stacked = TensorDict(tensordict::stack({a, b}));
  stacked.memmap_(prefix_);
  EXPECT_TRUE(stacked.is_memmap());
  EXPECT_TRUE(MemoryMappedTensor::is_memmap(a.get("obs")));
  b.set_("obs", torch::full({5}, 2.0f));
  auto again = LazyStackedTensorDict(TensorDict::load_memmap(prefix_));
  EXPECT_TRUE(torch::equal(again.tensordicts()[1].get("obs"), torch::full({5}, 2.0f)));
}

TEST_F(MemmapTest, MemmapReturnsAMappedCopyAndLeavesTheSourceUnchanged) {
  auto td = mixed_dtypes_td();
  const auto before = td.clone();
  auto mapped = td.memmap(prefix_);
  EXPECT_TRUE(mapped.is_memmap());
  EXPECT_FALSE(td.is_memmap());
  EXPECT_FALSE(MemoryMappedTensor::is_memmap(td.get("f32")));
  expect_same(before, mapped);
  mapped.fill_("f32", 0.0);
  expect_same(before, td);
  td.fill_("f64", 1.0);
  EXPECT_TRUE(torch::equal(mapped.get("f64"), before.get("f64")));
}

TEST_F(MemmapTest, MemmapLikeGivesZeroFilledFilesOfTheSameShapesAndCopiesNothing) {
  auto td = mixed_dtypes_td();
  td.set({"nested", "x"}, torch::randn({3, 4, 2}));
  auto like = td.memmap_like(prefix_);
  EXPECT_TRUE(like.is_memmap());
  EXPECT_FALSE(td.is_memmap());
  EXPECT_EQ(like.batch_size(), td.batch_size());
  EXPECT_EQ(like.keys(true, true), td.keys(true, true));
  for (const auto& key : td.keys(true, true)) {
    SCOPED_TRACE(key.to_string());
    auto t = like.get(key);
    EXPECT_EQ(t.scalar_type(), td.get(key).scalar_type());
    EXPECT_EQ(shape_of(t), shape_of(td.get(key)));
    EXPECT_TRUE(torch::equal(t, torch::zeros_like(t)));
  }
  EXPECT_EQ(read_file_bytes(prefix_ + "/f32.memmap"), std::string(60 * sizeof(float), '\0'));
  EXPECT_EQ(read_file_bytes(prefix_ + "/nested/x.memmap"), std::string(24 * sizeof(float), '\0'));
}

TEST_F(MemmapTest, ReadmeDatasetIsAllocatedFilledInChunksAndGatheredByIndex) {
  // README: data = TensorDict({"images": zeros(128, 128, 3, uint8), "labels": zeros((), int)},
  // batch_size=[]).expand(1000000).memmap_like(path); fill; data[torch.tensor([1, 10000, ...])]
  constexpr int64_t kRows = 1000;
  constexpr int64_t kChunk = 128;
  TensorDict row({{"images", torch::zeros({16, 16, 3}, torch::kByte)},
                  {"labels", torch::zeros({}, torch::kInt)}},
                 {});
  auto data = row.expand({kRows}).memmap_like(prefix_);
  EXPECT_EQ(data.batch_size(), BatchSize{kRows});
  EXPECT_EQ(fs::file_size(prefix_ + "/images.memmap"), uint64_t(kRows * 16 * 16 * 3));
  EXPECT_EQ(fs::file_size(prefix_ + "/labels.memmap"), uint64_t(kRows * 4));
  for (int64_t start = 0; start < kRows; start += kChunk) {
    const int64_t n = std::min(kChunk, kRows - start);
    auto ids = torch::arange(start, start + n, torch::kInt);
    TensorDict chunk(
        {{"images", (ids % 256).to(torch::kByte).view({n, 1, 1, 1}).expand({n, 16, 16, 3})},
         {"labels", ids}},
        {n});
    data.index_put_({Slice(start, start + n)}, chunk);
  }
  data = TensorDict();  // unmaps
  auto reloaded = TensorDict::load_memmap(prefix_);
  auto rows = reloaded.index({torch::tensor({1, 500, 999}, torch::kLong)});
  EXPECT_EQ(rows.batch_size(), BatchSize{3});
  EXPECT_TRUE(torch::equal(rows.get("labels"), torch::tensor({1, 500, 999}, torch::kInt)));
  auto images = rows.get("images");
  EXPECT_EQ(shape_of(images), (Shape{3, 16, 16, 3}));
  EXPECT_TRUE(torch::equal(images[0], torch::full({16, 16, 3}, 1, torch::kByte)));
  EXPECT_TRUE(torch::equal(images[1], torch::full({16, 16, 3}, 500 % 256, torch::kByte)));
  EXPECT_TRUE(torch::equal(images[2], torch::full({16, 16, 3}, 999 % 256, torch::kByte)));
}

TEST_F(MemmapTest, MemmapToTheSamePrefixTwiceKeepsTheFirstMappingReadable) {
  TensorDict first({{"a", torch::arange(6, torch::kFloat)}}, {});
  TensorDict second({{"a", -torch::arange(6, torch::kFloat)}, {"b", torch::ones({2})}}, {});
  first.memmap_(prefix_);
  auto first_a = first.get("a");
  second.memmap_(prefix_);
  EXPECT_TRUE(torch::equal(first_a, torch::arange(6, torch::kFloat)));
  first_a.fill_(9.0);  // writes to the replaced (unlinked) file only
  auto loaded = TensorDict::load(prefix_);
  expect_same(second, loaded);
  EXPECT_THAT(leftovers(dir_.path()), IsEmpty());
}

TEST_F(MemmapTest, MemmapInPlaceAgainToItsOwnPrefixRewritesFromTheMappedFiles) {
  TensorDict td({{"a", torch::arange(6, torch::kFloat)}, {"n", {{"b", torch::ones({2})}}}}, {});
  td.memmap_(prefix_);
  td.fill_("a", 4.0);
  td.memmap_(prefix_);
  EXPECT_TRUE(td.is_memmap());
  EXPECT_TRUE(torch::equal(td.get("a"), torch::full({6}, 4.0f)));
  expect_same(td, TensorDict::load(prefix_));
  EXPECT_THAT(leftovers(dir_.path()), IsEmpty());
}

TEST_F(MemmapTest, OneAndFourThreadsWriteTheSameFiles) {
  auto td = mixed_dtypes_td();
  td.set({"nested", "x"}, torch::randn({3, 4, 7}));
  td.set({"nested", "y"}, torch::randn({3, 4}));
  td.set("s", "text");
  td.save(dir_ / "one", 1);
  td.save(dir_ / "four", 4);
  const auto one = files_under(dir_.path() / "one");
  EXPECT_EQ(one.size(), 10u);  // 7 leaves; the meta.json of the root, "nested" and "s"
  EXPECT_TRUE(one == files_under(dir_.path() / "four"));
  expect_same(td, TensorDict::load(dir_ / "four"));
}

TEST_F(MemmapTest, ReadOnlyLoadKeepsWritesOutOfTheFiles) {
  auto td = mixed_dtypes_td();
  td.save(prefix_);
  auto loaded = TensorDict::load_memmap(prefix_, MemmapMode::kReadOnly);
  EXPECT_TRUE(loaded.is_memmap());
  loaded.set_("f32", torch::zeros({3, 4, 5}));
  loaded.fill_("i64", 1);
  EXPECT_TRUE(torch::equal(loaded.get("f32"), torch::zeros({3, 4, 5})));
  expect_same(td, TensorDict::load_memmap(prefix_));
}

TEST_F(MemmapTest, SuccessfulSaveLeavesNoTemporaryFolders) {
  mixed_dtypes_td().save(prefix_);
  mixed_dtypes_td().save(prefix_);
  EXPECT_THAT(leftovers(dir_.path()), IsEmpty());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator()), 1);
}

// ---- a dataset larger than the chunks it is filled with -----------------------------------------

TEST_F(MemmapTest, LargeDatasetIsFilledInChunksAndLoadedWithoutReadingItIn) {
  // 90112 rows of a 32x32x3 uint8 image and an int32 label: 264 MiB on disk, filled 4096
  // rows (12 MiB) at a time.
  constexpr int64_t kRows = 22 * 4096;
  constexpr int64_t kChunk = 4096;
  constexpr int64_t kMiB = 1 << 20;
  const int64_t data_bytes = kRows * (32 * 32 * 3 + 4);
  ASSERT_GE(data_bytes, 256 * kMiB);
  TensorDict row({{"images", torch::zeros({32, 32, 3}, torch::kByte)},
                  {"labels", torch::zeros({}, torch::kInt)}},
                 {});
  auto images = torch::zeros({kChunk, 32, 32, 3}, torch::kByte);  // touched before measuring

  const int64_t anon_before_fill = proc_status_bytes("RssAnon");
  const int64_t rss_before_fill = proc_status_bytes("VmRSS");
  int64_t anon_growth = 0;
  int64_t rss_growth = 0;
  {
    auto data = row.expand({kRows}).memmap_like(prefix_);
    for (int64_t start = 0; start < kRows; start += kChunk) {
      images.fill_(start / kChunk);
      auto labels = torch::arange(start, start + kChunk, torch::kInt);
      data.index_put_({Slice(start, start + kChunk)},
                      TensorDict({{"images", images}, {"labels", labels}}, {kChunk}));
      MemoryMappedTensor::flush(data.get("images"));
      MemoryMappedTensor::flush(data.get("labels"));
      anon_growth = std::max(anon_growth, proc_status_bytes("RssAnon") - anon_before_fill);
      rss_growth = std::max(rss_growth, proc_status_bytes("VmRSS") - rss_before_fill);
    }
  }
  RecordProperty("fill_vmrss_growth_mib", std::to_string(rss_growth / kMiB));
  RecordProperty("fill_rssanon_growth_mib", std::to_string(anon_growth / kMiB));
  // Written pages of a shared file mapping count as resident (RssFile) until unmapped, even
  // after msync, so only the process's own memory is bounded while filling: no copy of the
  // dataset is made.
  EXPECT_LT(anon_growth, data_bytes / 4);
  EXPECT_EQ(fs::file_size(prefix_ + "/images.memmap"), uint64_t(kRows * 32 * 32 * 3));

  const int64_t rss_before_load = proc_status_bytes("VmRSS");
  const auto start_time = std::chrono::steady_clock::now();
  auto loaded = TensorDict::load_memmap(prefix_);
  auto rows = loaded.index({torch::tensor({int64_t{0}, 5 * kChunk + 7, kRows - 1})});
  const auto load_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start_time)
                           .count();
  const int64_t load_growth = proc_status_bytes("VmRSS") - rss_before_load;
  RecordProperty("load_vmrss_growth_kib", std::to_string(load_growth / 1024));
  RecordProperty("load_and_gather_ms", std::to_string(load_ms));
  EXPECT_LT(load_growth, 16 * kMiB);
  EXPECT_TRUE(torch::equal(rows.get("labels"),
                           torch::tensor({0, 5 * 4096 + 7, 22 * 4096 - 1}, torch::kInt)));
  auto gathered = rows.get("images");
  EXPECT_TRUE(torch::equal(gathered[0], torch::zeros({32, 32, 3}, torch::kByte)));
  EXPECT_TRUE(torch::equal(gathered[1], torch::full({32, 32, 3}, 5, torch::kByte)));
  EXPECT_TRUE(torch::equal(gathered[2], torch::full({32, 32, 3}, 21, torch::kByte)));
  rows = TensorDict();
  loaded = TensorDict();
  fs::remove_all(prefix_);
}

// ---- loading bad folders ------------------------------------------------------------------------

TEST_F(MemmapTest, LoadOfAMissingFolderThrowsNamingIt) {
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(prefix_), HasSubstr("not a folder"))));
}

TEST_F(MemmapTest, LoadOfAFolderWithoutMetaJsonThrowsNamingTheFile) {
  fs::create_directories(prefix_);
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(HasSubstr(prefix_ + "/meta.json")));
}

TEST_F(MemmapTest, LoadOfMalformedJsonThrowsNamingTheFile) {
  folder_with_meta("{\"batch_size\": [3,");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/meta.json"), HasSubstr("JSON"))));
}

TEST_F(MemmapTest, LoadOfMetaJsonWithoutBatchSizeThrowsNamingTheFile) {
  folder_with_meta(std::string("{\"_type\": \"") + kTensorDictType + "\", \"device\": \"None\"}");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/meta.json"),
                                         HasSubstr("no 'shape' (the batch size"))));
}

TEST_F(MemmapTest, LoadOfMetaJsonWithAWrongFieldTypeThrowsNamingTheFile) {
  for (const std::string text :
       {"[]", "{\"batch_size\": 3}", "{\"batch_size\": [-1]}", "{\"batch_size\": [1.5]}",
        "{\"batch_size\": [], \"x\": 1}",
        "{\"batch_size\": [], \"x\": {\"dtype\": \"torch.int64\"}}",
        "{\"batch_size\": [], \"x\": {\"shape\": [2], \"dtype\": 7}}",
        "{\"batch_size\": [], \"device\": 0}", "{\"batch_size\": [], \"device\": \"gpu:x\"}"}) {
    SCOPED_TRACE(text);
    folder_with_meta(text);
    EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
                ThrowsMessage<Error>(HasSubstr(prefix_ + "/meta.json")));
  }
}

TEST_F(MemmapTest, LoadOfAnUnknownDtypeThrowsNamingTheFileAndTheDtype) {
  TensorDict({{"a", torch::zeros({3})}}, {3}).save(prefix_);
  replace_in_file(prefix_ + "/meta.json", "torch.float32", "torch.float8");
  EXPECT_THAT(
      [&] { TensorDict::load_memmap(prefix_); },
      ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/meta.json"), HasSubstr("torch.float8"))));
}

TEST_F(MemmapTest, LoadOfALeafFileOfTheWrongSizeNamesTheFileAndBothSizes) {
  TensorDict({{"a", torch::zeros({3, 4})}}, {3}).save(prefix_);
  fs::resize_file(prefix_ + "/a.memmap", 5);
  EXPECT_THAT(
      [&] { TensorDict::load_memmap(prefix_); },
      ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/a.memmap"), HasSubstr("holds 5 bytes"),
                                 HasSubstr("needs 48"), Not(HasSubstr("batch_size")))));
}

TEST_F(MemmapTest, LoadWithAMissingLeafFileThrowsNamingIt) {
  TensorDict({{"a", torch::zeros({3})}, {"n", {{"b", torch::zeros({3})}}}}, {3}).save(prefix_);
  fs::remove(prefix_ + "/n/b.memmap");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(HasSubstr(prefix_ + "/n/b.memmap")));
}

TEST_F(MemmapTest, LoadOfALeafThatDoesNotFitTheBatchSizeThrowsNamingTheFile) {
  TensorDict({{"a", torch::zeros({3})}}, {3}).save(prefix_);
  replace_in_file(prefix_ + "/meta.json", "\"shape\": [\n    3\n  ]", "\"shape\": [\n    4\n  ]");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(
                  AllOf(HasSubstr(prefix_ + "/meta.json"), HasSubstr("'a'"), HasSubstr("[4]"))));
}

TEST_F(MemmapTest, LoadOfALazyStackWithAMissingMemberThrowsNamingTheFolder) {
  tensordict::stack(
      {TensorDict({{"x", torch::zeros({2})}}, {}), TensorDict({{"x", torch::zeros({2})}}, {})})
      .save(prefix_);
  fs::remove_all(prefix_ + "/1");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(HasSubstr(prefix_ + "/1")));
}

TEST_F(MemmapTest, LoadRejectsAKeyOrderThatLeavesTheFolder) {
  // A listed key that is neither a leaf nor a value is a subfolder: "." or ".." must not
  // load the folder itself (endless recursion) or its parent.
  for (const std::string key : {".", "..", "a/b", "../td"}) {
    SCOPED_TRACE(key);
    folder_with_meta("{\"batch_size\": [], \"_tdrl\": {\"order\": [\"" + key + "\"]}}");
    EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
                ThrowsMessage<Error>(HasSubstr(prefix_ + "/meta.json")));
  }
}

TEST_F(MemmapTest, LoadOfAFolderSavedOnAnUnavailableDeviceThrowsError) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "needs a machine without CUDA";
  TensorDict({{"a", torch::zeros({3})}}, {3}).save(prefix_);
  replace_in_file(prefix_ + "/meta.json", "\"device\": \"None\"", "\"device\": \"cuda:0\"");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<tensordict::DeviceError>(
                  AllOf(HasSubstr(prefix_ + "/meta.json"), HasSubstr("cuda:0"))));
}

// ---- saving bad input ---------------------------------------------------------------------------

TEST_F(MemmapTest, SaveToAPrefixThatIsARegularFileThrowsAndKeepsTheFile) {
  write_file_bytes(prefix_, "precious");
  EXPECT_THAT([&] { mixed_dtypes_td().save(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(prefix_), HasSubstr("not a folder"))));
  EXPECT_EQ(read_file_bytes(prefix_), "precious");
  EXPECT_THAT(leftovers(dir_.path()), IsEmpty());
}

TEST_F(MemmapTest, SaveIntoAReadOnlyFolderThrowsNamingThePath) {
  const fs::path parent = dir_.path() / "locked";
  fs::create_directories(parent);
  ASSERT_EQ(chmod(parent.c_str(), 0555), 0);
  if (access(parent.c_str(), W_OK) == 0) {
    chmod(parent.c_str(), 0755);
    GTEST_SKIP() << "the folder stays writable (running as root)";
  }
  const std::string prefix = (parent / "td").string();
  EXPECT_THAT([&] { mixed_dtypes_td().save(prefix); }, ThrowsMessage<Error>(HasSubstr(prefix)));
  chmod(parent.c_str(), 0755);
  EXPECT_FALSE(fs::exists(prefix));
  EXPECT_THAT(leftovers(parent), IsEmpty());
}

TEST_F(MemmapTest, KeysThatAreNoFileNamesAreSavedUnderPythonsPercentEncodedNames) {
  TensorDict td({{"a/b", torch::zeros({2})},
                 {"..", torch::ones({2})},
                 {".", torch::full({2}, 2.0f)},
                 {"50%", torch::full({2}, 3.0f)},
                 {"n/../m", {{"c d", torch::zeros({2})}}}},
                {2});
  td.set("s/t", "text");
  td.save(prefix_);
  for (const char* file : {"a%2Fb.memmap", "%2E%2E.memmap", "%2E.memmap", "50%25.memmap",
                           "n%2F..%2Fm/c%20d.memmap", "s%2Ft/meta.json"})
    EXPECT_TRUE(fs::is_regular_file(fs::path(prefix_) / file)) << file;
  // Nothing beside the folder: no key leads out of it.
  std::vector<std::string> beside;
  for (const auto& e : fs::directory_iterator(dir_.path()))
    beside.push_back(e.path().filename().string());
  EXPECT_THAT(beside, ElementsAre("td"));
  expect_same(td, TensorDict::load_memmap(prefix_));
}

TEST_F(MemmapTest, SaveOfAReservedKeyThrowsAndWritesNothing) {
  TensorDict td({{"shape", torch::zeros({2})}}, {2});
  EXPECT_THAT([&] { td.save(prefix_); }, ThrowsMessage<ValueError>(HasSubstr("'shape'")));
  EXPECT_FALSE(fs::exists(prefix_));
}

TEST_F(MemmapTest, SaveOfACustomNonTensorValueThrowsAndWritesNothing) {
  TensorDict td({{"x", torch::zeros({2})}}, {2});
  td.set_non_tensor({"cfg", "gains"}, PidGains{1.0, 0.1});
  EXPECT_THAT([&] { td.save(prefix_); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("'gains'"), HasSubstr("PidGains"))));
  EXPECT_FALSE(fs::exists(prefix_));
  EXPECT_THAT(leftovers(dir_.path()), IsEmpty());
}

TEST_F(MemmapTest, SaveOfANonFiniteFloatingValueThrowsRatherThanWriteAnUnloadableFolder) {
  // JSON has no NaN or infinity: a folder holding one could not be loaded back.
  for (double v :
       {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity()}) {
    TensorDict td({{"x", torch::zeros({2})}}, {2});
    td.set_non_tensor("score", v);
    EXPECT_THAT([&] { td.save(prefix_); },
                ThrowsMessage<ValueError>(AllOf(HasSubstr("'score'"), HasSubstr("finite"))));
    EXPECT_FALSE(fs::exists(prefix_));
  }
}

TEST_F(MemmapTest, SaveOfAKeyOrStringThatIsNotUtf8ThrowsValueErrorAndWritesNothing) {
  TensorDict bad_key({{"x\xff", torch::zeros({2})}}, {2});
  EXPECT_THAT([&] { bad_key.save(prefix_); }, ThrowsMessage<ValueError>(HasSubstr("UTF-8")));
  TensorDict bad_value({{"x", torch::zeros({2})}, {"s", "caf\xe9"}}, {2});
  EXPECT_THAT([&] { bad_value.save(prefix_); }, ThrowsMessage<ValueError>(HasSubstr("UTF-8")));
  EXPECT_FALSE(fs::exists(prefix_));
  EXPECT_THAT(leftovers(dir_.path()), IsEmpty());
}

TEST_F(MemmapTest, FailedSaveKeepsThePreviousFolderAndMemmapInPlaceLeavesTheTensorDict) {
  auto good = mixed_dtypes_td();
  good.save(prefix_);
  TensorDict bad({{"x", torch::zeros({3, 4})}}, {3, 4});
  bad.set_non_tensor("gains", PidGains{1.0, 0.1});
  EXPECT_THROW(bad.memmap_(prefix_), ValueError);
  EXPECT_FALSE(MemoryMappedTensor::is_memmap(bad.get("x")));
  expect_same(good, TensorDict::load(prefix_));
  EXPECT_THAT(leftovers(dir_.path()), IsEmpty());
}

TEST_F(MemmapTest, SaveOfASubTensordictViewThrows) {
  auto td = mixed_dtypes_td();
  auto view = td.get_sub_tensordict({torch::tensor({0, 2}, torch::kLong)});
  EXPECT_THAT([&] { view.save(prefix_); }, ThrowsMessage<Error>(HasSubstr("sub-tensordict")));
  EXPECT_FALSE(fs::exists(prefix_));
  EXPECT_THAT(leftovers(dir_.path()), IsEmpty());
}

}  // namespace
