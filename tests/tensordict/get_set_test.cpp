// Reading and writing single entries: get/find/get_or, aliasing, set, set_, set_at_, del_, pop,
// rename_key_, and the tutorial's dict features (get with default, set, update, del).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/tensordict.h>

#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;

// ---- get / find / get_or ---------------------------------------------------------------------

TEST(TensorDictGetTest, GetReturnsTheStoredTensorItself) {
  // Tutorial: tensordict["a"] is tensordict.get("a") is a.
  auto a = torch::zeros({3, 4, 5});
  TensorDict td({{"a", a}, {"b", torch::zeros({3, 4})}}, {3, 4});
  EXPECT_TRUE(td.get("a").is_same(a));
  EXPECT_EQ(td.get("a").sizes(), (std::vector<int64_t>{3, 4, 5}));
}

TEST(TensorDictGetTest, WritesThroughTheReturnedTensorShowInTheTensorDict) {
  TensorDict td = tutorial_zeros_td();
  td.get("a").fill_(7);
  EXPECT_TRUE(td.get("a").eq(7).all().item<bool>());
}

TEST(TensorDictGetTest, GetReadsNestedKeys) {
  // Overview: tensordict["inputs", "image"] and get(("outputs", "logits")).
  torch::manual_seed(0);
  auto logits = torch::randn({100, 10});
  TensorDict td(
      {{"inputs", {{"image", torch::rand({100, 28, 28})}}}, {"outputs", {{"logits", logits}}}},
      {100});
  EXPECT_EQ(td.get({"inputs", "image"}).sizes(), (std::vector<int64_t>{100, 28, 28}));
  EXPECT_TRUE(td.get({"outputs", "logits"}).is_same(logits));
}

TEST(TensorDictGetTest, GetOrReturnsDefaultForMissingKey) {
  // Tutorial: tensordict.get("foo", torch.ones(3)) -> tensor([1., 1., 1.]).
  TensorDict td = tutorial_zeros_td();
  auto out = td.get_or("foo", torch::ones({3}));
  EXPECT_TRUE(torch::equal(out, torch::ones({3})));
  EXPECT_FALSE(td.contains("foo"));
}

TEST(TensorDictGetTest, GetOrReturnsStoredTensorWhenPresent) {
  TensorDict td = tutorial_zeros_td();
  EXPECT_TRUE(td.get_or("a", torch::ones({3})).is_same(td.get("a")));
}

TEST(TensorDictGetTest, GetOrReturnsDefaultForMissingNestedKey) {
  TensorDict td = tutorial_zeros_td();
  auto out = td.get_or({"next", "reward"}, torch::full({1}, 2.0));
  EXPECT_EQ(out.item<float>(), 2.0f);
}

TEST(TensorDictGetTest, FindReturnsNothingForMissingKey) {
  TensorDict td = tutorial_zeros_td();
  EXPECT_FALSE(td.find("missing").has_value());
  EXPECT_FALSE(td.find({"x", "y"}).has_value());
}

TEST(TensorDictGetTest, FindReturnsTheStoredTensor) {
  TensorDict td = tutorial_zeros_td();
  auto found = td.find("b");
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->is_same(td.get("b")));
}

TEST(TensorDictGetTest, FindOnNonTensorEntryThrowsTypeError) {
  TensorDict td({{"s", "text"}, {"n", {{"x", torch::zeros({})}}}});
  EXPECT_THROW(td.find("s"), TypeError);
  EXPECT_THROW(td.find("n"), TypeError);
}

TEST(TensorDictGetTest, GetTensorDictReturnsAnAliasOfTheNestedEntry) {
  TensorDict td({{"next", {{"obs", torch::zeros({2, 3})}}}}, {2});
  TensorDict next = td.get_tensordict("next");
  next.set("reward", torch::ones({2, 1}));
  EXPECT_TRUE(td.contains({"next", "reward"}));
  EXPECT_TRUE(next.is_same(td.get_tensordict("next")));
}

