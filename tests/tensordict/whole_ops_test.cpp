// Operations over every entry: clone, detach, to, apply, select/exclude, update, fill, masks,
// key flattening, comparison, arithmetic and reductions.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <tensordict/tensordict.h>

#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;
using ::testing::UnorderedElementsAre;

// batch [2, 3]: a = arange(12) as [2, 3, 2]; next.r = arange(6) as [2, 3]; s = "text".
TensorDict sample() {
  return TensorDict({{"a", torch::arange(12, torch::kFloat).reshape({2, 3, 2})},
                     {"next", {{"r", torch::arange(6, torch::kFloat).reshape({2, 3})}}},
                     {"s", "text"}},
                    {2, 3});
}

bool same_values(const torch::Tensor& a, const torch::Tensor& b) { return torch::equal(a, b); }

// ---- clone / detach / to ----------------------------------------------------------------------

TEST(TensorDictCloneTest, CloneCopiesEveryTensorAndKeepsTheStructure) {
  TensorDict td = sample();
  TensorDict copy = td.clone();
  EXPECT_EQ(copy.keys(true), td.keys(true));
  EXPECT_EQ(copy.batch_size(), td.batch_size());
  EXPECT_EQ(copy.get_tensordict("next").batch_size(), (BatchSize{2, 3}));
  EXPECT_TRUE(same_values(copy.get("a"), td.get("a")));
  EXPECT_NE(copy.get("a").data_ptr(), td.get("a").data_ptr());
  EXPECT_NE(copy.get({"next", "r"}).data_ptr(), td.get({"next", "r"}).data_ptr());
  EXPECT_FALSE(copy.get_tensordict("next").is_same(td.get_tensordict("next")));
  EXPECT_EQ(copy.get_non_tensor<std::string>("s"), "text");
}

TEST(TensorDictCloneTest, ShallowCloneAliasesTensorsButNotTheStructure) {
  TensorDict td = sample();
  TensorDict copy = td.clone(/*recurse=*/false);
  EXPECT_TRUE(copy.get("a").is_same(td.get("a")));
  EXPECT_TRUE(copy.get({"next", "r"}).is_same(td.get({"next", "r"})));
  copy.set("b", torch::zeros({2, 3}));
  copy.set({"next", "extra"}, torch::zeros({2, 3}));
  EXPECT_FALSE(td.contains("b"));
  EXPECT_FALSE(td.contains({"next", "extra"}));
}

TEST(TensorDictCloneTest, CloneKeepsTheDevice) {
  TensorDict td({{"a", torch::zeros({2})}}, {2}, torch::Device(torch::kCPU));
  EXPECT_EQ(td.clone().device(), td.device());
}

TEST(TensorDictCloneTest, DetachDropsTheGraphAndSharesStorage) {
  auto w = torch::ones({2, 3}, torch::requires_grad());
  TensorDict td({{"w", w * 2}}, {2});
  ASSERT_TRUE(td.get("w").requires_grad());
  TensorDict detached = td.detach();
  EXPECT_FALSE(detached.get("w").requires_grad());
  EXPECT_EQ(detached.get("w").data_ptr(), td.get("w").data_ptr());
}

TEST(TensorDictCloneTest, ToDtypeCastsEveryTensorIncludingNested) {
  TensorDict td = sample();
  td.set("i", torch::ones({2, 3}, torch::kLong));
  TensorDict cast = td.to(torch::kDouble);
  EXPECT_EQ(cast.get("a").scalar_type(), torch::kDouble);
  EXPECT_EQ(cast.get({"next", "r"}).scalar_type(), torch::kDouble);
  EXPECT_EQ(cast.get("i").scalar_type(), torch::kDouble);
  EXPECT_TRUE(same_values(cast.get("a"), td.get("a").to(torch::kDouble)));
  EXPECT_EQ(td.get("a").scalar_type(), torch::kFloat);
}

TEST(TensorDictCloneTest, ToDeviceSetsTheDeviceOnEveryLevel) {
  TensorDict moved = sample().to(torch::Device(torch::kCPU));
  ASSERT_TRUE(moved.device().has_value());
  EXPECT_EQ(*moved.device(), torch::Device(torch::kCPU));
  EXPECT_EQ(moved.get_tensordict("next").device(), moved.device());
}

// ---- apply / apply_ / named_apply -------------------------------------------------------------

