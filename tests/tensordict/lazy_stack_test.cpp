// LazyStackedTensorDict: reads stack on demand, writes go through to the stacked
// TensorDicts, indexing along the stack dim returns the members themselves.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include <tensordict/tensordict.h>

#include "support/tensordict_fixtures.h"

namespace tensordict {
namespace {

using namespace tensordict::testing;

// The overview's members: "a" [10] and "b" [10, 4, 4] (smaller than the overview's
// 1000 x 1000), batch [10], random values.
std::vector<TensorDict> overview_members(int n = 3) {
  std::vector<TensorDict> tds;
  for (int i = 0; i < n; ++i)
    tds.push_back(TensorDict({{"a", torch::rand({10})}, {"b", torch::rand({10, 4, 4})}}, {10}));
  return tds;
}

// Members with a nested TensorDict and a key whose feature shape differs between members.
std::vector<TensorDict> heterogeneous_members() {
  return {TensorDict({{"a", torch::zeros({3})},
                      {"b", torch::zeros({3, 4})},
                      {"n", {{"x", torch::zeros({3, 2})}}}},
                     {3}),
          TensorDict({{"a", torch::ones({3})},
                      {"b", torch::ones({3, 5})},
                      {"n", {{"x", torch::ones({3, 2})}}}},
                     {3})};
}

// ---- Reading -------------------------------------------------------------------------------

TEST(LazyStackTest, GetStacksMemberTensorsOnDemand) {
  // overview: stacked = torch.stack(tensordicts, 0); stacked["a"]
  torch::manual_seed(0);
  auto tds = overview_members();
  auto stacked = stack(tds, 0);
  EXPECT_EQ(stacked.batch_size(), (BatchSize{3, 10}));
  auto a = stacked.get("a");
  EXPECT_EQ(shape_of(a), (Shape{3, 10}));
  EXPECT_TRUE(torch::equal(a, torch::stack({tds[0].get("a"), tds[1].get("a"), tds[2].get("a")})));
  EXPECT_EQ(shape_of(stacked.get("b")), (Shape{3, 10, 4, 4}));
}

TEST(LazyStackTest, ReadsSeeLaterWritesToMembers) {
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  tds[1].set("a", torch::full({10}, 7.0));
  EXPECT_TRUE((stacked.get("a")[1] == 7).all().item<bool>());
  tds[0].set("late", torch::zeros({10, 2}));
  tds[1].set("late", torch::ones({10, 2}));
  EXPECT_TRUE(stacked.contains("late"));
  EXPECT_TRUE(torch::equal(stacked.get("late").sum({1, 2}), torch::tensor({0.0f, 20.0f})));
}

TEST(LazyStackTest, KeysAreThoseEveryMemberHas) {
  auto td0 = TensorDict({{"a", torch::zeros({3})}, {"only0", torch::zeros({3})}}, {3});
  auto td1 = TensorDict({{"a", torch::zeros({3})}, {"only1", torch::zeros({3})}}, {3});
  auto s = stack({td0, td1});
  EXPECT_EQ(s.keys(), (std::vector<NestedKey>{"a"}));
  EXPECT_TRUE(s.contains("a"));
  EXPECT_FALSE(s.contains("only0"));
  EXPECT_THROW(s.get("only0"), KeyError);
}

TEST(LazyStackTest, HeterogeneousLeafShapesAreAllowed) {
  auto s = stack(heterogeneous_members(), 0);
  EXPECT_EQ(s.batch_size(), (BatchSize{2, 3}));
  EXPECT_TRUE(torch::equal(s.get("a"),
                           torch::tensor({0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f}).reshape({2, 3})));
}

TEST(LazyStackTest, GetOfHeterogeneousKeyThrowsShapeErrorNamingShapes) {
  auto s = stack(heterogeneous_members(), 0);
  EXPECT_THAT(
      [&] { s.get("b"); },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("'b'"), HasSubstr("[3, 4]"), HasSubstr("[3, 5]"))));
}

