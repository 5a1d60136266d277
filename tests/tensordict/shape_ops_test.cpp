// Shape operations on batch dims: reshape, view, flatten, unflatten, permute, transpose,
// squeeze, unsqueeze, expand, unbind, split, chunk, contiguous, to_tensordict. Feature dims of
// leaves and extra batch dims of nested TensorDicts are carried along untouched.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include <tensordict/tensordict.h>

#include "support/tensordict_fixtures.h"

namespace tensordict {
namespace {

using namespace tensordict::testing;

// Batch [3, 4] with a leaf carrying two feature dims and a nested TensorDict of batch
// [3, 4, 2] (one extra batch dim) whose leaf has a feature dim of 6.
TensorDict nested_batch3x4_td() {
  auto nested = TensorDict({{"x", torch::randn({3, 4, 2, 6})}}, {3, 4, 2});
  return TensorDict({{"obs", torch::randn({3, 4, 7, 8})}, {"n", nested}}, {3, 4});
}

// ---- reshape and view ------------------------------------------------------------------------

TEST(ShapeOpsTest, ViewMinusOneFlattensBatch) {
  // README: data.view(-1) -> torch.Size([12])
  auto data = readme_td();
  auto flat = data.view({-1});
  EXPECT_EQ(flat.batch_size(), (BatchSize{12}));
  EXPECT_EQ(shape_of(flat.get("key 1")), (Shape{12, 5}));
  EXPECT_EQ(shape_of(flat.get("key 2")), (Shape{12, 5}));
  EXPECT_EQ(flat.get("key 2").scalar_type(), torch::kBool);
}

TEST(ShapeOpsTest, ReshapeMinusOneFlattensBatch) {
  // README and tutorial: reshape(-1) -> [12], a [12, 5]
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto flat = td.reshape({-1});
  EXPECT_EQ(flat.batch_size(), (BatchSize{12}));
  EXPECT_EQ(shape_of(flat.get("a")), (Shape{12, 5}));
  EXPECT_EQ(shape_of(flat.get("b")), (Shape{12}));
  EXPECT_TRUE(torch::equal(flat.get("a"), td.get("a").reshape({12, 5})));
}

TEST(ShapeOpsTest, ReshapeToOtherBatchSize) {
  // overview: tensordict.reshape(6) on batch [2, 3]
  auto td =
      TensorDict({{"zeros", torch::zeros({2, 3, 4})}, {"ones", torch::ones({2, 3, 4, 5})}}, {2, 3});
  auto r = td.reshape({6});
  EXPECT_EQ(r.batch_size(), (BatchSize{6}));
  EXPECT_EQ(shape_of(r.get("zeros")), (Shape{6, 4}));
  EXPECT_EQ(shape_of(r.get("ones")), (Shape{6, 4, 5}));

  auto back = r.reshape({3, 2});
  EXPECT_EQ(back.batch_size(), (BatchSize{3, 2}));
  EXPECT_EQ(shape_of(back.get("ones")), (Shape{3, 2, 4, 5}));
}

TEST(ShapeOpsTest, ReshapeWorksOnNonContiguousLeaves) {
  torch::manual_seed(0);
  auto a = torch::randn({4, 3, 5}).transpose(0, 1);  // [3, 4, 5], not contiguous
  auto td = TensorDict({{"a", a}}, {3, 4});
  auto flat = td.reshape({12});
  EXPECT_TRUE(torch::equal(flat.get("a"), a.reshape({12, 5})));
}

TEST(ShapeOpsTest, ReshapeCarriesNestedExtraBatchDims) {
  torch::manual_seed(0);
  auto td = nested_batch3x4_td();
  auto flat = td.reshape({12});
  EXPECT_EQ(shape_of(flat.get("obs")), (Shape{12, 7, 8}));
  EXPECT_EQ(flat.get_tensordict("n").batch_size(), (BatchSize{12, 2}));
  EXPECT_EQ(shape_of(flat.get({"n", "x"})), (Shape{12, 2, 6}));
  EXPECT_TRUE(torch::equal(flat.get({"n", "x"}), td.get({"n", "x"}).reshape({12, 2, 6})));
}

TEST(ShapeOpsTest, ReshapeToWrongNumelThrowsShapeError) {
  auto td = readme_td();
  EXPECT_THAT([&] { td.reshape({5}); },
              ThrowsMessage<ShapeError>(
                  AllOf(HasSubstr("TensorDict::reshape"), HasSubstr("batch_size [3, 4]"))));
}

TEST(ShapeOpsTest, ViewAliasesStorage) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  auto flat = td.view({12});
  EXPECT_EQ(flat.get("a").data_ptr(), td.get("a").data_ptr());
  flat.get("a")[5].fill_(1);
  EXPECT_TRUE((td.get("a").index({1, 1}) == 1).all().item<bool>());
  EXPECT_EQ(td.get("a").sum().item<float>(), 5.0f);
}

TEST(ShapeOpsTest, ViewOfNonViewableLeafThrowsShapeError) {
  auto a = torch::zeros({4, 3, 5}).transpose(0, 1);  // [3, 4, 5], strides forbid a view
  auto td = TensorDict({{"a", a}}, {3, 4});
  EXPECT_THAT([&] { td.view({12}); }, ThrowsMessage<ShapeError>(HasSubstr("TensorDict::view")));
}

// ---- flatten and unflatten --------------------------------------------------------------------

TEST(ShapeOpsTest, FlattenMergesAllBatchDimsByDefault) {
  auto td = TensorDict({{"a", torch::arange(24 * 2).reshape({2, 3, 4, 2})}}, {2, 3, 4});
  auto flat = td.flatten();
  EXPECT_EQ(flat.batch_size(), (BatchSize{24}));
  EXPECT_EQ(shape_of(flat.get("a")), (Shape{24, 2}));
  EXPECT_TRUE(torch::equal(flat.get("a"), td.get("a").reshape({24, 2})));
}

TEST(ShapeOpsTest, FlattenMergesRangeOfBatchDims) {
  auto td = TensorDict({{"a", torch::zeros({2, 3, 4, 5})}}, {2, 3, 4});
  EXPECT_EQ(td.flatten(0, 1).batch_size(), (BatchSize{6, 4}));
  EXPECT_EQ(shape_of(td.flatten(0, 1).get("a")), (Shape{6, 4, 5}));
  EXPECT_EQ(td.flatten(1).batch_size(), (BatchSize{2, 12}));
  EXPECT_EQ(shape_of(td.flatten(1).get("a")), (Shape{2, 12, 5}));
  EXPECT_EQ(td.flatten(-2, -1).batch_size(), (BatchSize{2, 12}));
}

TEST(ShapeOpsTest, FlattenCarriesNestedExtraBatchDims) {
  torch::manual_seed(0);
  auto td = nested_batch3x4_td();
  auto flat = td.flatten();
  EXPECT_EQ(flat.get_tensordict("n").batch_size(), (BatchSize{12, 2}));
  EXPECT_EQ(shape_of(flat.get({"n", "x"})), (Shape{12, 2, 6}));
}

TEST(ShapeOpsTest, FlattenWithBadDimsThrowsValueError) {
  auto td = TensorDict({{"a", torch::zeros({2, 3, 4})}}, {2, 3});
  EXPECT_THAT([&] { td.flatten(0, 2); }, ThrowsMessage<ValueError>(HasSubstr("dim 2")));
  EXPECT_THAT([&] { td.flatten(1, 0); }, ThrowsMessage<ValueError>(HasSubstr("start_dim")));
  EXPECT_THROW(TensorDict({{"a", torch::zeros({2})}}, {}).flatten(), ValueError);
}

TEST(ShapeOpsTest, UnflattenSplitsBatchDim) {
  auto td = TensorDict({{"a", torch::arange(12 * 5).reshape({12, 5})}}, {12});
  auto u = td.unflatten(0, {3, 4});
  EXPECT_EQ(u.batch_size(), (BatchSize{3, 4}));
  EXPECT_EQ(shape_of(u.get("a")), (Shape{3, 4, 5}));
  EXPECT_TRUE(torch::equal(u.get("a"), td.get("a").reshape({3, 4, 5})));
  EXPECT_EQ(td.unflatten(0, {2, -1}).batch_size(), (BatchSize{2, 6}));
}

TEST(ShapeOpsTest, UnflattenInvertsFlattenOnMiddleDim) {
  auto td = TensorDict({{"a", torch::randn({2, 3, 4, 5})}}, {2, 3, 4});
  auto round_trip = td.flatten(1, 2).unflatten(1, {3, 4});
  EXPECT_EQ(round_trip.batch_size(), (BatchSize{2, 3, 4}));
  EXPECT_TRUE(torch::equal(round_trip.get("a"), td.get("a")));
}

TEST(ShapeOpsTest, UnflattenWithWrongSizesThrowsShapeError) {
  auto td = TensorDict({{"a", torch::zeros({12})}}, {12});
  EXPECT_THROW(td.unflatten(0, {5, 2}), ShapeError);
  EXPECT_THROW(td.unflatten(1, {3, 4}), ValueError);
}

// ---- permute and transpose -------------------------------------------------------------------

TEST(ShapeOpsTest, PermuteReordersBatchDimsOnly) {
  // tutorial: tensordict.permute(1, 0)
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto p = td.permute({1, 0});
  EXPECT_EQ(p.batch_size(), (BatchSize{4, 3}));
  EXPECT_EQ(shape_of(p.get("a")), (Shape{4, 3, 5}));
  EXPECT_EQ(shape_of(p.get("b")), (Shape{4, 3}));
  EXPECT_TRUE(torch::equal(p.get("a"), td.get("a").permute({1, 0, 2})));
}

TEST(ShapeOpsTest, PermuteAcceptsNegativeDims) {
  auto td = TensorDict({{"a", torch::zeros({2, 3, 4, 5})}}, {2, 3, 4});
  auto p = td.permute({-1, 0, 1});
  EXPECT_EQ(p.batch_size(), (BatchSize{4, 2, 3}));
  EXPECT_EQ(shape_of(p.get("a")), (Shape{4, 2, 3, 5}));
}

TEST(ShapeOpsTest, PermuteAliasesStorage) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  td.permute({1, 0}).get("a").index_put_({3, 0}, 1.0);
  EXPECT_EQ(td.get("a").index({0, 3}).item<float>(), 1.0f);
}

