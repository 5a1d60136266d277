// Indexing a TensorDict along its batch dims: index, index_put_ (lazy preallocation
// included) and set_at_. Ports the indexing examples of the tutorial, the overview and the
// README.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include <tensordict/tensordict.h>

#include "support/tensordict_fixtures.h"

namespace tensordict {
namespace {

using namespace tensordict::testing;

// A TensorDict of batch [3] whose nested TensorDict has the longer batch size [3, 4].
TensorDict nested_batch3_td() {
  auto nested = TensorDict({{"x", torch::randn({3, 4, 2})}}, {3, 4});
  return TensorDict({{"obs", torch::randn({3, 6})}, {"n", nested}}, {3});
}

// ---- Basic indexing ------------------------------------------------------------------------

TEST(IndexingTest, IntegerIndexDropsFirstBatchDim) {
  // tutorial: tensordict[0]
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto first = td.index({0});
  EXPECT_EQ(first.batch_size(), (BatchSize{4}));
  EXPECT_EQ(shape_of(first.get("a")), (Shape{4, 5}));
  EXPECT_EQ(shape_of(first.get("b")), (Shape{4}));
  EXPECT_TRUE(torch::equal(first.get("a"), td.get("a")[0]));
  EXPECT_TRUE(torch::equal(first.get("b"), td.get("b")[0]));
}

TEST(IndexingTest, NegativeIntegerIndexCountsFromTheEnd) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto last = td.index({-1});
  EXPECT_EQ(last.batch_size(), (BatchSize{4}));
  EXPECT_TRUE(torch::equal(last.get("a"), td.get("a")[2]));
}

TEST(IndexingTest, TwoIntegersGiveEmptyBatchSize) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto elem = td.index({1, 2});
  EXPECT_EQ(elem.batch_size(), (BatchSize{}));
  EXPECT_EQ(shape_of(elem.get("a")), (Shape{5}));
  EXPECT_EQ(shape_of(elem.get("b")), (Shape{}));
  EXPECT_TRUE(torch::equal(elem.get("a"), td.get("a").index({1, 2})));
  EXPECT_EQ(elem.get("b").item<float>(), td.get("b").index({1, 2}).item<float>());
}

TEST(IndexingTest, SliceOnFirstDimKeepsRemainingRows) {
  // tutorial: tensordict[1:]
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto rest = td.index({Slice(1, None)});
  EXPECT_EQ(rest.batch_size(), (BatchSize{2, 4}));
  EXPECT_EQ(shape_of(rest.get("a")), (Shape{2, 4, 5}));
  EXPECT_EQ(shape_of(rest.get("b")), (Shape{2, 4}));
  EXPECT_TRUE(torch::equal(rest.get("a"), td.get("a").slice(0, 1)));
}

TEST(IndexingTest, SliceOnSecondDim) {
  // tutorial: tensordict[:, 2:]
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto cols = td.index({Slice(), Slice(2, None)});
  EXPECT_EQ(cols.batch_size(), (BatchSize{3, 2}));
  EXPECT_EQ(shape_of(cols.get("a")), (Shape{3, 2, 5}));
  EXPECT_EQ(shape_of(cols.get("b")), (Shape{3, 2}));
  EXPECT_TRUE(torch::equal(cols.get("b"), td.get("b").slice(1, 2)));
}

TEST(IndexingTest, SliceWithStep) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto even = td.index({Slice(), Slice(None, None, 2)});
  EXPECT_EQ(even.batch_size(), (BatchSize{3, 2}));
  EXPECT_TRUE(torch::equal(even.get("a"), td.get("a").index({Slice(), Slice(None, None, 2)})));
}

TEST(IndexingTest, EllipsisStandsForBatchDimsOnly) {
  // README: data[..., :2] on batch [3, 4] slices the last *batch* dim, not the feature dim.
  auto data = TensorDict(
      {{"key 1", torch::ones({3, 4, 5})}, {"key 2", torch::zeros({3, 4, 5}, torch::kBool)}},
      {3, 4});
  auto sub = data.index({Ellipsis, Slice(None, 2)});
  EXPECT_EQ(sub.batch_size(), (BatchSize{3, 2}));
  EXPECT_EQ(shape_of(sub.get("key 1")), (Shape{3, 2, 5}));
  EXPECT_EQ(shape_of(sub.get("key 2")), (Shape{3, 2, 5}));
  EXPECT_EQ(sub.get("key 2").scalar_type(), torch::kBool);
}