TEST(TensorDictGetTest, GetNonTensorReturnsTheStoredValue) {
  TensorDict td({{"s", "a string!"}}, {});
  NonTensorData nt = td.get_non_tensor("s");
  EXPECT_TRUE(nt.is_uniform());
  EXPECT_EQ(nt.value<std::string>(), "a string!");
  EXPECT_EQ(td.get_non_tensor<std::string>("s"), "a string!");
}

TEST(TensorDictGetTest, GetValueReturnsWhicheverKindIsStored) {
  TensorDict td({{"t", torch::zeros({2})}, {"n", {{"x", torch::zeros({2})}}}, {"s", "x"}}, {2});
  EXPECT_TRUE(std::holds_alternative<torch::Tensor>(td.get_value("t")));
  EXPECT_TRUE(std::holds_alternative<TensorDict>(td.get_value("n")));
  EXPECT_TRUE(std::holds_alternative<NonTensorData>(td.get_value("s")));
  EXPECT_TRUE(std::holds_alternative<torch::Tensor>(td.get_value({"n", "x"})));
}

TEST(TensorDictGetTest, FindValueReturnsNothingForMissingKey) {
  TensorDict td = tutorial_zeros_td();
  EXPECT_FALSE(td.find_value("c").has_value());
  EXPECT_TRUE(td.find_value("a").has_value());
}

// ---- handles and aliasing ---------------------------------------------------------------------

TEST(TensorDictHandleTest, CopiedHandleAliasesTheSameEntries) {
  TensorDict td = tutorial_zeros_td();
  TensorDict alias = td;
  alias.set("c", torch::ones({3, 4}));
  EXPECT_TRUE(td.contains("c"));
  EXPECT_TRUE(alias.is_same(td));
}

TEST(TensorDictHandleTest, AssignmentRebindsTheHandleOnly) {
  TensorDict td = tutorial_zeros_td();
  TensorDict other = td;
  other = TensorDict();
  EXPECT_FALSE(other.is_same(td));
  EXPECT_THAT(td.keys(), ElementsAre(NestedKey("a"), NestedKey("b")));
}

TEST(TensorDictHandleTest, CloneCopiesTensors) {
  // Tutorial: redefining a tensor in the clone does not impact the original.
  TensorDict td = tutorial_zeros_td();
  TensorDict copy = td.clone();
  copy.set("a", torch::ones({3, 4, 5}));
  EXPECT_FALSE(td.get("a").eq(copy.get("a")).all().item<bool>());
  EXPECT_TRUE(td.get("a").eq(0).all().item<bool>());
}

TEST(TensorDictHandleTest, CloneDoesNotShareStorage) {
  TensorDict td = tutorial_zeros_td();
  TensorDict copy = td.clone();
  copy.get("b").fill_(5);
  EXPECT_TRUE(td.get("b").eq(0).all().item<bool>());
  EXPECT_FALSE(copy.is_same(td));
}

// ---- set --------------------------------------------------------------------------------------

TEST(TensorDictSetTest, SetStoresTheTensorItself) {
  // Tutorial: td.set("c", c); c is td["c"].
  TensorDict td = tutorial_zeros_td();
  auto c = torch::zeros({3, 4, 2, 2});
  td.set("c", c);
  EXPECT_TRUE(td.get("c").is_same(c));
}

TEST(TensorDictSetTest, SetReplacesAnExistingEntry) {
  TensorDict td = tutorial_zeros_td();
  auto replacement = torch::ones({3, 4, 7});
  td.set("a", replacement);
  EXPECT_TRUE(td.get("a").is_same(replacement));
  EXPECT_EQ(td.keys().size(), 2u);
}

TEST(TensorDictSetTest, SetReturnsTheSameTensorDictForChaining) {
  TensorDict td = tutorial_zeros_td();
  const TensorDict& back = td.set("c", torch::zeros({3, 4})).set("d", torch::zeros({3, 4}));
  EXPECT_TRUE(back.is_same(td));
  EXPECT_TRUE(td.contains("c"));
  EXPECT_TRUE(td.contains("d"));
}