TEST(ShapeOpsTest, PermuteCarriesNestedExtraBatchDims) {
  torch::manual_seed(0);
  auto td = nested_batch3x4_td();
  auto p = td.permute({1, 0});
  EXPECT_EQ(shape_of(p.get("obs")), (Shape{4, 3, 7, 8}));
  EXPECT_EQ(p.get_tensordict("n").batch_size(), (BatchSize{4, 3, 2}));
  EXPECT_TRUE(torch::equal(p.get({"n", "x"}), td.get({"n", "x"}).permute({1, 0, 2, 3})));
}

TEST(ShapeOpsTest, PermuteRejectsNonPermutations) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  EXPECT_THAT([&] { td.permute({0, 0}); }, ThrowsMessage<ValueError>(HasSubstr("repeat")));
  EXPECT_THAT([&] { td.permute({0}); }, ThrowsMessage<ValueError>(HasSubstr("batch_size [3, 4]")));
  EXPECT_THAT(
      [&] {
        td.permute({0, 1, 2});
      },
      ThrowsMessage<ValueError>(HasSubstr("batch_size [3, 4]")));
  EXPECT_THAT([&] { td.permute({0, 2}); }, ThrowsMessage<ValueError>(HasSubstr("out of range")));
}

TEST(ShapeOpsTest, TransposeSwapsTwoBatchDims) {
  auto td = TensorDict({{"a", torch::randn({2, 3, 4, 5})}}, {2, 3, 4});
  auto t = td.transpose(0, 2);
  EXPECT_EQ(t.batch_size(), (BatchSize{4, 3, 2}));
  EXPECT_EQ(shape_of(t.get("a")), (Shape{4, 3, 2, 5}));
  EXPECT_TRUE(torch::equal(t.get("a"), td.get("a").transpose(0, 2)));
  EXPECT_EQ(td.transpose(-1, 0).batch_size(), (BatchSize{4, 3, 2}));
}