TEST(IndexingTest, EllipsisFollowedByIntegerIndexesLastBatchDim) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto col = td.index({Ellipsis, 1});
  EXPECT_EQ(col.batch_size(), (BatchSize{3}));
  EXPECT_EQ(shape_of(col.get("a")), (Shape{3, 5}));
  EXPECT_TRUE(torch::equal(col.get("a"), td.get("a").select(1, 1)));
}

TEST(IndexingTest, LoneEllipsisKeepsEverything) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto all = td.index({Ellipsis});
  EXPECT_EQ(all.batch_size(), (BatchSize{3, 4}));
  EXPECT_TRUE(torch::equal(all.get("a"), td.get("a")));
}

TEST(IndexingTest, NoneInsertsBatchDimOfSizeOne) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto lead = td.index({None});
  EXPECT_EQ(lead.batch_size(), (BatchSize{1, 3, 4}));
  EXPECT_EQ(shape_of(lead.get("a")), (Shape{1, 3, 4, 5}));

  auto middle = td.index({Slice(), None});
  EXPECT_EQ(middle.batch_size(), (BatchSize{3, 1, 4}));
  EXPECT_EQ(shape_of(middle.get("a")), (Shape{3, 1, 4, 5}));
  EXPECT_EQ(shape_of(middle.get("b")), (Shape{3, 1, 4}));
}

TEST(IndexingTest, NoneAfterEllipsisGoesAfterLastBatchDim) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto out = td.index({Ellipsis, None});
  EXPECT_EQ(out.batch_size(), (BatchSize{3, 4, 1}));
  EXPECT_EQ(shape_of(out.get("a")), (Shape{3, 4, 1, 5}));
}

// ---- Masks and index tensors -----------------------------------------------------------------

TEST(IndexingTest, TwoDimMaskFlattensBothBatchDims) {
  // tutorial: a [3, 4] mask selecting columns 0 and 2 of every row gives batch [6].
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto mask = torch::tensor({1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}).reshape({3, 4}).to(torch::kBool);
  auto picked = td.index({mask});
  EXPECT_EQ(picked.batch_size(), (BatchSize{6}));
  EXPECT_EQ(shape_of(picked.get("a")), (Shape{6, 5}));
  EXPECT_EQ(shape_of(picked.get("b")), (Shape{6}));
  EXPECT_TRUE(torch::equal(picked.get("a"), td.get("a").index({mask})));
  EXPECT_TRUE(torch::equal(picked.get("b")[1], td.get("b").index({0, 2})));
}

TEST(IndexingTest, OneDimMaskSelectsRowsOfFirstBatchDim) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto mask = torch::tensor({true, false, true});
  auto rows = td.index({mask});
  EXPECT_EQ(rows.batch_size(), (BatchSize{2, 4}));
  EXPECT_EQ(shape_of(rows.get("a")), (Shape{2, 4, 5}));
  EXPECT_TRUE(torch::equal(rows.get("a")[1], td.get("a")[2]));
}

TEST(IndexingTest, MaskAfterSliceAppliesToLaterBatchDim) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto mask = torch::tensor({false, true, true, false});
  auto cols = td.index({Slice(), mask});
  EXPECT_EQ(cols.batch_size(), (BatchSize{3, 2}));
  EXPECT_EQ(shape_of(cols.get("a")), (Shape{3, 2, 5}));
  EXPECT_TRUE(torch::equal(cols.get("a"), td.get("a").index({Slice(), mask})));
}

TEST(IndexingTest, AllFalseMaskGivesEmptyBatch) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto none = td.index({torch::zeros({3}, torch::kBool)});
  EXPECT_EQ(none.batch_size(), (BatchSize{0, 4}));
  EXPECT_EQ(shape_of(none.get("a")), (Shape{0, 4, 5}));
}

