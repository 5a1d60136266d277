// get_sub_tensordict: a write-through view of a region of a TensorDict, for slices, index
// tensors and masks alike.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include <tensordict/tensordict.h>

#include "support/tensordict_fixtures.h"

namespace tensordict {
namespace {

using namespace tensordict::testing;

// ---- Reads -----------------------------------------------------------------------------------

TEST(SubTensorDictTest, HasIndexedBatchSizeAndShapes) {
  auto td = tutorial_zeros_td();
  auto sub = td.get_sub_tensordict({Slice(), torch::tensor({1, 3})});
  EXPECT_TRUE(sub.is_sub_tensordict());
  EXPECT_FALSE(td.is_sub_tensordict());
  EXPECT_EQ(sub.batch_size(), (BatchSize{3, 2}));
  EXPECT_EQ(shape_of(sub.get("a")), (Shape{3, 2, 5}));
  EXPECT_EQ(shape_of(sub.get("b")), (Shape{3, 2}));
}

TEST(SubTensorDictTest, ReadsSeeParentFillAfterCreation) {
  // tutorial: subtd = tensordict[:, torch.tensor([1, 3])]; tensordict.fill_("a", -1)
  auto td = tutorial_zeros_td();
  auto subtd = td.get_sub_tensordict({Slice(), torch::tensor({1, 3})});
  td.fill_("a", -1);
  EXPECT_TRUE((subtd.get("a") == -1).all().item<bool>());
  EXPECT_TRUE((subtd.get("b") == 0).all().item<bool>());
}

TEST(SubTensorDictTest, ReadsSeeParentWritesThroughMask) {
  auto td = TensorDict({{"a", torch::zeros({4})}}, {4});
  auto sub = td.get_sub_tensordict({torch::tensor({true, false, false, true})});
  EXPECT_EQ(sub.batch_size(), (BatchSize{2}));
  td.set_("a", torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}));
  EXPECT_TRUE(torch::equal(sub.get("a"), torch::tensor({1.0f, 4.0f})));
}

TEST(SubTensorDictTest, ReadsSeeTensorReplacedInParent) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  auto sub = td.get_sub_tensordict({Slice(1, None)});
  td.set("a", torch::tensor({5.0f, 6.0f, 7.0f}));
  EXPECT_TRUE(torch::equal(sub.get("a"), torch::tensor({6.0f, 7.0f})));
}

TEST(SubTensorDictTest, ReadsSeeKeysAddedToParentAfterCreation) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  auto sub = td.get_sub_tensordict({torch::tensor({2, 0})});
  td.set("late", torch::tensor({10.0f, 11.0f, 12.0f}));
  ASSERT_TRUE(sub.contains("late"));
  EXPECT_TRUE(torch::equal(sub.get("late"), torch::tensor({12.0f, 10.0f})));
}

// ---- Writes land in the parent -------------------------------------------------------------

TEST(SubTensorDictTest, SetInPlaceWritesParentRegionOnly) {
  auto td = tutorial_zeros_td();
  auto sub = td.get_sub_tensordict({Slice(), torch::tensor({1, 3})});
  sub.set_("b", torch::ones({3, 2}));
  auto expected = torch::tensor({0.0f, 1.0f, 0.0f, 1.0f}).expand({3, 4});
  EXPECT_TRUE(torch::equal(td.get("b"), expected));
}

TEST(SubTensorDictTest, SetExistingKeyWritesParentRegion) {
  auto td = TensorDict({{"a", torch::zeros({4, 2})}}, {4});
  auto sub = td.get_sub_tensordict({Slice(1, 3)});
  sub.set("a", torch::full({2, 2}, 3.0));
  EXPECT_EQ(shape_of(td.get("a")), (Shape{4, 2}));
  EXPECT_TRUE(torch::equal(td.get("a").sum(1), torch::tensor({0.0f, 6.0f, 6.0f, 0.0f})));
}

TEST(SubTensorDictTest, SetNewKeyAllocatesItInParentAtFullSize) {
  auto td = TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4});
  auto sub = td.get_sub_tensordict({Slice(0, 2)});
  sub.set("new", torch::ones({2, 4, 6}));
  ASSERT_TRUE(td.contains("new"));
  EXPECT_EQ(shape_of(td.get("new")), (Shape{3, 4, 6}));
  EXPECT_TRUE((td.get("new").slice(0, 0, 2) == 1).all().item<bool>());
  EXPECT_TRUE((td.get("new")[2] == 0).all().item<bool>());
  EXPECT_EQ(shape_of(sub.get("new")), (Shape{2, 4, 6}));
}