TEST(ShapeOpsTest, TransposeOutOfRangeThrowsValueError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  // dim 2 exists in the leaf but not in the batch.
  EXPECT_THAT(
      [&] { td.transpose(0, 2); },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("TensorDict::transpose"), HasSubstr("dim 2"))));
}

// ---- squeeze and unsqueeze -------------------------------------------------------------------

TEST(ShapeOpsTest, UnsqueezeZeroAndSqueezeZero) {
  // tutorial: tensordict.unsqueeze(0) -> [1, 3, 4]; tensordict.squeeze(0) -> [3, 4] unchanged
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto u = td.unsqueeze(0);
  EXPECT_EQ(u.batch_size(), (BatchSize{1, 3, 4}));
  EXPECT_EQ(shape_of(u.get("a")), (Shape{1, 3, 4, 5}));
  EXPECT_EQ(shape_of(u.get("b")), (Shape{1, 3, 4}));

  auto s = td.squeeze(0);
  EXPECT_EQ(s.batch_size(), (BatchSize{3, 4}));
  EXPECT_EQ(shape_of(s.get("a")), (Shape{3, 4, 5}));
  EXPECT_TRUE(torch::equal(s.get("a"), td.get("a")));

  auto back = u.squeeze(0);
  EXPECT_EQ(back.batch_size(), (BatchSize{3, 4}));
  EXPECT_TRUE(torch::equal(back.get("a"), td.get("a")));
}