TEST(IndexingTest, IndexTensorGathersRowsInGivenOrder) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto idx = torch::tensor({2, 0, 2});
  auto rows = td.index({idx});
  EXPECT_EQ(rows.batch_size(), (BatchSize{3, 4}));
  EXPECT_TRUE(torch::equal(rows.get("a")[0], td.get("a")[2]));
  EXPECT_TRUE(torch::equal(rows.get("a")[1], td.get("a")[0]));
  EXPECT_TRUE(torch::equal(rows.get("b")[2], td.get("b")[2]));
}

TEST(IndexingTest, IndexTensorOnSecondBatchDim) {
  // tutorial: tensordict[:, torch.tensor([1, 3])]
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto cols = td.index({Slice(), torch::tensor({1, 3})});
  EXPECT_EQ(cols.batch_size(), (BatchSize{3, 2}));
  EXPECT_EQ(shape_of(cols.get("a")), (Shape{3, 2, 5}));
  EXPECT_TRUE(torch::equal(cols.get("a").select(1, 1), td.get("a").select(1, 3)));
}

TEST(IndexingTest, TwoDimIndexTensorAddsBatchDims) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto idx = torch::tensor({0, 1, 2, 1}).reshape({2, 2});
  auto out = td.index({idx});
  EXPECT_EQ(out.batch_size(), (BatchSize{2, 2, 4}));
  EXPECT_EQ(shape_of(out.get("a")), (Shape{2, 2, 4, 5}));
  EXPECT_TRUE(torch::equal(out.get("a")[1][0], td.get("a")[2]));
}

TEST(IndexingTest, IndexTensorsOnTwoDimsPickPairs) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto out = td.index({torch::tensor({0, 2}), torch::tensor({3, 1})});
  EXPECT_EQ(out.batch_size(), (BatchSize{2}));
  EXPECT_EQ(shape_of(out.get("a")), (Shape{2, 5}));
  EXPECT_TRUE(torch::equal(out.get("a")[0], td.get("a").index({0, 3})));
  EXPECT_TRUE(torch::equal(out.get("a")[1], td.get("a").index({2, 1})));
}

TEST(IndexingTest, OverviewIndexTensorSplitsDispatchRowsToWorkers) {
  // overview: splits = torch.arange(N).split(10); tensordict[idx] for each split.
  torch::manual_seed(0);
  auto td = TensorDict({{"x", torch::randn({25, 3})}}, {25});
  auto splits = torch::arange(25).split(10);
  ASSERT_EQ(splits.size(), 3u);
  std::vector<int64_t> sizes;
  for (const auto& idx : splits) {
    auto part = td.index({idx});
    sizes.push_back(part.batch_size()[0]);
    EXPECT_TRUE(torch::equal(part.get("x"), td.get("x").index({idx})));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{10, 10, 5}));
}

// ---- Aliasing ------------------------------------------------------------------------------

TEST(IndexingTest, BasicIndexingAliasesParentStorage) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  auto row = td.index({1});
  row.get("a").fill_(7);
  EXPECT_TRUE((td.get("a")[1] == 7).all().item<bool>());
  EXPECT_TRUE((td.get("a")[0] == 0).all().item<bool>());
  EXPECT_TRUE((td.get("a")[2] == 0).all().item<bool>());
}

TEST(IndexingTest, SetInPlaceThroughSliceWritesParent) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  auto cols = td.index({Slice(), Slice(1, 3)});
  cols.set_("a", torch::ones({3, 2}));
  EXPECT_EQ(td.get("a").sum().item<float>(), 6.0f);
  EXPECT_TRUE((td.get("a").index({Slice(), Slice(1, 3)}) == 1).all().item<bool>());
}

TEST(IndexingTest, MaskIndexingCopies) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  auto picked = td.index({torch::tensor({true, false, true})});
  picked.get("a").fill_(1);
  EXPECT_EQ(td.get("a").sum().item<float>(), 0.0f);
}