TEST(TensorDictSetTest, SetNestedKeyCreatesIntermediatesWithTheParentBatchSize) {
  // README: data["nested", "key"] = torch.zeros(3, 4).
  TensorDict td({{"key 1", torch::ones({3, 4, 5})}}, {3, 4});
  td.set({"nested", "key"}, torch::zeros({3, 4}));
  EXPECT_EQ(td.get_tensordict("nested").batch_size(), (BatchSize{3, 4}));
  EXPECT_TRUE(td.get({"nested", "key"}).eq(0).all().item<bool>());
}

TEST(TensorDictSetTest, SetUnravelsNestedTupleKeys) {
  // README: data["nested", ("supernested", ("key",))] = zeros(3, 4); then read back flat.
  TensorDict td({{"key 1", torch::ones({3, 4, 5})}}, {3, 4});
  td.set({"nested", {"supernested", {"key"}}}, torch::zeros({3, 4}));
  EXPECT_TRUE(td.get({"nested", "supernested", "key"}).eq(0).all().item<bool>());
  EXPECT_EQ(td.get_tensordict({"nested", "supernested"}).batch_size(), (BatchSize{3, 4}));
}

TEST(TensorDictSetTest, SetNestedKeyUsesTheDeepestExistingTensorDictsBatchSize) {
  TensorDict td({{"n", TensorDict({{"x", torch::zeros({3, 4})}}, {3, 4})}}, {3});
  td.set({"n", "m", "y"}, torch::zeros({3, 4, 2}));
  EXPECT_EQ(td.get_tensordict({"n", "m"}).batch_size(), (BatchSize{3, 4}));
}

TEST(TensorDictSetTest, SetIntoExistingNestedTensorDictKeepsItsOtherEntries) {
  // Overview: tensordict["outputs", "probabilities"] = torch.sigmoid(logits).
  torch::manual_seed(0);
  TensorDict td({{"outputs", {{"logits", torch::randn({100, 10})}}}}, {100});
  auto logits = td.get({"outputs", "logits"});
  td.set({"outputs", "probabilities"}, torch::sigmoid(logits));
  EXPECT_THAT(td.get_tensordict("outputs").keys(),
              ElementsAre(NestedKey("logits"), NestedKey("probabilities")));
  EXPECT_TRUE(torch::allclose(td.get({"outputs", "probabilities"}), torch::sigmoid(logits)));
}

TEST(TensorDictSetTest, SetChecksNestedLeavesAgainstTheirOwnTensorDictsBatchSize) {
  TensorDict td({{"n", TensorDict({{"x", torch::zeros({3, 4})}}, {3, 4})}}, {3});
  EXPECT_THROW(td.set({"n", "y"}, torch::zeros({3, 5})), ShapeError);
  td.set({"n", "y"}, torch::zeros({3, 4, 5}));
  EXPECT_TRUE(td.contains({"n", "y"}));
}

TEST(TensorDictSetTest, SetAcceptsANestedTensorDict) {
  TensorDict td = tutorial_zeros_td();
  TensorDict inner({{"x", torch::zeros({3, 4, 2})}}, {3, 4});
  td.set("inner", inner);
  EXPECT_TRUE(td.get_tensordict("inner").is_same(inner));
}

TEST(TensorDictSetTest, SetStringStoresNonTensorData) {
  // README: data["non-tensor"] = "a string!".
  TensorDict td({{"a-tensor", torch::randn({1, 2})}}, {1, 2});
  td.set("non-tensor", "a string!");
  EXPECT_EQ(td.get_non_tensor<std::string>("non-tensor"), "a string!");
  td.set("other", std::string("std string"));
  EXPECT_EQ(td.get_non_tensor<std::string>("other"), "std string");
}

TEST(TensorDictSetTest, SetValueVariantStoresItsAlternative) {
  TensorDict td = tutorial_zeros_td();
  td.set("v", Value(torch::ones({3, 4})));
  EXPECT_TRUE(td.get("v").eq(1).all().item<bool>());
}