TEST(SubTensorDictTest, SetNewKeyThroughMaskAllocatesInParent) {
  auto td = TensorDict({{"a", torch::zeros({4})}}, {4});
  auto sub = td.get_sub_tensordict({torch::tensor({false, true, false, true})});
  sub.set("flag", torch::tensor({true, true}));
  EXPECT_EQ(td.get("flag").scalar_type(), torch::kBool);
  EXPECT_TRUE(torch::equal(td.get("flag"), torch::tensor({false, true, false, true})));
}

TEST(SubTensorDictTest, SetRejectsValueOfWrongBatchShape) {
  auto td = TensorDict({{"a", torch::zeros({4})}}, {4});
  auto sub = td.get_sub_tensordict({Slice(0, 2)});
  EXPECT_THAT([&] { sub.set("a", torch::ones({3})); },
              ThrowsMessage<ShapeError>(HasSubstr("batch_size [2]")));
  EXPECT_EQ(td.get("a").sum().item<float>(), 0.0f);
}

TEST(SubTensorDictTest, UpdateWritesParentRegion) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  auto sub = td.get_sub_tensordict({torch::tensor({0, 2})});
  sub.update(TensorDict({{"a", torch::tensor({4.0f, 5.0f})}, {"c", torch::ones({2, 3})}}, {2}));
  EXPECT_TRUE(torch::equal(td.get("a"), torch::tensor({4.0f, 0.0f, 5.0f})));
  EXPECT_EQ(shape_of(td.get("c")), (Shape{3, 3}));
  EXPECT_TRUE(torch::equal(td.get("c").sum(1), torch::tensor({3.0f, 0.0f, 3.0f})));
}

TEST(SubTensorDictTest, ApplyInPlaceWritesParentRegion) {
  auto td = TensorDict({{"a", torch::ones({4})}, {"n", {{"x", torch::ones({4, 2})}}}}, {4});
  auto sub = td.get_sub_tensordict({Slice(2, None)});
  sub.apply_([](const torch::Tensor& t) { return t * 10; });
  EXPECT_TRUE(torch::equal(td.get("a"), torch::tensor({1.0f, 1.0f, 10.0f, 10.0f})));
  EXPECT_TRUE(torch::equal(td.get({"n", "x"}).sum(1), torch::tensor({2.0f, 2.0f, 20.0f, 20.0f})));
}

TEST(SubTensorDictTest, FillKeyWritesParentRegion) {
  auto td = TensorDict({{"a", torch::zeros({4})}, {"b", torch::zeros({4})}}, {4});
  auto sub = td.get_sub_tensordict({torch::tensor({true, true, false, false})});
  sub.fill_("a", 2);
  EXPECT_TRUE(torch::equal(td.get("a"), torch::tensor({2.0f, 2.0f, 0.0f, 0.0f})));
  EXPECT_EQ(td.get("b").sum().item<float>(), 0.0f);
}

TEST(SubTensorDictTest, FillAllWritesParentRegionOfEveryLeaf) {
  auto td = tutorial_zeros_td();
  auto sub = td.get_sub_tensordict({1});
  sub.fill_(1);
  EXPECT_EQ(td.get("a").sum().item<float>(), 4.0f * 5);
  EXPECT_TRUE((td.get("a")[1] == 1).all().item<bool>());
  EXPECT_TRUE((td.get("b")[1] == 1).all().item<bool>());
  EXPECT_EQ(td.get("b").sum().item<float>(), 4.0f);
}

TEST(SubTensorDictTest, WritesAreVisibleThroughOtherParentAliases) {
  auto a = torch::zeros({3});
  auto td = TensorDict({{"a", a}}, {3});
  auto alias = td;
  td.get_sub_tensordict({0}).set_("a", torch::tensor(1.0f));
  EXPECT_EQ(alias.get("a")[0].item<float>(), 1.0f);
  EXPECT_EQ(a[0].item<float>(), 1.0f);
}

// ---- Nested keys -----------------------------------------------------------------------------