TEST(LazyStackTest, HeterogeneousKeyIsReadablePerMember) {
  auto s = stack(heterogeneous_members(), 0);
  EXPECT_EQ(shape_of(s.tensordicts()[0].get("b")), (Shape{3, 4}));
  EXPECT_EQ(shape_of(s.tensordicts()[1].get("b")), (Shape{3, 5}));
  EXPECT_EQ(shape_of(s.index({1}).get("b")), (Shape{3, 5}));
  EXPECT_TRUE((s.index({1}).get("b") == 1).all().item<bool>());
}

TEST(LazyStackTest, NestedTensorDictComesBackAsLazyStack) {
  auto tds = heterogeneous_members();
  auto s = stack(tds, 0);
  auto n = s.get_tensordict("n");
  ASSERT_TRUE(n.is_lazy_stack());
  EXPECT_EQ(n.batch_size(), (BatchSize{2, 3}));
  LazyStackedTensorDict lazy_n(n);
  EXPECT_TRUE(lazy_n.tensordicts()[1].is_same(tds[1].get_tensordict("n")));
  EXPECT_EQ(shape_of(s.get({"n", "x"})), (Shape{2, 3, 2}));
  EXPECT_EQ(s.get({"n", "x"}).sum().item<float>(), 6.0f);
}

TEST(LazyStackTest, ViewingDenseTensorDictAsLazyStackThrowsTypeError) {
  auto td = TensorDict({{"a", torch::zeros({3})}}, {3});
  EXPECT_FALSE(td.is_lazy_stack());
  EXPECT_THAT([&] { LazyStackedTensorDict lazy(td); },
              ThrowsMessage<TypeError>(HasSubstr("not a lazy stack")));
}

// ---- Writes go through to the members ---------------------------------------------------------

TEST(LazyStackTest, SetWritesSlicesIntoMembers) {
  // overview: stacked["a"] = torch.zeros_like(stacked["a"]); tensordicts[0]["a"] == 0
  torch::manual_seed(0);
  auto tds = overview_members();
  auto stacked = stack(tds, 0);
  stacked.set("a", torch::zeros_like(stacked.get("a")));
  for (const auto& td : tds) EXPECT_TRUE((td.get("a") == 0).all().item<bool>());
}

TEST(LazyStackTest, SetNewKeyAddsItToEveryMember) {
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  stacked.set("c", torch::arange(2 * 10).reshape({2, 10}));
  EXPECT_TRUE(torch::equal(tds[0].get("c"), torch::arange(10)));
  EXPECT_TRUE(torch::equal(tds[1].get("c"), torch::arange(10, 20)));
}

TEST(LazyStackTest, SetNestedKeyAddsItToEveryMember) {
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  stacked.set({"next", "reward"}, torch::ones({2, 10, 1}));
  EXPECT_EQ(tds[0].get_tensordict("next").batch_size(), (BatchSize{10}));
  EXPECT_EQ(shape_of(tds[1].get({"next", "reward"})), (Shape{10, 1}));
  EXPECT_EQ(shape_of(stacked.get({"next", "reward"})), (Shape{2, 10, 1}));
}

TEST(LazyStackTest, SetWithWrongBatchShapeThrowsAndLeavesMembersUnchanged) {
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  EXPECT_THROW(stacked.set("c", torch::zeros({3, 10})), ShapeError);
  EXPECT_FALSE(tds[0].contains("c"));
  EXPECT_FALSE(tds[1].contains("c"));
}

TEST(LazyStackTest, SetInPlaceWritesIntoMemberTensors) {
  auto a0 = torch::zeros({3});
  auto a1 = torch::zeros({3});
  auto s = stack({TensorDict({{"a", a0}}, {3}), TensorDict({{"a", a1}}, {3})});
  s.set_("a", torch::tensor({1.0f, 2.0f}).unsqueeze(1).expand({2, 3}));
  EXPECT_TRUE(torch::equal(a0, torch::full({3}, 1.0)));
  EXPECT_TRUE(torch::equal(a1, torch::full({3}, 2.0)));
}