TEST(TensorDictSetTest, SetReplacesATensorWithANestedTensorDict) {
  TensorDict td = tutorial_zeros_td();
  td.set("a", TensorDict({{"x", torch::zeros({3, 4})}}, {3, 4}));
  EXPECT_TRUE(std::holds_alternative<TensorDict>(td.get_value("a")));
}

// ---- set_ -------------------------------------------------------------------------------------

TEST(TensorDictSetInplaceTest, SetInplaceWritesIntoTheExistingStorage) {
  TensorDict td = tutorial_zeros_td();
  auto before = td.get("a");
  td.set_("a", torch::ones({3, 4, 5}));
  EXPECT_TRUE(td.get("a").is_same(before));
  EXPECT_TRUE(before.eq(1).all().item<bool>());
}

TEST(TensorDictSetInplaceTest, SetInplaceIsSeenByEveryAlias) {
  TensorDict td = tutorial_zeros_td();
  TensorDict view = td.index({0});
  td.set_("a", torch::full({3, 4, 5}, 2.0));
  EXPECT_TRUE(view.get("a").eq(2).all().item<bool>());
}

TEST(TensorDictSetInplaceTest, SetInplaceBroadcastsTheValue) {
  TensorDict td = tutorial_zeros_td();
  td.set_("a", torch::arange(5, torch::kFloat));
  EXPECT_TRUE(torch::equal(td.get("a")[2][3], torch::arange(5, torch::kFloat)));
  EXPECT_TRUE(torch::equal(td.get("a")[0][0], torch::arange(5, torch::kFloat)));
}

TEST(TensorDictSetInplaceTest, SetInplaceWritesNestedKeys) {
  TensorDict td({{"next", {{"reward", torch::zeros({4, 1})}}}}, {4});
  auto before = td.get({"next", "reward"});
  td.set_({"next", "reward"}, torch::ones({4, 1}));
  EXPECT_TRUE(before.eq(1).all().item<bool>());
}

TEST(TensorDictSetInplaceTest, SetInplaceRejectsAnotherDtype) {
  TensorDict td = tutorial_zeros_td();
  EXPECT_THROW(td.set_("a", torch::ones({3, 4, 5}, torch::kDouble)), TypeError);
  EXPECT_TRUE(td.get("a").eq(0).all().item<bool>());
}

TEST(TensorDictSetInplaceTest, SetInplaceRejectsAShapeThatDoesNotBroadcast) {
  TensorDict td = tutorial_zeros_td();
  EXPECT_THROW(td.set_("a", torch::ones({3, 4, 6})), ShapeError);
}

TEST(TensorDictSetInplaceTest, SetInplaceRejectsMissingKey) {
  TensorDict td = tutorial_zeros_td();
  EXPECT_THROW(td.set_("missing", torch::ones({3, 4})), KeyError);
  EXPECT_FALSE(td.contains("missing"));
}

// ---- set_at_ ----------------------------------------------------------------------------------

TEST(TensorDictSetAtTest, SetAtWritesOnlyTheIndexedRegion) {
  TensorDict td = tutorial_zeros_td();
  td.set_at_("a", torch::ones({4, 5}), {1});
  EXPECT_TRUE(td.get("a")[1].eq(1).all().item<bool>());
  EXPECT_TRUE(td.get("a")[0].eq(0).all().item<bool>());
  EXPECT_TRUE(td.get("a")[2].eq(0).all().item<bool>());
}

TEST(TensorDictSetAtTest, SetAtTakesSlicesAndBroadcasts) {
  TensorDict td = tutorial_zeros_td();
  td.set_at_("b", torch::full({}, 3.0), {Slice(), Slice(2, None)});
  auto expected = torch::zeros({3, 4});
  expected.index_put_({Slice(), Slice(2, None)}, 3.0);
  EXPECT_TRUE(torch::equal(td.get("b"), expected));
}