TEST(SubTensorDictTest, NestedTensorDictIsAViewWithLongerBatch) {
  auto td = TensorDict({{"n", TensorDict({{"x", torch::zeros({3, 4, 2})}}, {3, 4})}}, {3});
  auto sub = td.get_sub_tensordict({Slice(0, 2)});
  auto nested = sub.get_tensordict("n");
  EXPECT_TRUE(nested.is_sub_tensordict());
  EXPECT_EQ(nested.batch_size(), (BatchSize{2, 4}));
  EXPECT_EQ(shape_of(sub.get({"n", "x"})), (Shape{2, 4, 2}));
}

TEST(SubTensorDictTest, NestedReadsSeeParentChanges) {
  auto td = TensorDict({{"n", {{"x", torch::zeros({3})}}}}, {3});
  auto sub = td.get_sub_tensordict({torch::tensor({2})});
  td.set_({"n", "x"}, torch::tensor({1.0f, 2.0f, 3.0f}));
  EXPECT_TRUE(torch::equal(sub.get({"n", "x"}), torch::tensor({3.0f})));
}

TEST(SubTensorDictTest, SetNestedExistingKeyWritesParent) {
  auto td = TensorDict({{"n", {{"x", torch::zeros({3, 2})}}}}, {3});
  auto sub = td.get_sub_tensordict({Slice(1, 2)});
  sub.set({"n", "x"}, torch::ones({1, 2}));
  EXPECT_TRUE(torch::equal(td.get({"n", "x"}).sum(1), torch::tensor({0.0f, 2.0f, 0.0f})));
}

TEST(SubTensorDictTest, SetNestedNewKeyAllocatesInParentNestedTensorDict) {
  auto td = TensorDict({{"n", {{"x", torch::zeros({3})}}}}, {3});
  auto sub = td.get_sub_tensordict({0});
  sub.set({"n", "y"}, torch::full({4}, 2.0));
  EXPECT_EQ(shape_of(td.get({"n", "y"})), (Shape{3, 4}));
  EXPECT_TRUE(torch::equal(td.get({"n", "y"}).sum(1), torch::tensor({8.0f, 0.0f, 0.0f})));
}

TEST(SubTensorDictTest, SetUnderNewNestedKeyCreatesParentNestedTensorDict) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  auto sub = td.get_sub_tensordict({Slice(1, None)});
  sub.set({"m", "z"}, torch::ones({2}));
  EXPECT_EQ(td.get_tensordict("m").batch_size(), (BatchSize{3}));
  EXPECT_TRUE(torch::equal(td.get({"m", "z"}), torch::tensor({0.0f, 1.0f, 1.0f})));
}

TEST(SubTensorDictTest, SetInPlaceNestedKeyWithLongerBatchWritesParent) {
  auto td = TensorDict({{"n", TensorDict({{"x", torch::zeros({3, 4})}}, {3, 4})}}, {3});
  auto sub = td.get_sub_tensordict({torch::tensor({false, true, true})});
  sub.set_({"n", "x"}, torch::ones({2, 4}));
  EXPECT_TRUE(torch::equal(td.get({"n", "x"}).sum(1), torch::tensor({0.0f, 4.0f, 4.0f})));
}

// ---- Copies and errors -----------------------------------------------------------------------

TEST(SubTensorDictTest, ToTensordictDetachesFromParent) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  auto copy = td.get_sub_tensordict({Slice(0, 2)}).to_tensordict();
  EXPECT_FALSE(copy.is_sub_tensordict());
  copy.get("a").fill_(1);
  td.set_("a", torch::full({3}, 5.0));
  EXPECT_TRUE(torch::equal(copy.get("a"), torch::ones({2})));
  EXPECT_EQ(td.get("a").sum().item<float>(), 15.0f);
}

TEST(SubTensorDictTest, IndexThatDoesNotFitThrowsIndexError) {
  auto td = tutorial_zeros_td();
  EXPECT_THAT(
      [&] {
        td.get_sub_tensordict({0, 0, 0});
      },
      ThrowsMessage<IndexError>(HasSubstr("batch_size [3, 4]")));
  EXPECT_THAT(
      [&] {
        td.get_sub_tensordict({Slice(), 9});
      },
      ThrowsMessage<IndexError>(HasSubstr("batch_size [3, 4]")));
}

TEST(SubTensorDictTest, DeletingThroughViewThrowsAndKeepsKey) {
  auto td = tutorial_zeros_td();
  auto sub = td.get_sub_tensordict({0});
  EXPECT_THROW(sub.del_("a"), Error);
  EXPECT_TRUE(td.contains("a"));
}

}  // namespace
}  // namespace tensordict