TEST(LazyStackTest, UpdateWritesIntoMembers) {
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  stacked.update(
      TensorDict({{"a", torch::ones({2, 10})}, {"d", torch::zeros({2, 10, 3})}}, {2, 10}));
  EXPECT_TRUE((tds[1].get("a") == 1).all().item<bool>());
  EXPECT_EQ(shape_of(tds[0].get("d")), (Shape{10, 3}));
}

TEST(LazyStackTest, ApplyInPlaceWritesIntoMembers) {
  auto s = stack(heterogeneous_members(), 0);
  s.apply_([](const torch::Tensor& t) { return t + 1; });
  // Heterogeneous leaves too: each member's own tensor is updated.
  EXPECT_TRUE((s.tensordicts()[0].get("b") == 1).all().item<bool>());
  EXPECT_TRUE((s.tensordicts()[1].get("b") == 2).all().item<bool>());
  EXPECT_TRUE((s.tensordicts()[1].get({"n", "x"}) == 2).all().item<bool>());
}

TEST(LazyStackTest, FillKeyWritesIntoMembers) {
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  stacked.fill_("a", 3);
  EXPECT_TRUE((tds[0].get("a") == 3).all().item<bool>());
  EXPECT_TRUE((tds[1].get("a") == 3).all().item<bool>());
  EXPECT_FALSE((tds[0].get("b") == 3).all().item<bool>());
}

TEST(LazyStackTest, FillAllWritesHeterogeneousMembers) {
  auto s = stack(heterogeneous_members(), 0);
  s.fill_(5);
  EXPECT_TRUE((s.tensordicts()[0].get("b") == 5).all().item<bool>());
  EXPECT_TRUE((s.tensordicts()[1].get("b") == 5).all().item<bool>());
  EXPECT_TRUE((s.tensordicts()[1].get({"n", "x"}) == 5).all().item<bool>());
}

TEST(LazyStackTest, IndexPutAlongStackDimWritesOneMember) {
  auto tds = overview_members(3);
  auto stacked = stack(tds, 0);
  stacked.index_put_(
      {1}, TensorDict({{"a", torch::zeros({10})}, {"b", torch::zeros({10, 4, 4})}}, {10}));
  EXPECT_TRUE((tds[1].get("a") == 0).all().item<bool>());
  EXPECT_TRUE((tds[1].get("b") == 0).all().item<bool>());
  EXPECT_GT(tds[0].get("a").sum().item<float>(), 0.0f);
  EXPECT_GT(tds[2].get("a").sum().item<float>(), 0.0f);
}

TEST(LazyStackTest, IndexPutScalarAcrossMembers) {
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  stacked.index_put_({Slice(), Slice(0, 5)}, -1);
  for (const auto& td : tds) {
    EXPECT_TRUE((td.get("a").slice(0, 0, 5) == -1).all().item<bool>());
    EXPECT_TRUE((td.get("a").slice(0, 5) >= 0).all().item<bool>());
  }
}

TEST(LazyStackTest, IndexPutPreallocatesMissingKeysInMembers) {
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  stacked.index_put_({0, 3}, TensorDict({{"new", torch::ones({2})}}, {}));
  EXPECT_EQ(shape_of(tds[0].get("new")), (Shape{10, 2}));
  EXPECT_EQ(shape_of(tds[1].get("new")), (Shape{10, 2}));
  EXPECT_EQ(tds[0].get("new").sum().item<float>(), 2.0f);
  EXPECT_EQ(tds[0].get("new")[3].sum().item<float>(), 2.0f);
  EXPECT_EQ(tds[1].get("new").sum().item<float>(), 0.0f);
}

// ---- Indexing ------------------------------------------------------------------------------

TEST(LazyStackTest, IndexAlongStackDimReturnsOriginalMember) {
  auto tds = overview_members(3);
  auto stacked = stack(tds, 0);
  EXPECT_TRUE(stacked.index({0}).is_same(tds[0]));
  EXPECT_TRUE(stacked.index({2}).is_same(tds[2]));
  EXPECT_TRUE(stacked.index({-1}).is_same(tds[2]));
}