TEST(ShapeOpsTest, UnsqueezeMinusOneCountsBatchDimsOnly) {
  // README: data.unsqueeze(-1) -> torch.Size([3, 4, 1]); leaves get the new dim after the
  // batch dims, before their feature dims.
  auto data = readme_td();
  auto u = data.unsqueeze(-1);
  EXPECT_EQ(u.batch_size(), (BatchSize{3, 4, 1}));
  EXPECT_EQ(shape_of(u.get("key 1")), (Shape{3, 4, 1, 5}));
  EXPECT_EQ(shape_of(u.get("key 2")), (Shape{3, 4, 1, 5}));
}

TEST(ShapeOpsTest, UnsqueezeOtherNegativeAndPositiveDims) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  EXPECT_EQ(td.unsqueeze(-2).batch_size(), (BatchSize{3, 1, 4}));
  EXPECT_EQ(shape_of(td.unsqueeze(-2).get("a")), (Shape{3, 1, 4, 5}));
  EXPECT_EQ(td.unsqueeze(-3).batch_size(), (BatchSize{1, 3, 4}));
  EXPECT_EQ(td.unsqueeze(1).batch_size(), (BatchSize{3, 1, 4}));
  EXPECT_EQ(td.unsqueeze(2).batch_size(), (BatchSize{3, 4, 1}));
  EXPECT_EQ(shape_of(td.unsqueeze(2).get("a")), (Shape{3, 4, 1, 5}));
}

TEST(ShapeOpsTest, UnsqueezeOnEmptyBatchSize) {
  auto td = TensorDict({{"a", torch::zeros({5})}}, {});
  auto u = td.unsqueeze(-1);
  EXPECT_EQ(u.batch_size(), (BatchSize{1}));
  EXPECT_EQ(shape_of(u.get("a")), (Shape{1, 5}));
}

TEST(ShapeOpsTest, UnsqueezeOutOfRangeThrowsValueError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  EXPECT_THAT(
      [&] { td.unsqueeze(3); },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("TensorDict::unsqueeze"), HasSubstr("dim 3"))));
  EXPECT_THROW(td.unsqueeze(-4), ValueError);
}

TEST(ShapeOpsTest, UnsqueezeCarriesNestedExtraBatchDims) {
  torch::manual_seed(0);
  auto td = nested_batch3x4_td();
  auto u = td.unsqueeze(-1);
  EXPECT_EQ(u.batch_size(), (BatchSize{3, 4, 1}));
  EXPECT_EQ(u.get_tensordict("n").batch_size(), (BatchSize{3, 4, 1, 2}));
  EXPECT_EQ(shape_of(u.get({"n", "x"})), (Shape{3, 4, 1, 2, 6}));
  EXPECT_EQ(shape_of(u.get("obs")), (Shape{3, 4, 1, 7, 8}));
}

TEST(ShapeOpsTest, SqueezeWithoutDimRemovesEverySizeOneBatchDim) {
  auto td = TensorDict({{"a", torch::zeros({1, 3, 1, 1})}}, {1, 3, 1});
  auto s = td.squeeze();
  EXPECT_EQ(s.batch_size(), (BatchSize{3}));
  // The trailing feature dim of size 1 stays.
  EXPECT_EQ(shape_of(s.get("a")), (Shape{3, 1}));
}