TEST(IndexingTest, IndexTensorIndexingCopies) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  auto picked = td.index({torch::tensor({0, 2})});
  picked.get("a").fill_(1);
  EXPECT_EQ(td.get("a").sum().item<float>(), 0.0f);
}

TEST(IndexingTest, IndexingReturnsNewTensorDict) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  auto all = td.index({Slice()});
  EXPECT_FALSE(all.is_same(td));
  all.set("b", torch::ones({3}));
  EXPECT_FALSE(td.contains("b"));
}

// ---- Nested TensorDicts --------------------------------------------------------------------

TEST(IndexingTest, IntegerIndexReachesNestedTensorDictWithLongerBatch) {
  torch::manual_seed(0);
  auto td = nested_batch3_td();
  auto row = td.index({1});
  EXPECT_EQ(row.batch_size(), (BatchSize{}));
  EXPECT_EQ(shape_of(row.get("obs")), (Shape{6}));
  EXPECT_EQ(row.get_tensordict("n").batch_size(), (BatchSize{4}));
  EXPECT_EQ(shape_of(row.get({"n", "x"})), (Shape{4, 2}));
  EXPECT_TRUE(torch::equal(row.get({"n", "x"}), td.get({"n", "x"})[1]));
}

TEST(IndexingTest, SliceReachesNestedTensorDictWithLongerBatch) {
  torch::manual_seed(0);
  auto td = nested_batch3_td();
  auto head = td.index({Slice(0, 2)});
  EXPECT_EQ(head.batch_size(), (BatchSize{2}));
  EXPECT_EQ(head.get_tensordict("n").batch_size(), (BatchSize{2, 4}));
  EXPECT_EQ(shape_of(head.get({"n", "x"})), (Shape{2, 4, 2}));
}

TEST(IndexingTest, MaskReachesNestedTensorDictWithLongerBatch) {
  torch::manual_seed(0);
  auto td = nested_batch3_td();
  auto picked = td.index({torch::tensor({false, true, true})});
  EXPECT_EQ(picked.batch_size(), (BatchSize{2}));
  EXPECT_EQ(picked.get_tensordict("n").batch_size(), (BatchSize{2, 4}));
  EXPECT_TRUE(torch::equal(picked.get({"n", "x"})[0], td.get({"n", "x"})[1]));
}

TEST(IndexingTest, NoneAndEllipsisReachNestedTensorDictWithLongerBatch) {
  torch::manual_seed(0);
  auto td = nested_batch3_td();
  auto lead = td.index({None});
  EXPECT_EQ(lead.batch_size(), (BatchSize{1, 3}));
  EXPECT_EQ(lead.get_tensordict("n").batch_size(), (BatchSize{1, 3, 4}));
  EXPECT_EQ(shape_of(lead.get({"n", "x"})), (Shape{1, 3, 4, 2}));

  // The Ellipsis covers the parent's single batch dim, so the nested TensorDict's own extra
  // batch dim is left alone.
  auto last = td.index({Ellipsis, 2});
  EXPECT_EQ(last.batch_size(), (BatchSize{}));
  EXPECT_EQ(last.get_tensordict("n").batch_size(), (BatchSize{4}));
  EXPECT_TRUE(torch::equal(last.get({"n", "x"}), td.get({"n", "x"})[2]));
}

TEST(IndexingTest, NestedIndexedViewAliasesParent) {
  auto td = TensorDict({{"n", TensorDict({{"x", torch::zeros({3, 4})}}, {3, 4})}}, {3});
  td.index({0}).get({"n", "x"}).fill_(2);
  EXPECT_TRUE((td.get({"n", "x"})[0] == 2).all().item<bool>());
  EXPECT_EQ(td.get({"n", "x"}).sum().item<float>(), 8.0f);
}

// ---- index_put_ ----------------------------------------------------------------------------