TEST(TensorDictApplyTest, ApplyMapsEveryLeafIntoANewTensorDict) {
  TensorDict td = sample();
  TensorDict doubled = td.apply([](const torch::Tensor& t) { return t * 2; });
  EXPECT_TRUE(same_values(doubled.get("a"), td.get("a") * 2));
  EXPECT_TRUE(same_values(doubled.get({"next", "r"}), td.get({"next", "r"}) * 2));
  EXPECT_EQ(doubled.batch_size(), td.batch_size());
  EXPECT_EQ(td.get("a")[0][0][1].item<float>(), 1.0f);
}

TEST(TensorDictApplyTest, ApplyDropsKeysWhereTheFunctionReturnsNoTensor) {
  // README: data.apply(lambda x: x if x.dtype == torch.float else None) keeps only "a".
  TensorDict data({{"a", torch::tensor(1.0f)}, {"b", torch::tensor(int64_t{1})}});
  TensorDict data_float = data.apply([](const torch::Tensor& x) {
    return x.scalar_type() == torch::kFloat ? x : torch::Tensor();
  });
  EXPECT_TRUE(data_float.contains("a"));
  EXPECT_FALSE(data_float.contains("b"));
  EXPECT_TRUE(data.contains("b"));
}

TEST(TensorDictApplyTest, ApplyCanReturnTheSameTensorsUpdatedInPlace) {
  // README: data.apply(lambda tensor: tensor.uniform_()).
  torch::manual_seed(0);
  TensorDict data({{"key 1", torch::ones({3, 4, 5})}, {"key 3", torch::zeros({3, 4})}}, {3, 4});
  auto key1 = data.get("key 1");
  TensorDict uniform = data.apply([](const torch::Tensor& t) { return t.uniform_(); });
  EXPECT_TRUE(uniform.get("key 1").is_same(key1));
  EXPECT_TRUE(key1.ge(0).all().item<bool>());
  EXPECT_TRUE(key1.lt(1).all().item<bool>());
  EXPECT_GT(key1.std().item<float>(), 0.0f);
}