TEST(ShapeOpsTest, SqueezeWithoutDimLeavesNestedExtraDimsOfSizeOne) {
  auto nested = TensorDict({{"x", torch::zeros({1, 3, 1, 2})}}, {1, 3, 1});
  auto td = TensorDict({{"n", nested}}, {1, 3});
  auto s = td.squeeze();
  EXPECT_EQ(s.batch_size(), (BatchSize{3}));
  EXPECT_EQ(s.get_tensordict("n").batch_size(), (BatchSize{3, 1}));
  EXPECT_EQ(shape_of(s.get({"n", "x"})), (Shape{3, 1, 2}));
}

TEST(ShapeOpsTest, SqueezeDimOfSizeOne) {
  auto td = TensorDict({{"a", torch::zeros({3, 1, 5})}}, {3, 1});
  auto s = td.squeeze(1);
  EXPECT_EQ(s.batch_size(), (BatchSize{3}));
  EXPECT_EQ(shape_of(s.get("a")), (Shape{3, 5}));
  EXPECT_EQ(td.squeeze(-1).batch_size(), (BatchSize{3}));
}

TEST(ShapeOpsTest, SqueezeOutOfRangeThrowsValueError) {
  auto td = TensorDict({{"a", torch::zeros({3, 1, 5})}}, {3, 1});
  EXPECT_THAT([&] { td.squeeze(2); }, ThrowsMessage<ValueError>(HasSubstr("TensorDict::squeeze")));
}

TEST(ShapeOpsTest, SqueezeAliasesStorage) {
  auto td = TensorDict({{"a", torch::zeros({1, 3})}}, {1, 3});
  td.squeeze(0).get("a")[2].fill_(4);
  EXPECT_EQ(td.get("a").index({0, 2}).item<float>(), 4.0f);
}

// ---- expand --------------------------------------------------------------------------------

TEST(ShapeOpsTest, ExpandAddsLeadingDims) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto e = td.expand({2, 3, 4});
  EXPECT_EQ(e.batch_size(), (BatchSize{2, 3, 4}));
  EXPECT_EQ(shape_of(e.get("a")), (Shape{2, 3, 4, 5}));
  EXPECT_EQ(shape_of(e.get("b")), (Shape{2, 3, 4}));
  EXPECT_TRUE(torch::equal(e.get("a")[1], td.get("a")));
}

TEST(ShapeOpsTest, ExpandBroadcastsSizeOneDimsWithoutCopy) {
  auto td = TensorDict({{"a", torch::arange(4.0).reshape({1, 4})}}, {1, 4});
  auto e = td.expand({3, 4});
  EXPECT_EQ(e.batch_size(), (BatchSize{3, 4}));
  EXPECT_EQ(e.get("a").data_ptr(), td.get("a").data_ptr());
  EXPECT_EQ(e.get("a").stride(0), 0);
  EXPECT_TRUE(torch::equal(e.get("a")[2], td.get("a")[0]));
}

TEST(ShapeOpsTest, ExpandEmptyBatchSize) {
  // README: a dataset template of batch [] expanded to its length.
  auto data = TensorDict({{"images", torch::zeros({8, 8, 3}, torch::kUInt8)},
                          {"labels", torch::zeros({}, torch::kInt)}},
                         {});
  auto e = data.expand({1000});
  EXPECT_EQ(e.batch_size(), (BatchSize{1000}));
  EXPECT_EQ(shape_of(e.get("images")), (Shape{1000, 8, 8, 3}));
  EXPECT_EQ(shape_of(e.get("labels")), (Shape{1000}));
}

TEST(ShapeOpsTest, ExpandCarriesNestedExtraBatchDims) {
  torch::manual_seed(0);
  auto td = nested_batch3x4_td();
  auto e = td.expand({5, 3, 4});
  EXPECT_EQ(e.get_tensordict("n").batch_size(), (BatchSize{5, 3, 4, 2}));
  EXPECT_EQ(shape_of(e.get({"n", "x"})), (Shape{5, 3, 4, 2, 6}));
  EXPECT_EQ(shape_of(e.get("obs")), (Shape{5, 3, 4, 7, 8}));
}