TEST(IndexingTest, IndexPutTensorDictWritesRegion) {
  // tutorial: tensordict.fill_("a", -1); tensordict[:-1] = td2 (zeros)
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  td.fill_("a", -1);
  auto td2 = TensorDict({{"a", torch::zeros({2, 4, 5})}, {"b", torch::zeros({2, 4})}}, {2, 4});
  td.index_put_({Slice(None, -1)}, td2);

  auto expected_a = torch::zeros({3, 4, 5});
  expected_a[2].fill_(-1);
  EXPECT_TRUE(torch::equal(td.get("a"), expected_a));
  EXPECT_TRUE(torch::equal(td.get("b"), torch::zeros({3, 4})));
}

TEST(IndexingTest, IndexPutWritesIntoExistingTensors) {
  auto a = torch::zeros({3, 2});
  auto td = TensorDict({{"a", a}}, {3});
  td.index_put_({1}, TensorDict({{"a", torch::full({2}, 5.0)}}, {}));
  EXPECT_TRUE(td.get("a").is_same(a));
  EXPECT_TRUE(torch::equal(a[1], torch::full({2}, 5.0)));
}

TEST(IndexingTest, IndexPutWithIndexTensorWritesEachRow) {
  auto td = TensorDict({{"a", torch::zeros({4})}}, {4});
  td.index_put_({torch::tensor({3, 0})}, TensorDict({{"a", torch::tensor({1.0f, 2.0f})}}, {2}));
  EXPECT_TRUE(torch::equal(td.get("a"), torch::tensor({2.0f, 0.0f, 0.0f, 1.0f})));
}

TEST(IndexingTest, IndexPutWithMaskWritesSelectedRows) {
  auto td = TensorDict({{"a", torch::zeros({3, 2})}}, {3});
  auto mask = torch::tensor({true, false, true});
  td.index_put_({mask}, TensorDict({{"a", torch::ones({2, 2})}}, {2}));
  EXPECT_TRUE(torch::equal(td.get("a").sum(1), torch::tensor({2.0f, 0.0f, 2.0f})));
}

TEST(IndexingTest, IndexPutBroadcastsValueBatchToRegion) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  td.index_put_({Slice(0, 2)}, TensorDict({{"a", torch::tensor({1.0f, 2.0f, 3.0f, 4.0f})}}, {4}));
  EXPECT_TRUE(torch::equal(td.get("a")[0], torch::tensor({1.0f, 2.0f, 3.0f, 4.0f})));
  EXPECT_TRUE(torch::equal(td.get("a")[1], torch::tensor({1.0f, 2.0f, 3.0f, 4.0f})));
  EXPECT_TRUE(torch::equal(td.get("a")[2], torch::zeros({4})));
}

TEST(IndexingTest, IndexPutWritesNestedLeaves) {
  auto td = TensorDict({{"n", TensorDict({{"x", torch::zeros({3, 4})}}, {3, 4})}}, {3});
  auto value = TensorDict({{"n", TensorDict({{"x", torch::ones({4})}}, {4})}}, {});
  td.index_put_({2}, value);
  EXPECT_EQ(td.get({"n", "x"}).sum().item<float>(), 4.0f);
  EXPECT_TRUE((td.get({"n", "x"})[2] == 1).all().item<bool>());
}

TEST(IndexingTest, IndexPutScalarFillsRegionOfEveryLeaf) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})},
                        {"i", torch::zeros({3, 4}, torch::kLong)},
                        {"n", {{"x", torch::zeros({3, 4, 2})}}}},
                       {3, 4});
  td.index_put_({Slice(), 1}, 3);
  EXPECT_TRUE((td.get("a").select(1, 1) == 3).all().item<bool>());
  EXPECT_EQ(td.get("a").sum().item<float>(), 3.0f * 3 * 5);
  EXPECT_EQ(td.get("i").sum().item<int64_t>(), 3 * 3);
  EXPECT_EQ(td.get({"n", "x"}).sum().item<float>(), 3.0f * 3 * 2);
}

TEST(IndexingTest, IndexPutScalarWithMask) {
  auto td = TensorDict({{"a", torch::zeros({4})}}, {4});
  td.index_put_({torch::tensor({true, false, false, true})}, -1.5);
  EXPECT_TRUE(torch::equal(td.get("a"), torch::tensor({-1.5f, 0.0f, 0.0f, -1.5f})));
}

