// tensordict::stack and tensordict::cat: batch sizes, values, and the errors for lists that
// do not fit together. The behaviour of the lazy stack itself is in lazy_stack_test.cpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include <tensordict/tensordict.h>

#include "support/tensordict_fixtures.h"

namespace tensordict {
namespace {

using namespace tensordict::testing;

// The README's TensorDict with random "key 1" values so that stacked pieces can be told apart.
TensorDict random_readme_td() {
  return TensorDict(
      {{"key 1", torch::randn({3, 4, 5})}, {"key 2", torch::zeros({3, 4, 5}, torch::kBool)}},
      {3, 4});
}

// ---- stack -----------------------------------------------------------------------------------

TEST(StackTest, StackIsLazy) {
  torch::manual_seed(0);
  auto td0 = random_readme_td();
  auto td1 = random_readme_td();
  auto s = stack({td0, td1});
  EXPECT_TRUE(s.is_lazy_stack());
  EXPECT_EQ(s.stack_dim(), 0);
  ASSERT_EQ(s.tensordicts().size(), 2u);
  EXPECT_TRUE(s.tensordicts()[0].is_same(td0));
  EXPECT_TRUE(s.tensordicts()[1].is_same(td1));
}

TEST(StackTest, StackAlongFirstDimPrependsStackLength) {
  // tutorial: torch.stack([tensordict, tensordict.clone()], 0) -> [2, 3, 4]
  torch::manual_seed(0);
  auto td = TensorDict({{"a", torch::randn({3, 4, 5})}, {"b", torch::randn({3, 4})}}, {3, 4});
  auto s = stack({td, td.clone()}, 0);
  EXPECT_EQ(s.batch_size(), (BatchSize{2, 3, 4}));
  EXPECT_EQ(shape_of(s.get("a")), (Shape{2, 3, 4, 5}));
  EXPECT_EQ(shape_of(s.get("b")), (Shape{2, 3, 4}));
  EXPECT_TRUE(torch::equal(s.get("a")[1], td.get("a")));
}

TEST(StackTest, StackAlongSecondDimInsertsStackLength) {
  // README: torch.stack(tensordicts, 1) -> [3, 2, 4], "key 1" [3, 2, 4, 5]
  torch::manual_seed(0);
  std::vector<TensorDict> tds = {random_readme_td(), random_readme_td()};
  auto s = stack(tds, 1);
  EXPECT_EQ(s.batch_size(), (BatchSize{3, 2, 4}));
  EXPECT_EQ(shape_of(s.get("key 1")), (Shape{3, 2, 4, 5}));
  EXPECT_EQ(shape_of(s.get("key 2")), (Shape{3, 2, 4, 5}));
  EXPECT_EQ(s.get("key 2").scalar_type(), torch::kBool);
  EXPECT_TRUE(
      torch::equal(s.get("key 1"), torch::stack({tds[0].get("key 1"), tds[1].get("key 1")}, 1)));
}

TEST(StackTest, StackAlongLastPositionWithNegativeDim) {
  torch::manual_seed(0);
  std::vector<TensorDict> tds = {random_readme_td(), random_readme_td(), random_readme_td()};
  auto s = stack(tds, -1);
  EXPECT_EQ(s.stack_dim(), 2);
  EXPECT_EQ(s.batch_size(), (BatchSize{3, 4, 3}));
  EXPECT_EQ(shape_of(s.get("key 1")), (Shape{3, 4, 3, 5}));
  EXPECT_TRUE(torch::equal(s.get("key 1").select(2, 2), tds[2].get("key 1")));
}

TEST(StackTest, StackOfEmptyBatchSizeTensorDicts) {
  // tutorial: a collate function that stacks TensorDicts of batch size [].
  torch::manual_seed(0);
  std::vector<TensorDict> items;
  for (int i = 0; i < 4; ++i)
    items.push_back(
        TensorDict({{"modality_A", torch::randn({2})}, {"modality_B", torch::randn({2})}}, {}));
  auto batch = stack(items, 0);
  EXPECT_EQ(batch.batch_size(), (BatchSize{4}));
  EXPECT_EQ(shape_of(batch.get("modality_A")), (Shape{4, 2}));
  EXPECT_TRUE(torch::equal(batch.get("modality_B")[3], items[3].get("modality_B")));
}

TEST(StackTest, StackOfOneTensorDict) {
  auto td = TensorDict({{"a", torch::ones({3})}}, {3});
  auto s = stack({td});
  EXPECT_EQ(s.batch_size(), (BatchSize{1, 3}));
  EXPECT_TRUE(torch::equal(s.get("a"), torch::ones({1, 3})));
}

TEST(StackTest, StackOfUnequalBatchSizesThrowsShapeError) {
  auto td0 = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  auto td1 = TensorDict({{"a", torch::zeros({3, 5})}}, {3, 5});
  EXPECT_THAT(
      [&] {
        stack({td0, td1});
      },
      ThrowsMessage<ShapeError>(
          AllOf(HasSubstr("tensordict::stack"), HasSubstr("[3, 4]"), HasSubstr("[3, 5]"))));
}

TEST(StackTest, StackOfEmptyListThrowsValueError) {
  EXPECT_THAT([] { stack({}); }, ThrowsMessage<ValueError>(HasSubstr("empty")));
}

TEST(StackTest, StackDimOutOfRangeThrowsValueError) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  EXPECT_THAT(
      [&] {
        stack({td, td}, 3);
      },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("tensordict::stack"), HasSubstr("dim 3"))));
  EXPECT_THROW(stack({td, td}, -4), ValueError);
}