TEST(ShapeOpsTest, ExpandToIncompatibleSizeThrowsShapeError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  EXPECT_THAT(
      [&] {
        td.expand({5, 4});
      },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("[3, 4]"), HasSubstr("[5, 4]"))));
  EXPECT_THROW(td.expand({4}), ShapeError);
}

// ---- unbind, split, chunk --------------------------------------------------------------------

TEST(ShapeOpsTest, UnbindReturnsOneTensorDictPerRow) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto rows = td.unbind(0);
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].batch_size(), (BatchSize{4}));
    EXPECT_EQ(shape_of(rows[i].get("a")), (Shape{4, 5}));
    EXPECT_TRUE(torch::equal(rows[i].get("a"), td.get("a")[static_cast<int64_t>(i)]));
  }
}

TEST(ShapeOpsTest, UnbindAlongSecondDim) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto cols = td.unbind(1);
  ASSERT_EQ(cols.size(), 4u);
  EXPECT_EQ(cols[3].batch_size(), (BatchSize{3}));
  EXPECT_EQ(shape_of(cols[3].get("a")), (Shape{3, 5}));
  EXPECT_TRUE(torch::equal(cols[3].get("b"), td.get("b").select(1, 3)));
  EXPECT_EQ(td.unbind(-1).size(), 4u);
}

TEST(ShapeOpsTest, UnbindPiecesAliasStorage) {
  auto td = TensorDict({{"a", torch::zeros({3, 2})}}, {3});
  td.unbind(0)[1].get("a").fill_(1);
  EXPECT_TRUE(torch::equal(td.get("a").sum(1), torch::tensor({0.0f, 2.0f, 0.0f})));
}

TEST(ShapeOpsTest, UnbindSplitsNestedKeys) {
  // overview: td = TensorDict({"a": {"c": randn(3, 11)}, "b": randn(3, 3)}, 3); td.unbind(0)
  torch::manual_seed(0);
  auto td = TensorDict({{"a", {{"c", torch::randn({3, 11})}}}, {"b", torch::randn({3, 3})}}, {3});
  auto parts = td.unbind(0);
  ASSERT_EQ(parts.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    const auto& p = parts[static_cast<size_t>(i)];
    EXPECT_EQ(p.batch_size(), (BatchSize{}));
    EXPECT_EQ(shape_of(p.get({"a", "c"})), (Shape{11}));
    EXPECT_EQ(shape_of(p.get("b")), (Shape{3}));
    EXPECT_TRUE(torch::equal(p.get({"a", "c"}), td.get({"a", "c"})[i]));
  }
}

TEST(ShapeOpsTest, UnbindOutOfRangeThrowsValueError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3});
  EXPECT_THAT([&] { td.unbind(1); }, ThrowsMessage<ValueError>(HasSubstr("TensorDict::unbind")));
}

TEST(ShapeOpsTest, SplitBySizeLeavesSmallerLastPiece) {
  auto td = TensorDict({{"a", torch::arange(10).reshape({5, 2})}}, {5});
  auto pieces = td.split(2);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].batch_size(), (BatchSize{2}));
  EXPECT_EQ(pieces[1].batch_size(), (BatchSize{2}));
  EXPECT_EQ(pieces[2].batch_size(), (BatchSize{1}));
  EXPECT_TRUE(torch::equal(pieces[2].get("a"), torch::tensor({8, 9}).reshape({1, 2})));
  EXPECT_TRUE(torch::equal(pieces[1].get("a"), td.get("a").slice(0, 2, 4)));
}

TEST(ShapeOpsTest, SplitBySizesAlongSecondDim) {
  auto td = TensorDict({{"a", torch::randn({3, 5, 2})}}, {3, 5});
  auto pieces = td.split(std::vector<int64_t>{1, 4}, 1);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].batch_size(), (BatchSize{3, 1}));
  EXPECT_EQ(pieces[1].batch_size(), (BatchSize{3, 4}));
  EXPECT_EQ(shape_of(pieces[1].get("a")), (Shape{3, 4, 2}));
  EXPECT_TRUE(torch::equal(pieces[1].get("a"), td.get("a").slice(1, 1)));
}

TEST(ShapeOpsTest, SplitPiecesAliasStorage) {
  auto td = TensorDict({{"a", torch::zeros({4})}}, {4});
  td.split(2)[1].get("a").fill_(1);
  EXPECT_TRUE(torch::equal(td.get("a"), torch::tensor({0.0f, 0.0f, 1.0f, 1.0f})));
}