TEST(LazyStackTest, SliceAlongStackDimGivesLazyStackOfMembers) {
  auto tds = overview_members(3);
  auto stacked = stack(tds, 0);
  auto head = stacked.index({Slice(0, 2)});
  ASSERT_TRUE(head.is_lazy_stack());
  LazyStackedTensorDict lazy(head);
  EXPECT_EQ(head.batch_size(), (BatchSize{2, 10}));
  ASSERT_EQ(lazy.tensordicts().size(), 2u);
  EXPECT_TRUE(lazy.tensordicts()[0].is_same(tds[0]));
  EXPECT_TRUE(lazy.tensordicts()[1].is_same(tds[1]));
}

TEST(LazyStackTest, IndexTensorAlongStackDimGivesLazyStackInGivenOrder) {
  auto tds = overview_members(3);
  auto stacked = stack(tds, 0);
  auto picked = stacked.index({torch::tensor({2, 0})});
  ASSERT_TRUE(picked.is_lazy_stack());
  LazyStackedTensorDict lazy(picked);
  EXPECT_TRUE(lazy.tensordicts()[0].is_same(tds[2]));
  EXPECT_TRUE(lazy.tensordicts()[1].is_same(tds[0]));
  EXPECT_TRUE(torch::equal(picked.get("a")[0], tds[2].get("a")));
}

TEST(LazyStackTest, WritesThroughSliceOfStackReachMembers) {
  auto tds = overview_members(3);
  auto stacked = stack(tds, 0);
  stacked.index({Slice(1, None)}).fill_("a", 0);
  EXPECT_TRUE((tds[1].get("a") == 0).all().item<bool>());
  EXPECT_TRUE((tds[2].get("a") == 0).all().item<bool>());
  EXPECT_GT(tds[0].get("a").sum().item<float>(), 0.0f);
}

TEST(LazyStackTest, IndexInsideMembersKeepsStack) {
  torch::manual_seed(0);
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  auto cols = stacked.index({Slice(), Slice(0, 4)});
  EXPECT_EQ(cols.batch_size(), (BatchSize{2, 4}));
  EXPECT_TRUE(torch::equal(cols.get("a"), stacked.get("a").slice(1, 0, 4)));
  auto one = stacked.index({1, 3});
  EXPECT_EQ(one.batch_size(), (BatchSize{}));
  EXPECT_EQ(one.get("a").item<float>(), tds[1].get("a")[3].item<float>());
}

TEST(LazyStackTest, MaskIndexReturnsGatheredValues) {
  torch::manual_seed(0);
  auto tds = overview_members(3);
  auto stacked = stack(tds, 0);
  auto picked = stacked.index({torch::tensor({true, false, true})});
  EXPECT_EQ(picked.batch_size(), (BatchSize{2, 10}));
  EXPECT_TRUE(torch::equal(picked.get("a")[1], tds[2].get("a")));
}

// ---- Stack along dim 1 -----------------------------------------------------------------------

TEST(LazyStackTest, StackAlongDimOneReadsAndIndexesMembers) {
  // README: torch.stack(tensordicts, 1) of two [3, 4] -> [3, 2, 4], "key 1" [3, 2, 4, 5]
  torch::manual_seed(0);
  std::vector<TensorDict> tds;
  for (int i = 0; i < 2; ++i)
    tds.push_back(TensorDict(
        {{"key 1", torch::randn({3, 4, 5})}, {"key 2", torch::zeros({3, 4, 5}, torch::kBool)}},
        {3, 4}));
  auto s = stack(tds, 1);
  EXPECT_EQ(s.batch_size(), (BatchSize{3, 2, 4}));
  EXPECT_EQ(shape_of(s.get("key 1")), (Shape{3, 2, 4, 5}));

  auto member1 = s.index({Slice(), 1});
  EXPECT_EQ(member1.batch_size(), (BatchSize{3, 4}));
  EXPECT_TRUE(torch::equal(member1.get("key 1"), tds[1].get("key 1")));

  auto row = s.index({2});  // first member dim: a lazy stack of each member's row 2
  EXPECT_EQ(row.batch_size(), (BatchSize{2, 4}));
  EXPECT_TRUE(torch::equal(row.get("key 1")[0], tds[0].get("key 1")[2]));
}