TEST(TensorDictApplyTest, ApplyMayChangeFeatureDims) {
  TensorDict summed = sample().apply([](const torch::Tensor& t) {
    return t.reshape({2, 3, -1}).sum(-1);
  });
  EXPECT_EQ(summed.get("a").sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(summed.get("a")[1][2].item<float>(), 10.0f + 11.0f);
}

TEST(TensorDictApplyTest, ApplyOverTwoTensorDictsPairsLeavesByKey) {
  TensorDict x = sample();
  TensorDict y = sample().apply([](const torch::Tensor& t) { return t * 10; });
  TensorDict z = x.apply(y, [](const torch::Tensor& a, const torch::Tensor& b) { return a + b; });
  EXPECT_TRUE(same_values(z.get("a"), x.get("a") * 11));
  EXPECT_TRUE(same_values(z.get({"next", "r"}), x.get({"next", "r"}) * 11));
}

TEST(TensorDictApplyTest, ApplyOverTwoTensorDictsIgnoresKeysOnlyTheOtherHas) {
  TensorDict x({{"a", torch::ones({2})}}, {2});
  TensorDict y({{"a", torch::ones({2})}, {"b", torch::ones({2})}}, {2});
  TensorDict z = x.apply(y, [](const torch::Tensor& a, const torch::Tensor& b) { return a - b; });
  EXPECT_THAT(z.keys(), ElementsAre(NestedKey("a")));
  EXPECT_TRUE(z.get("a").eq(0).all().item<bool>());
}

TEST(TensorDictApplyTest, ApplyInplaceWritesIntoTheExistingTensors) {
  TensorDict td = sample();
  auto a = td.get("a");
  TensorDict row = td.index({0});
  td.apply_([](const torch::Tensor& t) { return t + 1; });
  EXPECT_TRUE(td.get("a").is_same(a));
  EXPECT_EQ(a[0][0][0].item<float>(), 1.0f);
  EXPECT_EQ(td.get({"next", "r"})[1][2].item<float>(), 6.0f);
  EXPECT_EQ(row.get("a")[0][0].item<float>(), 1.0f);
}

TEST(TensorDictApplyTest, NamedApplyPassesEachLeafsFullKey) {
  TensorDict td = sample();
  std::vector<NestedKey> seen;
  TensorDict out = td.named_apply([&](const NestedKey& key, const torch::Tensor& t) {
    seen.push_back(key);
    return key.is_nested() ? t : torch::Tensor();
  });
  EXPECT_THAT(seen, ElementsAre(NestedKey("a"), (NestedKey{"next", "r"})));
  EXPECT_FALSE(out.contains("a"));
  EXPECT_TRUE(out.contains({"next", "r"}));
}

// ---- select / exclude -------------------------------------------------------------------------

TEST(TensorDictSelectTest, SelectKeepsOnlyTheListedKeysAliased) {
  TensorDict td = sample();
  TensorDict picked = td.select({"a", "s"});
  EXPECT_THAT(picked.keys(), UnorderedElementsAre(NestedKey("a"), NestedKey("s")));
  EXPECT_TRUE(picked.get("a").is_same(td.get("a")));
  EXPECT_EQ(picked.batch_size(), td.batch_size());
}

TEST(TensorDictSelectTest, SelectOfNestedKeyKeepsItsParentWithOnlyThatChild) {
  TensorDict td = sample();
  td.set({"next", "done"}, torch::zeros({2, 3}, torch::kBool));
  TensorDict picked = td.select({{"next", "r"}});
  EXPECT_THAT(picked.keys(true), ElementsAre(NestedKey("next"), (NestedKey{"next", "r"})));
  EXPECT_EQ(picked.get_tensordict("next").batch_size(), (BatchSize{2, 3}));
  EXPECT_TRUE(td.contains({"next", "done"}));
}

TEST(TensorDictSelectTest, StrictSelectOfMissingKeyThrowsKeyError) {
  EXPECT_THROW(sample().select({"a", "missing"}), KeyError);
}

TEST(TensorDictSelectTest, NonStrictSelectSkipsMissingKeys) {
  TensorDict picked = sample().select({"a", "missing", {"next", "nope"}}, /*strict=*/false);
  EXPECT_THAT(picked.keys(true), ElementsAre(NestedKey("a")));
}

TEST(TensorDictSelectTest, ExcludeDropsKeysAndIgnoresMissingOnes) {
  TensorDict td = sample();
  TensorDict rest = td.exclude({"a", "missing"});
  EXPECT_THAT(rest.keys(), ElementsAre(NestedKey("next"), NestedKey("s")));
  EXPECT_TRUE(td.contains("a"));
  EXPECT_TRUE(rest.get({"next", "r"}).is_same(td.get({"next", "r"})));
}

TEST(TensorDictSelectTest, ExcludeOfNestedKeyLeavesTheOriginalNestedTensorDictIntact) {
  TensorDict td = sample();
  TensorDict rest = td.exclude({{"next", "r"}});
  EXPECT_TRUE(rest.contains("next"));
  EXPECT_FALSE(rest.contains({"next", "r"}));
  EXPECT_TRUE(td.contains({"next", "r"}));
}

// ---- update / update_ -------------------------------------------------------------------------

TEST(TensorDictUpdateTest, UpdateReplacesTensorsByDefault) {
  TensorDict td = sample();
  auto old = td.get("a");
  auto fresh = torch::ones({2, 3, 2});
  td.update(TensorDict({{"a", fresh}}, {2, 3}));
  EXPECT_TRUE(td.get("a").is_same(fresh));
  EXPECT_EQ(old[0][0][1].item<float>(), 1.0f);  // the old tensor is untouched
}

TEST(TensorDictUpdateTest, InplaceUpdateCopiesIntoExistingTensorsAndAddsNewKeys) {
  TensorDict td = sample();
  auto old = td.get("a");
  UpdateOptions options;
  options.inplace = true;
  td.update(TensorDict({{"a", torch::ones({2, 3, 2})}, {"b", torch::ones({2, 3})}}, {2, 3}),
            options);
  EXPECT_TRUE(td.get("a").is_same(old));
  EXPECT_TRUE(old.eq(1).all().item<bool>());
  EXPECT_TRUE(td.get("b").eq(1).all().item<bool>());
}

TEST(TensorDictUpdateTest, KeysToUpdateLimitsWhatIsTaken) {
  TensorDict td = sample();
  UpdateOptions options;
  options.keys_to_update = {"b"};
  td.update(TensorDict({{"a", torch::ones({2, 3, 2})}, {"b", torch::ones({2, 3})}}, {2, 3}),
            options);
  EXPECT_TRUE(td.contains("b"));
  EXPECT_EQ(td.get("a")[0][0][1].item<float>(), 1.0f);
  EXPECT_EQ(td.get("a")[0][0][0].item<float>(), 0.0f);
}

TEST(TensorDictUpdateTest, KeysToUpdateTakesKeysNestedUnderAListedParent) {
  TensorDict td = sample();
  UpdateOptions options;
  options.keys_to_update = {"next"};
  td.update(TensorDict({{"a", torch::ones({2, 3, 2})},
                        {"next", {{"r", torch::ones({2, 3})}, {"done", torch::ones({2, 3})}}}},
                       {2, 3}),
            options);
  EXPECT_TRUE(td.get({"next", "r"}).eq(1).all().item<bool>());
  EXPECT_TRUE(td.contains({"next", "done"}));
  EXPECT_EQ(td.get("a")[0][0][0].item<float>(), 0.0f);
}

TEST(TensorDictUpdateTest, KeysToUpdateWithNestedPathTakesOnlyThatLeaf) {
  TensorDict td = sample();
  UpdateOptions options;
  options.keys_to_update = {{"next", "done"}};
  td.update(
      TensorDict({{"next", {{"r", torch::ones({2, 3})}, {"done", torch::ones({2, 3})}}}}, {2, 3}),
      options);
  EXPECT_TRUE(td.contains({"next", "done"}));
  EXPECT_EQ(td.get({"next", "r"})[0][0].item<float>(), 0.0f);
}

TEST(TensorDictUpdateTest, KeysToUpdateWithNestedPathSkipsSiblingsWhenDestinationLacksParent) {
  TensorDict td({{"a", torch::zeros({2})}}, {2});
  UpdateOptions options;
  options.keys_to_update = {{"next", "done"}};
  td.update(TensorDict({{"next", {{"r", torch::ones({2})}, {"done", torch::ones({2})}}}}, {2}),
            options);
  EXPECT_TRUE(td.contains({"next", "done"}));
  EXPECT_FALSE(td.contains({"next", "r"}));
}

TEST(TensorDictUpdateTest, UpdateMergesNestedTensorDictsKeyByKey) {
  TensorDict td = sample();
  auto r = td.get({"next", "r"});
  td.update(TensorDict({{"next", {{"done", torch::zeros({2, 3}, torch::kBool)}}}}, {2, 3}));
  EXPECT_TRUE(td.get({"next", "r"}).is_same(r));
  EXPECT_TRUE(td.contains({"next", "done"}));
}

TEST(TensorDictUpdateTest, UpdateWithItselfChangesNothing) {
  TensorDict td = sample();
  auto a = td.get("a");
  td.update(td);
  EXPECT_TRUE(td.get("a").is_same(a));
  EXPECT_EQ(td.keys(true).size(), 4u);
}

TEST(TensorDictUpdateTest, UpdateCarriesNonTensorEntries) {
  TensorDict td = sample();
  td.update(TensorDict({{"s", "other"}, {"t", "new"}}, {2, 3}));
  EXPECT_EQ(td.get_non_tensor<std::string>("s"), "other");
  EXPECT_EQ(td.get_non_tensor<std::string>("t"), "new");
}

TEST(TensorDictUpdateTest, UpdateFromEntriesHonoursInplace) {
  TensorDict td = sample();
  auto r = td.get({"next", "r"});
  UpdateOptions options;
  options.inplace = true;
  td.update(Entries{{{"next", "r"}, torch::full({2, 3}, 9.0)}}, options);
  EXPECT_TRUE(td.get({"next", "r"}).is_same(r));
  EXPECT_TRUE(r.eq(9).all().item<bool>());
}

TEST(TensorDictUpdateTest, UpdateInplaceMethodCopiesEveryLeafIntoExistingTensors) {
  TensorDict td = sample();
  auto a = td.get("a");
  auto r = td.get({"next", "r"});
  td.update_(TensorDict(
      {{"a", torch::full({2, 3, 2}, 4.0)}, {"next", {{"r", torch::full({2, 3}, 5.0)}}}}, {2, 3}));
  EXPECT_TRUE(td.get("a").is_same(a));
  EXPECT_TRUE(a.eq(4).all().item<bool>());
  EXPECT_TRUE(r.eq(5).all().item<bool>());
}

TEST(TensorDictUpdateTest, CopyInplaceCopiesValuesKeepingStorage) {
  TensorDict td = sample();
  TensorDict src = sample().apply([](const torch::Tensor& t) { return -t; });
  auto a = td.get("a");
  td.copy_(src);
  EXPECT_TRUE(td.get("a").is_same(a));
  EXPECT_TRUE(same_values(a, src.get("a")));
  EXPECT_TRUE(same_values(td.get({"next", "r"}), src.get({"next", "r"})));
}

// ---- fill_ / zero_ ----------------------------------------------------------------------------

TEST(TensorDictFillTest, FillKeyFillsOnlyThatTensor) {
  // Tutorial: tensordict.fill_("a", -1).
  TensorDict td = sample();
  td.fill_("a", -1);
  EXPECT_TRUE(td.get("a").eq(-1).all().item<bool>());
  EXPECT_EQ(td.get({"next", "r"})[1][2].item<float>(), 5.0f);
}

TEST(TensorDictFillTest, FillKeyWritesThroughSubTensorDictViews) {
  // Tutorial: subtd = tensordict[:, [1, 3]] keeps track of the original one.
  TensorDict td({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  TensorDict subtd = td.get_sub_tensordict({Slice(), torch::tensor({1, 3})});
  td.fill_("a", -1);
  EXPECT_TRUE(subtd.get("a").eq(-1).all().item<bool>());
}

TEST(TensorDictFillTest, FillNestedKey) {
  TensorDict td = sample();
  td.fill_({"next", "r"}, 3);
  EXPECT_TRUE(td.get({"next", "r"}).eq(3).all().item<bool>());
  EXPECT_EQ(td.get("a")[1][2][1].item<float>(), 11.0f);
}

TEST(TensorDictFillTest, FillAllFillsEveryTensorAndLeavesNonTensorEntries) {
  TensorDict td = sample();
  auto a = td.get("a");
  td.fill_(7);
  EXPECT_TRUE(a.eq(7).all().item<bool>());
  EXPECT_TRUE(td.get({"next", "r"}).eq(7).all().item<bool>());
  EXPECT_EQ(td.get_non_tensor<std::string>("s"), "text");
}

TEST(TensorDictFillTest, ZeroZeroesEveryTensor) {
  TensorDict td = sample();
  td.zero_();
  EXPECT_TRUE(td.get("a").eq(0).all().item<bool>());
  EXPECT_TRUE(td.get({"next", "r"}).eq(0).all().item<bool>());
}

// ---- masked_fill / where ----------------------------------------------------------------------

TEST(TensorDictMaskTest, MaskedFillFillsMaskedRowsOfACopy) {
  TensorDict td({{"a", torch::zeros({3, 2})}, {"b", torch::zeros({3})}}, {3});
  auto mask = torch::tensor({true, false, true});
  TensorDict filled = td.masked_fill(mask, -1);
  EXPECT_TRUE(
      same_values(filled.get("a"), torch::tensor({{-1.f, -1.f}, {0.f, 0.f}, {-1.f, -1.f}})));
  EXPECT_TRUE(same_values(filled.get("b"), torch::tensor({-1.f, 0.f, -1.f})));
  EXPECT_TRUE(td.get("a").eq(0).all().item<bool>());
}

TEST(TensorDictMaskTest, MaskedFillInplaceWritesTheTensorDict) {
  TensorDict td({{"a", torch::zeros({3, 2})}, {"n", {{"c", torch::zeros({3})}}}}, {3});
  auto a = td.get("a");
  td.masked_fill_(torch::tensor({false, true, false}), 5);
  EXPECT_TRUE(td.get("a").is_same(a));
  EXPECT_TRUE(same_values(a, torch::tensor({{0.f, 0.f}, {5.f, 5.f}, {0.f, 0.f}})));
  EXPECT_TRUE(same_values(td.get({"n", "c"}), torch::tensor({0.f, 5.f, 0.f})));
}

TEST(TensorDictMaskTest, MaskedFillAcceptsAMaskOverSeveralBatchDims) {
  TensorDict td({{"a", torch::zeros({2, 2, 3})}}, {2, 2});
  auto mask = torch::tensor({{true, false}, {false, true}});
  TensorDict filled = td.masked_fill(mask, 1);
  EXPECT_TRUE(filled.get("a")[0][0].eq(1).all().item<bool>());
  EXPECT_TRUE(filled.get("a")[0][1].eq(0).all().item<bool>());
  EXPECT_TRUE(filled.get("a")[1][1].eq(1).all().item<bool>());
}

TEST(TensorDictMaskTest, WhereTakesThisWhereTheConditionHoldsElseOther) {
  TensorDict x({{"a", torch::ones({3, 2})}}, {3});
  TensorDict y({{"a", torch::full({3, 2}, 9.0)}}, {3});
  TensorDict z = x.where(torch::tensor({true, false, true}), y);
  EXPECT_TRUE(same_values(z.get("a"), torch::tensor({{1.f, 1.f}, {9.f, 9.f}, {1.f, 1.f}})));
}

TEST(TensorDictMaskTest, WhereWithScalarFillsTheRest) {
  TensorDict x({{"a", torch::ones({3})}}, {3});
  TensorDict z = x.where(torch::tensor({false, true, false}), 0);
  EXPECT_TRUE(same_values(z.get("a"), torch::tensor({0.f, 1.f, 0.f})));
}

// ---- flatten_keys / unflatten_keys ------------------------------------------------------------

TEST(TensorDictFlattenKeysTest, FlattenKeysJoinsNestedPathsWithTheSeparator) {
  // README: keys "key 1" and "key 2.sub-key" after flatten_keys(separator=".").
  torch::manual_seed(0);
  TensorDict data({{"key 1", torch::ones({3, 4, 5})},
                   {"key 2", TensorDict({{"sub-key", torch::randn({3, 4, 5, 6})}}, {3, 4, 5})}},
                  {3, 4});
  TensorDict flat = data.flatten_keys(".");
  EXPECT_THAT(flat.keys(), ElementsAre(NestedKey("key 1"), NestedKey("key 2.sub-key")));
  EXPECT_EQ(flat.get("key 2.sub-key").sizes(), (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_TRUE(flat.get("key 2.sub-key").is_same(data.get({"key 2", "sub-key"})));
  EXPECT_EQ(flat.batch_size(), (BatchSize{3, 4}));
}

TEST(TensorDictFlattenKeysTest, FlattenKeysTakesAnySeparator) {
  TensorDict flat = sample().flatten_keys("__");
  EXPECT_THAT(flat.keys(), ElementsAre(NestedKey("a"), NestedKey("next__r"), NestedKey("s")));
}

TEST(TensorDictFlattenKeysTest, UnflattenKeysRebuildsNesting) {
  // Overview: TensorDict(layer.state_dict(), []).unflatten_keys(".").
  TensorDict state({{"0.weight", torch::ones({4, 3})},
                    {"0.bias", torch::zeros({4})},
                    {"1.weight", torch::ones({4, 4})}});
  TensorDict nested = state.unflatten_keys(".");
  EXPECT_THAT(nested.keys(true),
              ElementsAre(NestedKey("0"), (NestedKey{"0", "weight"}), (NestedKey{"0", "bias"}),
                          NestedKey("1"), (NestedKey{"1", "weight"})));
  EXPECT_TRUE(nested.get({"0", "weight"}).is_same(state.get("0.weight")));
}

TEST(TensorDictFlattenKeysTest, FlattenThenUnflattenRoundTrips) {
  TensorDict td = sample();
  td.set({"next", "deep", "x"}, torch::zeros({2, 3}));
  TensorDict back = td.flatten_keys(".").unflatten_keys(".");
  EXPECT_EQ(back.keys(true, true), td.keys(true, true));
  EXPECT_TRUE(back.get({"next", "deep", "x"}).is_same(td.get({"next", "deep", "x"})));
}

// ---- empty_like / is_empty / requires_grad_ ----------------------------------------------------

TEST(TensorDictStructureTest, EmptyLikeKeepsNestedStructureWithoutLeaves) {
  TensorDict td = sample();
  TensorDict skeleton = td.empty_like();
  EXPECT_THAT(skeleton.keys(true), ElementsAre(NestedKey("next")));
  EXPECT_EQ(skeleton.batch_size(), (BatchSize{2, 3}));
  EXPECT_EQ(skeleton.get_tensordict("next").batch_size(), (BatchSize{2, 3}));
  EXPECT_TRUE(skeleton.is_empty());
}

TEST(TensorDictStructureTest, IsEmptyCountsOnlyLeaves) {
  EXPECT_TRUE(TensorDict().is_empty());
  EXPECT_TRUE(TensorDict({{"n", {{"m", TensorDict::empty({2})}}}}, {2}).is_empty());
  EXPECT_FALSE(sample().is_empty());
  EXPECT_FALSE(TensorDict({{"s", "text"}}).is_empty());
}

TEST(TensorDictStructureTest, RequiresGradTogglesFloatingTensorsOnly) {
  TensorDict td = sample();
  td.set("i", torch::zeros({2, 3}, torch::kLong));
  td.requires_grad_();
  EXPECT_TRUE(td.get("a").requires_grad());
  EXPECT_TRUE(td.get({"next", "r"}).requires_grad());
  EXPECT_FALSE(td.get("i").requires_grad());
  td.requires_grad_(false);
  EXPECT_FALSE(td.get("a").requires_grad());
}

// ---- comparison -------------------------------------------------------------------------------

TEST(TensorDictCompareTest, EqualityGivesBoolTensorDictOfTheSameShape) {
  TensorDict td = sample();
  TensorDict eq = td == td.clone();
  EXPECT_EQ(eq.get("a").scalar_type(), torch::kBool);
  EXPECT_EQ(eq.get("a").sizes(), td.get("a").sizes());
  EXPECT_EQ(eq.get({"next", "r"}).scalar_type(), torch::kBool);
  EXPECT_TRUE(eq.all());
  EXPECT_TRUE(eq.any());
}

TEST(TensorDictCompareTest, OneDifferentElementMakesAllFalseButAnyTrue) {
  TensorDict td = sample();
  TensorDict other = td.clone();
  other.get({"next", "r"})[1][1] = 100;
  TensorDict eq = td == other;
  EXPECT_FALSE(eq.all());
  EXPECT_TRUE(eq.any());
  EXPECT_FALSE(eq.get({"next", "r"})[1][1].item<bool>());
  TensorDict ne = td != other;
  EXPECT_TRUE(ne.any());
  EXPECT_FALSE(ne.all());
  EXPECT_TRUE(ne.get({"next", "r"})[1][1].item<bool>());
}

TEST(TensorDictCompareTest, NestedParamsCompareEqualLeafByLeaf) {
  // README: assert (params == TensorDict({"0": weights1, "1": weights2}, [])).all().
  torch::manual_seed(0);
  TensorDict flat({{"0.weight", torch::randn({4, 3})},
                   {"0.bias", torch::randn({4})},
                   {"1.weight", torch::randn({4, 4})},
                   {"1.bias", torch::randn({4})}});
  TensorDict weights1({{"weight", flat.get("0.weight")}, {"bias", flat.get("0.bias")}});
  TensorDict weights2({{"weight", flat.get("1.weight")}, {"bias", flat.get("1.bias")}});
  TensorDict params = flat.unflatten_keys(".");
  EXPECT_TRUE((params == TensorDict({{"0", weights1}, {"1", weights2}})).all());
}

TEST(TensorDictCompareTest, ComparisonWithScalar) {
  TensorDict td({{"a", torch::tensor({0.f, 1.f, 0.f})}}, {3});
  EXPECT_TRUE(same_values((td == 0).get("a"), torch::tensor({true, false, true})));
  EXPECT_TRUE(same_values((td != 0).get("a"), torch::tensor({false, true, false})));
  EXPECT_FALSE((td == 0).all());
  EXPECT_TRUE((td == 0).any());
}

TEST(TensorDictCompareTest, AllIsTrueAndAnyFalseWithoutLeaves) {
  EXPECT_TRUE(TensorDict().all());
  EXPECT_FALSE(TensorDict().any());
}

TEST(TensorDictCompareTest, AllcloseToleratesSmallDifferences) {
  TensorDict td = sample();
  EXPECT_TRUE(td.allclose(td + 1e-9));
  EXPECT_FALSE(td.allclose(td + 1e-2));
  EXPECT_TRUE(td.allclose(td + 1e-2, /*rtol=*/0, /*atol=*/0.1));
}

TEST(TensorDictCompareTest, AllcloseIsFalseForDifferentKeysOrShapes) {
  TensorDict td({{"a", torch::zeros({2})}}, {2});
  EXPECT_FALSE(td.allclose(TensorDict({{"b", torch::zeros({2})}}, {2})));
  EXPECT_FALSE(td.allclose(TensorDict({{"a", torch::zeros({2, 1})}}, {2})));
}

// ---- arithmetic -------------------------------------------------------------------------------

TEST(TensorDictArithmeticTest, BinaryOperatorsWithTensorDictsWorkLeafWise) {
  TensorDict x({{"a", torch::tensor({2.f, 4.f})}, {"n", {{"b", torch::tensor({6.f, 8.f})}}}}, {2});
  TensorDict y({{"a", torch::tensor({1.f, 2.f})}, {"n", {{"b", torch::tensor({3.f, 4.f})}}}}, {2});
  EXPECT_TRUE(same_values((x + y).get("a"), torch::tensor({3.f, 6.f})));
  EXPECT_TRUE(same_values((x - y).get({"n", "b"}), torch::tensor({3.f, 4.f})));
  EXPECT_TRUE(same_values((x * y).get("a"), torch::tensor({2.f, 8.f})));
  EXPECT_TRUE(same_values((x / y).get({"n", "b"}), torch::tensor({2.f, 2.f})));
  EXPECT_EQ((x + y).batch_size(), BatchSize{2});
}

TEST(TensorDictArithmeticTest, BinaryOperatorsWithScalarsWorkLeafWise) {
  TensorDict x({{"a", torch::tensor({2.f, 4.f})}}, {2});
  EXPECT_TRUE(same_values((x + 1).get("a"), torch::tensor({3.f, 5.f})));
  EXPECT_TRUE(same_values((x - 1).get("a"), torch::tensor({1.f, 3.f})));
  EXPECT_TRUE(same_values((x * 0.5).get("a"), torch::tensor({1.f, 2.f})));
  EXPECT_TRUE(same_values((x / 2).get("a"), torch::tensor({1.f, 2.f})));
  EXPECT_TRUE(same_values(x.get("a"), torch::tensor({2.f, 4.f})));
}

TEST(TensorDictArithmeticTest, InplaceOperatorsWithTensorDictsKeepStorage) {
  TensorDict x({{"a", torch::tensor({2.f, 4.f})}}, {2});
  TensorDict y({{"a", torch::tensor({1.f, 2.f})}}, {2});
  auto a = x.get("a");
  x.add_(y);
  EXPECT_TRUE(same_values(a, torch::tensor({3.f, 6.f})));
  x.sub_(y);
  EXPECT_TRUE(same_values(a, torch::tensor({2.f, 4.f})));
  x.mul_(y);
  EXPECT_TRUE(same_values(a, torch::tensor({2.f, 8.f})));
  x.div_(y);
  EXPECT_TRUE(same_values(a, torch::tensor({2.f, 4.f})));
  EXPECT_TRUE(x.get("a").is_same(a));
}

TEST(TensorDictArithmeticTest, InplaceOperatorsWithScalars) {
  TensorDict x({{"a", torch::tensor({2.f, 4.f})}, {"n", {{"b", torch::tensor({1.f, 1.f})}}}}, {2});
  auto a = x.get("a");
  x.add_(1);
  EXPECT_TRUE(same_values(a, torch::tensor({3.f, 5.f})));
  x.mul_(2);
  EXPECT_TRUE(same_values(a, torch::tensor({6.f, 10.f})));
  EXPECT_TRUE(same_values(x.get({"n", "b"}), torch::tensor({4.f, 4.f})));
}

// ---- reductions -------------------------------------------------------------------------------

TEST(TensorDictReduceTest, SumWithoutDimReducesEveryBatchDim) {
  TensorDict total = sample().sum();
  EXPECT_EQ(total.batch_size(), BatchSize{});
  // a[i][j] = [2k, 2k + 1] for k = 3i + j: sums 0+2+...+10 = 30 and 1+3+...+11 = 36.
  EXPECT_TRUE(same_values(total.get("a"), torch::tensor({30.f, 36.f})));
  EXPECT_EQ(total.get({"next", "r"}).item<float>(), 15.0f);
}

TEST(TensorDictReduceTest, SumOverOneDim) {
  TensorDict rows = sample().sum(1);
  EXPECT_EQ(rows.batch_size(), BatchSize{2});
  EXPECT_EQ(rows.get("a").sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(same_values(rows.get({"next", "r"}), torch::tensor({3.f, 12.f})));
}

TEST(TensorDictReduceTest, SumKeepdimKeepsSizeOneDims) {
  TensorDict td = sample();
  EXPECT_EQ(td.sum(std::nullopt, /*keepdim=*/true).batch_size(), (BatchSize{1, 1}));
  EXPECT_EQ(td.sum(std::nullopt, true).get("a").sizes(), (std::vector<int64_t>{1, 1, 2}));
  TensorDict cols = td.sum(0, /*keepdim=*/true);
  EXPECT_EQ(cols.batch_size(), (BatchSize{1, 3}));
  EXPECT_TRUE(same_values(cols.get({"next", "r"}), torch::tensor({{3.f, 5.f, 7.f}})));
}

TEST(TensorDictReduceTest, MeanOverNegativeDim) {
  TensorDict m = sample().mean(-1);
  EXPECT_EQ(m.batch_size(), BatchSize{2});
  EXPECT_TRUE(same_values(m.get({"next", "r"}), torch::tensor({1.f, 4.f})));
}

TEST(TensorDictReduceTest, MaxAndMinWithAndWithoutDim) {
  TensorDict td = sample();
  EXPECT_EQ(td.max().get({"next", "r"}).item<float>(), 5.0f);
  EXPECT_EQ(td.min().get({"next", "r"}).item<float>(), 0.0f);
  EXPECT_TRUE(same_values(td.max(0).get({"next", "r"}), torch::tensor({3.f, 4.f, 5.f})));
  EXPECT_TRUE(same_values(td.min(1, true).get({"next", "r"}), torch::tensor({{0.f}, {3.f}})));
  EXPECT_TRUE(same_values(td.max().get("a"), torch::tensor({10.f, 11.f})));
}

TEST(TensorDictReduceTest, ReductionKeepsExtraBatchDimsOfNestedTensorDicts) {
  TensorDict td({{"n", TensorDict({{"x", torch::ones({2, 3, 4})}}, {2, 3})}}, {2});
  TensorDict total = td.sum();
  EXPECT_EQ(total.get_tensordict("n").batch_size(), BatchSize{3});
  EXPECT_TRUE(same_values(total.get({"n", "x"}), torch::full({3, 4}, 2.0)));
}

}  // namespace