TEST(ShapeOpsTest, SplitSizesNotAddingUpThrowValueError) {
  auto td = TensorDict({{"a", torch::zeros({5})}}, {5});
  EXPECT_THAT(
      [&] {
        td.split(std::vector<int64_t>{2, 2});
      },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("[2, 2]"), HasSubstr("size 5"))));
  EXPECT_THROW(td.split(std::vector<int64_t>{3, 3}), ValueError);
  EXPECT_THROW(td.split(0), ValueError);
  EXPECT_THROW(td.split(2, 1), ValueError);
}

TEST(ShapeOpsTest, ChunkGivesNearlyEqualPieces) {
  auto td = TensorDict({{"a", torch::zeros({5, 3})}}, {5});
  auto two = td.chunk(2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].batch_size(), (BatchSize{3}));
  EXPECT_EQ(two[1].batch_size(), (BatchSize{2}));

  auto three = TensorDict({{"a", torch::zeros({6})}}, {6}).chunk(3);
  ASSERT_EQ(three.size(), 3u);
  for (const auto& p : three) EXPECT_EQ(p.batch_size(), (BatchSize{2}));
}

TEST(ShapeOpsTest, ChunkAlongSecondDimCarriesNestedTensorDicts) {
  torch::manual_seed(0);
  auto td = nested_batch3x4_td();
  auto pieces = td.chunk(2, 1);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].batch_size(), (BatchSize{3, 2}));
  EXPECT_EQ(pieces[0].get_tensordict("n").batch_size(), (BatchSize{3, 2, 2}));
  EXPECT_TRUE(torch::equal(pieces[1].get({"n", "x"}), td.get({"n", "x"}).slice(1, 2)));
}

TEST(ShapeOpsTest, ChunkRejectsNonPositiveCount) {
  auto td = TensorDict({{"a", torch::zeros({5})}}, {5});
  EXPECT_THAT([&] { td.chunk(0); }, ThrowsMessage<ValueError>(HasSubstr("chunks")));
}

// ---- contiguous and to_tensordict -------------------------------------------------------------

TEST(ShapeOpsTest, ContiguousMakesEveryLeafContiguous) {
  auto td =
      TensorDict({{"a", torch::randn({4, 3, 5})}, {"n", {{"x", torch::randn({4, 3})}}}}, {4, 3});
  auto t = td.transpose(0, 1);
  EXPECT_FALSE(t.get("a").is_contiguous());
  auto c = t.contiguous();
  EXPECT_EQ(c.batch_size(), (BatchSize{3, 4}));
  EXPECT_TRUE(c.get("a").is_contiguous());
  EXPECT_TRUE(c.get({"n", "x"}).is_contiguous());
  EXPECT_TRUE(torch::equal(c.get("a"), td.get("a").transpose(0, 1)));
}

TEST(ShapeOpsTest, ToTensordictCopiesValues) {
  auto td = TensorDict({{"a", torch::zeros({3})}, {"n", {{"x", torch::zeros({3})}}}}, {3});
  auto copy = td.to_tensordict();
  EXPECT_FALSE(copy.is_same(td));
  td.get("a").fill_(1);
  td.get({"n", "x"}).fill_(1);
  EXPECT_EQ(copy.get("a").sum().item<float>(), 0.0f);
  EXPECT_EQ(copy.get({"n", "x"}).sum().item<float>(), 0.0f);
}

TEST(ShapeOpsTest, UnsqueezeToTensordictRoundTrip) {
  // tutorial: tensordict.unsqueeze(0).to_tensordict(); tensordict.squeeze(0).to_tensordict()
  torch::manual_seed(0);
  auto td = tutorial_td();
  auto u = td.unsqueeze(0).to_tensordict();
  EXPECT_EQ(u.batch_size(), (BatchSize{1, 3, 4}));
  EXPECT_EQ(shape_of(u.get("a")), (Shape{1, 3, 4, 5}));
  auto s = td.squeeze(0).to_tensordict();
  EXPECT_EQ(s.batch_size(), (BatchSize{3, 4}));
  EXPECT_TRUE(torch::equal(s.get("b"), td.get("b")));
}

}  // namespace
}  // namespace tensordict