TEST(IndexingTest, IndexPutRejectsValueWhoseBatchDoesNotFitRegion) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  auto value = TensorDict({{"a", torch::ones({3, 4})}}, {3, 4});
  EXPECT_THAT([&] { td.index_put_({Slice(0, 2)}, value); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("[3, 4]"), HasSubstr("[2, 4]"))));
  EXPECT_EQ(td.get("a").sum().item<float>(), 0.0f);
}

TEST(IndexingTest, IndexPutRejectsDtypeMismatchWithoutWriting) {
  auto td = TensorDict({{"a", torch::zeros({3})}, {"b", torch::zeros({3})}}, {3});
  auto value = TensorDict({{"a", torch::ones({})}, {"b", torch::ones({}, torch::kLong)}}, {});
  EXPECT_THROW(td.index_put_({0}, value), TypeError);
  // Nothing is written unless every entry fits.
  EXPECT_EQ(td.get("a").sum().item<float>(), 0.0f);
}

// ---- Lazy preallocation --------------------------------------------------------------------

// README's foo(): "a" of shape [3] and a nested ("b", "c") of shape [2], batch size [],
// with values that say which call made them.
TensorDict foo(int64_t i) {
  auto data = TensorDict::empty({});
  data.set("a", torch::full({3}, static_cast<float>(i)));
  data.set("b", TensorDict({{"c", torch::full({2}, static_cast<float>(10 * i))}}, {}));
  return data;
}

TEST(IndexingTest, LazyPreallocationFillsEveryKeyAtFullBatchSize) {
  const int64_t n = 10;
  auto data = TensorDict::empty({n});
  for (int64_t i = 0; i < n; ++i) data.index_put_({i}, foo(i));

  EXPECT_EQ(data.batch_size(), (BatchSize{10}));
  EXPECT_EQ(shape_of(data.get("a")), (Shape{10, 3}));
  EXPECT_EQ(data.get("a").scalar_type(), torch::kFloat);
  EXPECT_EQ(data.get_tensordict("b").batch_size(), (BatchSize{10}));
  EXPECT_EQ(shape_of(data.get({"b", "c"})), (Shape{10, 2}));
  auto rows = torch::arange(n, torch::kFloat);
  EXPECT_TRUE(torch::equal(data.get("a"), rows.unsqueeze(1).expand({n, 3})));
  EXPECT_TRUE(torch::equal(data.get({"b", "c"}), (10 * rows).unsqueeze(1).expand({n, 2})));
}

TEST(IndexingTest, LazyPreallocationWorksInShuffledOrder) {
  const int64_t n = 10;
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::mt19937 rng(1234);
  std::shuffle(order.begin(), order.end(), rng);

  auto data = TensorDict::empty({n});
  for (int64_t i : order) data.index_put_({i}, foo(i));

  auto rows = torch::arange(n, torch::kFloat);
  EXPECT_TRUE(torch::equal(data.get("a"), rows.unsqueeze(1).expand({n, 3})));
  EXPECT_TRUE(torch::equal(data.get({"b", "c"}), (10 * rows).unsqueeze(1).expand({n, 2})));
}

TEST(IndexingTest, LazyPreallocationZeroFillsRowsNotYetWritten) {
  auto data = TensorDict::empty({4});
  data.index_put_({2}, foo(5));
  EXPECT_TRUE(torch::equal(data.get("a").sum(1), torch::tensor({0.0f, 0.0f, 15.0f, 0.0f})));
  EXPECT_TRUE(torch::equal(data.get({"b", "c"}).sum(1), torch::tensor({0.0f, 0.0f, 100.0f, 0.0f})));
}