// ---- cat -------------------------------------------------------------------------------------

TEST(CatTest, CatAlongFirstDim) {
  // README: torch.cat(tensordicts, 0) -> [6, 4], "key 1" [6, 4, 5]
  torch::manual_seed(0);
  std::vector<TensorDict> tds = {random_readme_td(), random_readme_td()};
  auto c = cat(tds, 0);
  EXPECT_FALSE(c.is_lazy_stack());
  EXPECT_EQ(c.batch_size(), (BatchSize{6, 4}));
  EXPECT_EQ(shape_of(c.get("key 1")), (Shape{6, 4, 5}));
  EXPECT_EQ(c.get("key 2").scalar_type(), torch::kBool);
  EXPECT_TRUE(
      torch::equal(c.get("key 1"), torch::cat({tds[0].get("key 1"), tds[1].get("key 1")}, 0)));
}

TEST(CatTest, CatAlongSecondDim) {
  torch::manual_seed(0);
  std::vector<TensorDict> tds = {random_readme_td(), random_readme_td()};
  auto c = cat(tds, 1);
  EXPECT_EQ(c.batch_size(), (BatchSize{3, 8}));
  EXPECT_EQ(shape_of(c.get("key 1")), (Shape{3, 8, 5}));
  EXPECT_TRUE(torch::equal(c.get("key 1").slice(1, 4), tds[1].get("key 1")));
  EXPECT_EQ(cat(tds, -1).batch_size(), (BatchSize{3, 8}));
}

TEST(CatTest, CatOfUnbindRebuildsFlattenedBatch) {
  // tutorial: torch.cat(tensordict.unbind(0), dim=0) -> [12], a [12, 5]
  torch::manual_seed(0);
  auto td = TensorDict({{"a", torch::randn({3, 4, 5})}, {"b", torch::randn({3, 4})}}, {3, 4});
  auto c = cat(td.unbind(0), 0);
  EXPECT_EQ(c.batch_size(), (BatchSize{12}));
  EXPECT_EQ(shape_of(c.get("a")), (Shape{12, 5}));
  EXPECT_EQ(shape_of(c.get("b")), (Shape{12}));
  EXPECT_TRUE(torch::equal(c.get("a"), td.get("a").reshape({12, 5})));
}

TEST(CatTest, CatCopiesValues) {
  auto td0 = TensorDict({{"a", torch::zeros({2})}}, {2});
  auto td1 = TensorDict({{"a", torch::zeros({3})}}, {3});
  auto c = cat({td0, td1});
  c.get("a").fill_(1);
  EXPECT_EQ(td0.get("a").sum().item<float>(), 0.0f);
  EXPECT_EQ(td1.get("a").sum().item<float>(), 0.0f);
  EXPECT_EQ(c.batch_size(), (BatchSize{5}));
}