TEST(TensorDictSetAtTest, SetAtWritesNestedKeys) {
  TensorDict td({{"next", {{"reward", torch::zeros({4, 1})}}}}, {4});
  td.set_at_({"next", "reward"}, torch::ones({1}), {Slice(1, 3)});
  EXPECT_TRUE(
      torch::equal(td.get({"next", "reward"}).flatten(), torch::tensor({0.0f, 1.0f, 1.0f, 0.0f})));
}

TEST(TensorDictSetAtTest, SetAtWithIndexTensorWritesTheListedRows) {
  TensorDict td({{"x", torch::zeros({5})}}, {5});
  td.set_at_("x", torch::tensor({1.0f, 2.0f}), {torch::tensor({0, 4})});
  EXPECT_TRUE(torch::equal(td.get("x"), torch::tensor({1.0f, 0.0f, 0.0f, 0.0f, 2.0f})));
}

// ---- del_ / pop -------------------------------------------------------------------------------

TEST(TensorDictDeleteTest, DelRemovesTheKey) {
  // Tutorial: del tensordict["c"] -> keys a, b, d.
  TensorDict td = tutorial_zeros_td();
  td.set("c", torch::zeros({3, 4, 2, 2}));
  td.set("d", torch::zeros({3, 4, 2, 2}));
  td.del_("c");
  EXPECT_THAT(td.keys(), ElementsAre(NestedKey("a"), NestedKey("b"), NestedKey("d")));
}

TEST(TensorDictDeleteTest, DelOfNestedKeyKeepsTheParentAndSiblings) {
  TensorDict td({{"next", {{"obs", torch::zeros({2})}, {"reward", torch::zeros({2})}}}}, {2});
  td.del_({"next", "obs"});
  EXPECT_TRUE(td.contains("next"));
  EXPECT_FALSE(td.contains({"next", "obs"}));
  EXPECT_TRUE(td.contains({"next", "reward"}));
}

TEST(TensorDictDeleteTest, DelOfMissingKeyThrowsKeyError) {
  TensorDict td = tutorial_zeros_td();
  EXPECT_THROW(td.del_("c"), KeyError);
  EXPECT_THROW(td.del_({"x", "y"}), KeyError);
}

TEST(TensorDictDeleteTest, PopReturnsTheValueAndRemovesIt) {
  TensorDict td = tutorial_zeros_td();
  auto a = td.get("a");
  Value popped = td.pop("a");
  EXPECT_TRUE(std::get<torch::Tensor>(popped).is_same(a));
  EXPECT_FALSE(td.contains("a"));
}

TEST(TensorDictDeleteTest, PopOfNestedTensorDictReturnsIt) {
  TensorDict td({{"next", {{"obs", torch::zeros({2})}}}}, {2});
  TensorDict next = td.get_tensordict("next");
  Value popped = td.pop("next");
  EXPECT_TRUE(std::get<TensorDict>(popped).is_same(next));
  EXPECT_TRUE(td.keys().empty());
}

TEST(TensorDictDeleteTest, PopOfMissingKeyThrowsKeyError) {
  TensorDict td = tutorial_zeros_td();
  EXPECT_THROW(td.pop("z"), KeyError);
}

// ---- rename_key_ ------------------------------------------------------------------------------

TEST(TensorDictRenameTest, RenameMovesTheValueToTheNewKey) {
  TensorDict td = tutorial_zeros_td();
  auto a = td.get("a");
  td.rename_key_("a", "alpha");
  EXPECT_FALSE(td.contains("a"));
  EXPECT_TRUE(td.get("alpha").is_same(a));
  EXPECT_EQ(td.keys().size(), 2u);
}

TEST(TensorDictRenameTest, RenameToTheSameKeyIsANoOp) {
  TensorDict td = tutorial_zeros_td();
  auto a = td.get("a");
  td.rename_key_("a", "a");
  EXPECT_TRUE(td.get("a").is_same(a));
  EXPECT_THAT(td.keys(), ElementsAre(NestedKey("a"), NestedKey("b")));
}

