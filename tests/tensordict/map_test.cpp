// TensorDict::map: chunks of dim 0 on a pool of threads.

#include <atomic>
#include <filesystem>
#include <stdexcept>

#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;
using tensordict::MapOptions;

TensorDict rows(int64_t n) {
  return TensorDict({{"x", torch::arange(n * 2, torch::kFloat).reshape({n, 2})},
                     {"n", {{"y", torch::arange(n, torch::kLong)}}}},
                    {n});
}

TensorDict doubled(const TensorDict& chunk) {
  return chunk.apply([](const torch::Tensor& t) { return t * 2; });
}

TEST(TensorDictMapTest, GathersTheResultsOfEveryChunkInOrder) {
  auto td = rows(10);
  MapOptions options;
  options.num_workers = 2;
  options.chunk_size = 3;
  auto out = td.map(doubled, options);
  EXPECT_EQ(out.batch_size(), (BatchSize{10}));
  EXPECT_TRUE(torch::equal(out.get("x"), td.get("x") * 2));
  EXPECT_TRUE(torch::equal(out.get({"n", "y"}), td.get({"n", "y"}) * 2));
}

TEST(TensorDictMapTest, SplitsIntoOneChunkPerWorkerByDefault) {
  auto td = rows(8);
  std::atomic<int> calls{0};
  MapOptions options;
  options.num_workers = 4;
  td.map(
      [&](const TensorDict& chunk) {
        EXPECT_EQ(chunk.batch_size(), (BatchSize{2}));
        ++calls;
        return chunk.clone();
      },
      options);
  EXPECT_EQ(calls.load(), 4);
}

TEST(TensorDictMapTest, ReportsProgressOncePerChunk) {
  auto td = rows(7);
  MapOptions options;
  options.num_workers = 2;
  options.chunk_size = 2;
  std::vector<std::pair<int64_t, int64_t>> seen;
  options.progress = [&](int64_t done, int64_t total) { seen.emplace_back(done, total); };
  td.map(doubled, options);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen.back(), (std::pair<int64_t, int64_t>{4, 4}));
}

TEST(TensorDictMapTest, ChunksAreViewsSoInPlaceWritesReachTheSource) {
  auto td = rows(6);
  MapOptions options;
  options.num_workers = 2;
  options.chunk_size = 2;
  auto out = td.map(
      [](const TensorDict& chunk) {
        chunk.get("x").mul_(-1);
        return TensorDict();
      },
      options);
  EXPECT_TRUE(out.is_same(td));
  EXPECT_TRUE(torch::equal(td.get("x"), -torch::arange(12, torch::kFloat).reshape({6, 2})));
}

TEST(TensorDictMapTest, AnErrorInAWorkerReachesTheCaller) {
  auto td = rows(8);
  MapOptions options;
  options.num_workers = 2;
  options.chunk_size = 1;
  EXPECT_THAT(
      [&] {
        td.map(
            [](const TensorDict& chunk) -> TensorDict {
              if (chunk.get({"n", "y"}).item<int64_t>() == 5) throw std::runtime_error("bad row 5");
              return chunk.clone();
            },
            options);
      },
      ThrowsMessage<std::runtime_error>(HasSubstr("bad row 5")));
}

TEST(TensorDictMapTest, WritesResultsIntoAMemoryMappedSource) {
  const auto dir = std::filesystem::temp_directory_path() / "tdrl_map_test_memmap";
  std::filesystem::remove_all(dir);
  auto td = rows(6).memmap(dir.string());
  ASSERT_TRUE(td.is_memmap());
  MapOptions options;
  options.num_workers = 2;
  options.chunk_size = 4;
  auto out = td.map(doubled, options);
  EXPECT_TRUE(out.is_same(td));
  auto reloaded = TensorDict::load_memmap(dir.string());
  EXPECT_TRUE(
      torch::equal(reloaded.get("x"), torch::arange(12, torch::kFloat).reshape({6, 2}) * 2));
  std::filesystem::remove_all(dir);
}

TEST(TensorDictMapTest, RejectsABatchWithoutDims) {
  TensorDict td({{"x", torch::zeros({3})}}, {});
  EXPECT_THAT([&] { td.map(doubled); }, ThrowsMessage<ValueError>(HasSubstr("batch_size []")));
}

TEST(TensorDictMapTest, RejectsZeroWorkersAndNegativeChunks) {
  auto td = rows(4);
  MapOptions zero;
  zero.num_workers = 0;
  EXPECT_THAT([&] { td.map(doubled, zero); }, ThrowsMessage<ValueError>(HasSubstr("num_workers")));
  MapOptions negative;
  negative.chunk_size = -1;
  EXPECT_THAT([&] { td.map(doubled, negative); },
              ThrowsMessage<ValueError>(HasSubstr("chunk_size")));
}

}  // namespace