TEST(CatTest, CatConcatenatesNestedTensorDictsWithLongerBatch) {
  auto make = [](float v, int64_t n) {
    return TensorDict({{"n", TensorDict({{"x", torch::full({n, 4, 2}, v)}}, {n, 4})}}, {n});
  };
  auto c = cat({make(1, 2), make(2, 3)});
  EXPECT_EQ(c.batch_size(), (BatchSize{5}));
  EXPECT_EQ(c.get_tensordict("n").batch_size(), (BatchSize{5, 4}));
  EXPECT_EQ(shape_of(c.get({"n", "x"})), (Shape{5, 4, 2}));
  EXPECT_TRUE(torch::equal(c.get({"n", "x"}).sum({1, 2}),
                           torch::tensor({8.0f, 8.0f, 16.0f, 16.0f, 16.0f})));
}

TEST(CatTest, CatOfLazyStacksIsDense) {
  auto a = TensorDict({{"x", torch::zeros({3})}}, {3});
  auto b = TensorDict({{"x", torch::ones({3})}}, {3});
  auto c = cat({stack({a, b}), stack({b, a})});
  EXPECT_FALSE(c.is_lazy_stack());
  EXPECT_EQ(c.batch_size(), (BatchSize{4, 3}));
  EXPECT_TRUE(torch::equal(c.get("x").sum(1), torch::tensor({0.0f, 3.0f, 3.0f, 0.0f})));
}

TEST(CatTest, CatWithDifferentKeysThrowsKeyError) {
  auto td0 = TensorDict({{"a", torch::zeros({2})}, {"b", torch::zeros({2})}}, {2});
  auto td1 = TensorDict({{"a", torch::zeros({2})}, {"c", torch::zeros({2})}}, {2});
  EXPECT_THAT(
      [&] {
        cat({td0, td1});
      },
      ThrowsMessage<KeyError>(
          AllOf(HasSubstr("tensordict::cat"), HasSubstr("'c'"), HasSubstr("'b'"))));
}

TEST(CatTest, CatWithDifferentNestedKeysThrowsKeyErrorNamingPath) {
  auto td0 = TensorDict({{"n", {{"x", torch::zeros({2})}}}}, {2});
  auto td1 = TensorDict({{"n", {{"y", torch::zeros({2})}}}}, {2});
  EXPECT_THAT([&] { cat({td0, td1}); }, ThrowsMessage<KeyError>(HasSubstr("'n'")));
}

TEST(CatTest, CatWithDifferentOtherBatchDimsThrowsShapeError) {
  auto td0 = TensorDict({{"a", torch::zeros({2, 3})}}, {2, 3});
  auto td1 = TensorDict({{"a", torch::zeros({2, 4})}}, {2, 4});
  EXPECT_THAT(
      [&] {
        cat({td0, td1}, 0);
      },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("[2, 3]"), HasSubstr("[2, 4]"))));
}

TEST(CatTest, CatWithDifferentFeatureShapesThrowsShapeErrorNamingKey) {
  auto td0 = TensorDict({{"a", torch::zeros({2, 3})}}, {2});
  auto td1 = TensorDict({{"a", torch::zeros({2, 5})}}, {2});
  EXPECT_THAT([&] { cat({td0, td1}); }, ThrowsMessage<ShapeError>(HasSubstr("'a'")));
}

TEST(CatTest, CatOfEmptyListThrowsValueError) {
  EXPECT_THAT([] { cat({}); }, ThrowsMessage<ValueError>(HasSubstr("empty")));
}

TEST(CatTest, CatOfEmptyBatchSizeThrowsValueError) {
  auto td = TensorDict({{"a", torch::zeros({2})}}, {});
  EXPECT_THAT([&] { cat({td, td}); }, ThrowsMessage<ValueError>(HasSubstr("stack")));
}

TEST(CatTest, CatDimOutOfRangeThrowsValueError) {
  auto td = TensorDict({{"a", torch::zeros({2, 3})}}, {2});
  EXPECT_THROW(cat({td, td}, 1), ValueError);
}

}  // namespace
}  // namespace tensordict