TEST(LazyStackTest, SetOnStackAlongDimOneSplitsAlongThatDim) {
  auto tds = std::vector<TensorDict>{TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4}),
                                     TensorDict({{"a", torch::zeros({3, 4})}}, {3, 4})};
  auto s = stack(tds, 1);
  auto value = torch::arange(3 * 2 * 4, torch::kFloat).reshape({3, 2, 4});
  s.set("a", value);
  EXPECT_TRUE(torch::equal(tds[0].get("a"), value.select(1, 0)));
  EXPECT_TRUE(torch::equal(tds[1].get("a"), value.select(1, 1)));
}

// ---- Densifying --------------------------------------------------------------------------------

TEST(LazyStackTest, ContiguousDensifiesIntoCopy) {
  torch::manual_seed(0);
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  auto dense = stacked.contiguous();
  EXPECT_FALSE(dense.is_lazy_stack());
  EXPECT_EQ(dense.batch_size(), (BatchSize{2, 10}));
  EXPECT_TRUE(torch::equal(dense.get("b"), stacked.get("b")));
  dense.get("a").fill_(-1);
  EXPECT_TRUE((tds[0].get("a") >= 0).all().item<bool>());
}

TEST(LazyStackTest, ToTensordictDensifiesNestedStacks) {
  auto s = stack({TensorDict({{"n", {{"x", torch::zeros({3})}}}}, {3}),
                  TensorDict({{"n", {{"x", torch::ones({3})}}}}, {3})});
  auto dense = s.to_tensordict();
  EXPECT_FALSE(dense.is_lazy_stack());
  EXPECT_FALSE(dense.get_tensordict("n").is_lazy_stack());
  EXPECT_EQ(dense.get_tensordict("n").batch_size(), (BatchSize{2, 3}));
  EXPECT_TRUE(torch::equal(dense.get({"n", "x"}).sum(1), torch::tensor({0.0f, 3.0f})));
}

TEST(LazyStackTest, ContiguousOfHeterogeneousStackThrowsShapeError) {
  auto s = stack(heterogeneous_members(), 0);
  EXPECT_THAT([&] { s.contiguous(); }, ThrowsMessage<ShapeError>(HasSubstr("'b'")));
}

TEST(LazyStackTest, UnbindAlongStackDimReturnsMembers) {
  auto tds = overview_members(3);
  auto stacked = stack(tds, 0);
  auto parts = stacked.unbind(0);
  ASSERT_EQ(parts.size(), 3u);
  for (size_t i = 0; i < parts.size(); ++i) EXPECT_TRUE(parts[i].is_same(tds[i]));
}

TEST(LazyStackTest, UnbindAlongOtherDimGivesDenseSlices) {
  torch::manual_seed(0);
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  auto cols = stacked.unbind(1);
  ASSERT_EQ(cols.size(), 10u);
  EXPECT_FALSE(cols[4].is_lazy_stack());
  EXPECT_EQ(cols[4].batch_size(), (BatchSize{2}));
  EXPECT_TRUE(
      torch::equal(cols[4].get("a"), torch::stack({tds[0].get("a")[4], tds[1].get("a")[4]})));
}

TEST(LazyStackTest, ShapeOperationOnStackActsOnStackedValues) {
  torch::manual_seed(0);
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  auto flat = stacked.reshape({20});
  EXPECT_EQ(flat.batch_size(), (BatchSize{20}));
  EXPECT_TRUE(torch::equal(flat.get("a").slice(0, 10), tds[1].get("a")));
  auto p = stacked.permute({1, 0});
  EXPECT_EQ(shape_of(p.get("b")), (Shape{10, 2, 4, 4}));
}

TEST(LazyStackTest, CloneCopiesMembers) {
  auto tds = overview_members(2);
  auto stacked = stack(tds, 0);
  auto copy = stacked.clone();
  ASSERT_TRUE(copy.is_lazy_stack());
  copy.fill_("a", -5);
  EXPECT_TRUE((tds[0].get("a") >= 0).all().item<bool>());
  EXPECT_TRUE((copy.get("a") == -5).all().item<bool>());
}

}  // namespace
}  // namespace tensordict