TEST(IndexingTest, LazyPreallocationKeepsDtypeOfWrittenValue) {
  auto data = TensorDict::empty({3});
  data.index_put_(
      {0}, TensorDict({{"i", torch::tensor(7, torch::kLong)}, {"done", torch::tensor(true)}}, {}));
  EXPECT_EQ(data.get("i").scalar_type(), torch::kLong);
  EXPECT_EQ(data.get("done").scalar_type(), torch::kBool);
  EXPECT_TRUE(torch::equal(data.get("i"), torch::tensor({7, 0, 0}, torch::kLong)));
  EXPECT_TRUE(torch::equal(data.get("done"), torch::tensor({true, false, false})));
}

TEST(IndexingTest, LazyPreallocationWithSliceOnTwoBatchDims) {
  auto data = TensorDict::empty({4, 3});
  data.index_put_({Slice(0, 2)}, TensorDict({{"x", torch::ones({2, 3, 5})}}, {2, 3}));
  EXPECT_EQ(shape_of(data.get("x")), (Shape{4, 3, 5}));
  EXPECT_EQ(data.get("x").sum().item<float>(), 2.0f * 3 * 5);
}

TEST(IndexingTest, LazyPreallocationAddsKeysMissingFromPartlyFilledTensorDict) {
  auto data = TensorDict({{"a", torch::zeros({3})}}, {3});
  data.index_put_({1}, TensorDict({{"a", torch::tensor(1.0f)}, {"new", torch::ones({2})}}, {}));
  EXPECT_TRUE(torch::equal(data.get("a"), torch::tensor({0.0f, 1.0f, 0.0f})));
  EXPECT_EQ(shape_of(data.get("new")), (Shape{3, 2}));
  EXPECT_TRUE(torch::equal(data.get("new").sum(1), torch::tensor({0.0f, 2.0f, 0.0f})));
}

TEST(IndexingTest, LazyPreallocationOfNestedTensorDictWithLongerBatch) {
  // A value whose nested TensorDict has an extra batch dim keeps it after preallocation.
  auto data = TensorDict::empty({5});
  auto value = TensorDict({{"n", TensorDict({{"x", torch::ones({4, 2})}}, {4})}}, {});
  data.index_put_({3}, value);
  EXPECT_EQ(data.get_tensordict("n").batch_size(), (BatchSize{5, 4}));
  EXPECT_EQ(shape_of(data.get({"n", "x"})), (Shape{5, 4, 2}));
  EXPECT_EQ(data.get({"n", "x"}).sum().item<float>(), 8.0f);
}

// ---- set_at_ -------------------------------------------------------------------------------

TEST(IndexingTest, SetAtWritesOneElementOfOneKey) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  td.set_at_("a", torch::full({5}, 2.0), {1, 2});
  EXPECT_TRUE((td.get("a").index({1, 2}) == 2).all().item<bool>());
  EXPECT_EQ(td.get("a").sum().item<float>(), 10.0f);
  EXPECT_EQ(td.get("b").sum().item<float>(), 0.0f);
}

TEST(IndexingTest, SetAtWithSliceBroadcastsValue) {
  auto td = TensorDict({{"a", torch::zeros({3, 2})}}, {3});
  td.set_at_("a", torch::tensor({1.0f, 2.0f}), {Slice(1, None)});
  EXPECT_TRUE(torch::equal(td.get("a"),
                           torch::tensor({0.0f, 0.0f, 1.0f, 2.0f, 1.0f, 2.0f}).reshape({3, 2})));
}

TEST(IndexingTest, SetAtReachesNestedKey) {
  auto td = TensorDict({{"n", TensorDict({{"x", torch::zeros({3, 4})}}, {3, 4})}}, {3});
  td.set_at_({"n", "x"}, torch::tensor(9.0f), {0, 3});
  EXPECT_EQ(td.get({"n", "x"}).index({0, 3}).item<float>(), 9.0f);
  EXPECT_EQ(td.get({"n", "x"}).sum().item<float>(), 9.0f);
}

TEST(IndexingTest, SetAtMissingKeyThrowsKeyError) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  EXPECT_THAT([&] { td.set_at_("missing", torch::tensor(1.0f), {0}); },
              ThrowsMessage<KeyError>(HasSubstr("'missing'")));
}