TEST(TensorDictRenameTest, RenameNestedKeyToAnotherNestedKey) {
  TensorDict td({{"next", {{"obs", torch::zeros({2, 3})}}}}, {2});
  auto obs = td.get({"next", "obs"});
  td.rename_key_({"next", "obs"}, {"prev", "observation"});
  EXPECT_FALSE(td.contains({"next", "obs"}));
  EXPECT_TRUE(td.contains("next"));
  EXPECT_TRUE(td.get({"prev", "observation"}).is_same(obs));
  EXPECT_EQ(td.get_tensordict("prev").batch_size(), BatchSize{2});
}

TEST(TensorDictRenameTest, RenameNestedKeyToTopLevel) {
  TensorDict td({{"next", {{"reward", torch::ones({2, 1})}}}}, {2});
  td.rename_key_({"next", "reward"}, "reward");
  EXPECT_TRUE(td.get("reward").eq(1).all().item<bool>());
  EXPECT_FALSE(td.contains({"next", "reward"}));
}

TEST(TensorDictRenameTest, RenameMovesNonTensorEntries) {
  TensorDict td({{"s", "text"}}, {});
  td.rename_key_("s", "label");
  EXPECT_EQ(td.get_non_tensor<std::string>("label"), "text");
  EXPECT_FALSE(td.contains("s"));
}

TEST(TensorDictRenameTest, RenameOfMissingKeyThrowsKeyError) {
  TensorDict td = tutorial_zeros_td();
  EXPECT_THROW(td.rename_key_("z", "y"), KeyError);
}

// ---- Tutorial's update with a dict ------------------------------------------------------------

TEST(TensorDictUpdateDictTest, UpdateWithDictReplacesAndAddsEntries) {
  // Tutorial: update({"a": ones(3, 4, 5), "d": 2 * ones(3, 4, 2)}).
  TensorDict td = tutorial_zeros_td();
  td.set("d", torch::zeros({3, 4, 2, 2}));
  td.update(Entries{{"a", torch::ones({3, 4, 5})}, {"d", 2 * torch::ones({3, 4, 2})}});
  EXPECT_TRUE(td.get("a").eq(1).all().item<bool>());
  EXPECT_TRUE(td.get("d").eq(2).all().item<bool>());
  EXPECT_EQ(td.get("d").sizes(), (std::vector<int64_t>{3, 4, 2}));
}

TEST(TensorDictUpdateDictTest, UpdateWithTensorDictWorksLikeWithDict) {
  // Tutorial: tensordict.update(TensorDict({"a": ones(3, 4, 5), "c": ones(3, 4, 2)}, [3, 4])).
  TensorDict td = tutorial_zeros_td();
  td.update(TensorDict({{"a", torch::ones({3, 4, 5})}, {"c", torch::ones({3, 4, 2})}}, {3, 4}));
  EXPECT_TRUE(td.get("a").eq(1).all().item<bool>());
  EXPECT_TRUE(td.get("c").eq(1).all().item<bool>());
  EXPECT_THAT(td.keys(), ElementsAre(NestedKey("a"), NestedKey("b"), NestedKey("c")));
}

TEST(TensorDictUpdateDictTest, UpdateRejectsEntryThatViolatesTheBatchSize) {
  // Tutorial: update({"c": zeros(4, 3, 1)}) on a [3, 4] TensorDict fails.
  TensorDict td = tutorial_zeros_td();
  EXPECT_THROW(td.update(Entries{{"c", torch::zeros({4, 3, 1})}}), ShapeError);
  EXPECT_FALSE(td.contains("c"));
}

TEST(TensorDictUpdateDictTest, UpdateWithDictAcceptsNestedKeys) {
  TensorDict td = tutorial_zeros_td();
  td.update(Entries{{{"next", "reward"}, torch::ones({3, 4, 1})}});
  EXPECT_EQ(td.get_tensordict("next").batch_size(), (BatchSize{3, 4}));
  EXPECT_TRUE(td.get({"next", "reward"}).eq(1).all().item<bool>());
}

}  // namespace