TEST(IndexingTest, SetAtOutOfRangeIndexThrowsIndexError) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  EXPECT_THAT([&] { td.set_at_("a", torch::tensor(1.0f), {3}); },
              ThrowsMessage<IndexError>(AllOf(HasSubstr("(3,)"), HasSubstr("batch_size [3]"))));
  EXPECT_EQ(td.get("a").sum().item<float>(), 0.0f);
}

// ---- Errors --------------------------------------------------------------------------------

TEST(IndexingTest, TooManyIndicesThrowsIndexErrorNamingIndexAndBatchSize) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  EXPECT_THAT(
      [&] {
        td.index({0, 0, 0});
      },
      ThrowsMessage<IndexError>(AllOf(HasSubstr("TensorDict::index"), HasSubstr("(0, 0, 0)"),
                                      HasSubstr("batch_size [3, 4]"))));
}

TEST(IndexingTest, IndexingEmptyBatchSizeThrowsIndexError) {
  auto td = TensorDict({{"a", torch::zeros({5})}}, {});
  EXPECT_THAT([&] { td.index({0}); }, ThrowsMessage<IndexError>(HasSubstr("batch_size []")));
}

TEST(IndexingTest, OutOfRangeIntegerThrowsIndexError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  EXPECT_THAT([&] { td.index({5}); },
              ThrowsMessage<IndexError>(AllOf(HasSubstr("(5,)"), HasSubstr("batch_size [3, 4]"))));
  EXPECT_THAT(
      [&] {
        td.index({Slice(), -5});
      },
      ThrowsMessage<IndexError>(HasSubstr("batch_size [3, 4]")));
}

TEST(IndexingTest, OutOfRangeIntegerThrowsEvenWithoutEntries) {
  auto td = TensorDict::empty({3});
  EXPECT_THROW(td.index({3}), IndexError);
}

TEST(IndexingTest, OutOfRangeIndexTensorThrowsIndexError) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  EXPECT_THAT(
      [&] {
        td.index({torch::tensor({0, 7})});
      },
      ThrowsMessage<IndexError>(HasSubstr("batch_size [3]")));
}

TEST(IndexingTest, MaskOfWrongShapeThrowsIndexError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  EXPECT_THAT(
      [&] {
        td.index({torch::ones({3, 3}, torch::kBool)});
      },
      ThrowsMessage<IndexError>(AllOf(HasSubstr("[3, 3]"), HasSubstr("batch_size [3, 4]"))));
  EXPECT_THAT([&] { td.index({torch::ones({4}, torch::kBool)}); },
              ThrowsMessage<IndexError>(AllOf(HasSubstr("[4]"), HasSubstr("batch_size [3, 4]"))));
}

TEST(IndexingTest, MaskReachingFeatureDimsThrowsIndexError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  EXPECT_THAT(
      [&] {
        td.index({torch::ones({3, 4, 5}, torch::kBool)});
      },
      ThrowsMessage<IndexError>(HasSubstr("batch_size [3, 4]")));
}

TEST(IndexingTest, TwoEllipsesThrowIndexError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  EXPECT_THAT(
      [&] {
        td.index({Ellipsis, 0, Ellipsis});
      },
      ThrowsMessage<IndexError>(HasSubstr("Ellipsis")));
}

TEST(IndexingTest, IndexPutOutOfRangeThrowsIndexErrorWithoutAllocating) {
  auto data = TensorDict::empty({3});
  EXPECT_THAT([&] { data.index_put_({3}, foo(0)); },
              ThrowsMessage<IndexError>(
                  AllOf(HasSubstr("TensorDict::index_put_"), HasSubstr("batch_size [3]"))));
  EXPECT_FALSE(data.contains("a"));
}

TEST(IndexingTest, IndexPutScalarWithTooManyIndicesThrowsIndexError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3});
  EXPECT_THAT(
      [&] {
        td.index_put_({0, 0}, 1.0);
      },
      ThrowsMessage<IndexError>(AllOf(HasSubstr("(0, 0)"), HasSubstr("batch_size [3]"))));
  EXPECT_EQ(td.get("a").sum().item<float>(), 0.0f);
}

}  // namespace
}  // namespace tensordict
