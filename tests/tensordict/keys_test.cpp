// NestedKey, and a TensorDict's keys, values and items (tutorial "keys"/"values", README's
// nested-tuple keys).

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/tensordict.h>

#include "support/printed.h"
#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;

std::vector<std::string> parts_of(const NestedKey& key) {
  return std::vector<std::string>(key.parts().begin(), key.parts().end());
}

// ---- NestedKey --------------------------------------------------------------------------------

TEST(NestedKeyTest, StringKeyHasOnePart) {
  NestedKey key = "action";
  EXPECT_EQ(key.size(), 1u);
  EXPECT_FALSE(key.is_nested());
  EXPECT_EQ(key.front(), "action");
  EXPECT_EQ(key.back(), "action");
}

TEST(NestedKeyTest, StdStringKeyEqualsLiteralKey) {
  EXPECT_EQ(NestedKey(std::string("obs")), NestedKey("obs"));
}

TEST(NestedKeyTest, BracedPathKeepsPartsInOrder) {
  NestedKey key{"next", "observation"};
  EXPECT_TRUE(key.is_nested());
  EXPECT_THAT(parts_of(key), ElementsAre("next", "observation"));
  EXPECT_EQ(key[0], "next");
  EXPECT_EQ(key[1], "observation");
}

TEST(NestedKeyTest, NestedBracesFlattenIntoOnePath) {
  NestedKey key{"a", {"b", {"c"}}};
  EXPECT_THAT(parts_of(key), ElementsAre("a", "b", "c"));
}

TEST(NestedKeyTest, ReadmeNestedTuplesUnravelToTheSamePath) {
  // README: ("nested", ("supernested", ("key",))) and (("nested",), "supernested", (("key",),)).
  NestedKey first{"nested", {"supernested", {"key"}}};
  NestedKey second{{"nested"}, "supernested", {{"key"}}};
  EXPECT_EQ(first, (NestedKey{"nested", "supernested", "key"}));
  EXPECT_EQ(first, second);
}

TEST(NestedKeyTest, OnePartBracedKeyEqualsStringKey) {
  EXPECT_EQ(NestedKey{"a"}, NestedKey("a"));
  EXPECT_FALSE(NestedKey{"a"}.is_nested());
}

TEST(NestedKeyTest, ReprOfOnePartIsQuotedString) {
  EXPECT_EQ(NestedKey("reward").to_string(), "'reward'");
}

TEST(NestedKeyTest, ReprOfPathIsPythonTuple) {
  EXPECT_EQ((NestedKey{"next", "reward"}).to_string(), "('next', 'reward')");
}

TEST(NestedKeyTest, StreamsItsRepr) {
  EXPECT_EQ(printed(NestedKey{"next", "done"}), "('next', 'done')");
}

TEST(NestedKeyTest, JoinAppendsTheChildPath) {
  NestedKey key = NestedKey("next").join({"obs", "pixels"});
  EXPECT_THAT(parts_of(key), ElementsAre("next", "obs", "pixels"));
}

TEST(NestedKeyTest, TailDropsTheFirstPart) {
  EXPECT_EQ((NestedKey{"a", "b", "c"}).tail(), (NestedKey{"b", "c"}));
  EXPECT_EQ((NestedKey{"a", "b"}).tail(), NestedKey("b"));
}

TEST(NestedKeyTest, ParentDropsTheLastPart) {
  EXPECT_EQ((NestedKey{"a", "b", "c"}).parent(), (NestedKey{"a", "b"}));
  EXPECT_EQ((NestedKey{"a", "b"}).parent(), NestedKey("a"));
}

TEST(NestedKeyTest, TailOfOnePartKeyThrowsValueError) {
  EXPECT_THROW(NestedKey("a").tail(), ValueError);
}

TEST(NestedKeyTest, ParentOfOnePartKeyThrowsValueError) {
  EXPECT_THROW(NestedKey("a").parent(), ValueError);
}

TEST(NestedKeyTest, JoinPartsUsesTheSeparator) {
  EXPECT_EQ((NestedKey{"next", "reward"}).join_parts("."), "next.reward");
  EXPECT_EQ((NestedKey{"a", "b", "c"}).join_parts("__"), "a__b__c");
  EXPECT_EQ(NestedKey("a").join_parts("."), "a");
}

TEST(NestedKeyTest, EmptyStringKeyThrowsValueError) {
  EXPECT_THROW(NestedKey(""), ValueError);
  EXPECT_THROW(NestedKey(std::string{}), ValueError);
}

TEST(NestedKeyTest, EmptyPartInPathThrowsValueError) {
  EXPECT_THROW((NestedKey{"a", ""}), ValueError);
}

TEST(NestedKeyTest, EmptyPathThrowsValueError) {
  EXPECT_THROW(NestedKey(std::initializer_list<NestedKey>{}), ValueError);
}

TEST(NestedKeyTest, EqualityComparesEveryPart) {
  EXPECT_EQ((NestedKey{"a", "b"}), (NestedKey{"a", "b"}));
  EXPECT_NE((NestedKey{"a", "b"}), (NestedKey{"a", "c"}));
  EXPECT_NE((NestedKey{"a", "a"}), NestedKey("a"));
}

TEST(NestedKeyTest, OrderingIsLexicographicOverParts) {
  EXPECT_LT(NestedKey("a"), (NestedKey{"a", "b"}));
  EXPECT_LT((NestedKey{"a", "b"}), NestedKey("b"));
  EXPECT_FALSE(NestedKey("b") < NestedKey("a"));
}

TEST(NestedKeyTest, EqualKeysHashEqualAndWorkInUnorderedSets) {
  std::hash<NestedKey> hash;
  EXPECT_EQ(hash(NestedKey{"next", "obs"}), hash(NestedKey{{"next"}, {"obs"}}));
  std::unordered_set<NestedKey> set{NestedKey{"next", "obs"}, NestedKey("obs")};
  EXPECT_EQ(set.count(NestedKey{"next", "obs"}), 1u);
  EXPECT_EQ(set.count(NestedKey("next")), 0u);
}

// ---- contains ---------------------------------------------------------------------------------

TensorDict transition() {
  return TensorDict({{"obs", torch::zeros({4, 3})},
                     {"next", {{"obs", torch::zeros({4, 3})}, {"reward", torch::zeros({4, 1})}}},
                     {"info", "text"}},
                    {4});
}

TEST(TensorDictKeysTest, ContainsFindsTopLevelAndNestedKeys) {
  TensorDict td = transition();
  EXPECT_TRUE(td.contains("obs"));
  EXPECT_TRUE(td.contains("next"));
  EXPECT_TRUE(td.contains({"next", "reward"}));
  EXPECT_TRUE(td.contains("info"));
}

TEST(TensorDictKeysTest, ContainsIsFalseForMissingKeysAndMissingIntermediates) {
  TensorDict td = transition();
  EXPECT_FALSE(td.contains("reward"));
  EXPECT_FALSE(td.contains({"next", "done"}));
  EXPECT_FALSE(td.contains({"prev", "obs"}));
}

TEST(TensorDictKeysTest, ContainsIsFalseForPathThroughALeaf) {
  // contains answers and never throws (get is the throwing accessor).
  TensorDict td = transition();
  EXPECT_FALSE(td.contains({"obs", "x"}));
  EXPECT_FALSE(td.contains({"info", "x"}));
}

// ---- keys -------------------------------------------------------------------------------------

TEST(TensorDictKeysTest, KeysKeepInsertionOrder) {
  TensorDict td = TensorDict::empty({2});
  td.set("zeta", torch::zeros({2}));
  td.set("alpha", torch::zeros({2}));
  td.set("mid", torch::zeros({2}));
  EXPECT_THAT(td.keys(), ElementsAre(NestedKey("zeta"), NestedKey("alpha"), NestedKey("mid")));
}

TEST(TensorDictKeysTest, ReplacingAValueKeepsTheKeyPosition) {
  TensorDict td({{"a", torch::zeros({2})}, {"b", torch::zeros({2})}, {"c", torch::zeros({2})}},
                {2});
  td.set("a", torch::ones({2, 5}));
  EXPECT_THAT(td.keys(), ElementsAre(NestedKey("a"), NestedKey("b"), NestedKey("c")));
}

TEST(TensorDictKeysTest, TutorialKeysAfterSetAndDelete) {
  TensorDict td({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  td.set("c", torch::zeros({3, 4, 2, 2}));
  td.set("d", torch::zeros({3, 4, 2, 2}));
  EXPECT_THAT(td.keys(),
              ElementsAre(NestedKey("a"), NestedKey("b"), NestedKey("c"), NestedKey("d")));
  td.del_("c");
  EXPECT_THAT(td.keys(), ElementsAre(NestedKey("a"), NestedKey("b"), NestedKey("d")));
}

TEST(TensorDictKeysTest, TopLevelKeysListNestedTensorDictsButNotTheirChildren) {
  EXPECT_THAT(transition().keys(),
              ElementsAre(NestedKey("obs"), NestedKey("next"), NestedKey("info")));
}

TEST(TensorDictKeysTest, IncludeNestedListsParentBeforeChildrenDepthFirst) {
  EXPECT_THAT(transition().keys(/*include_nested=*/true),
              ElementsAre(NestedKey("obs"), NestedKey("next"), (NestedKey{"next", "obs"}),
                          (NestedKey{"next", "reward"}), NestedKey("info")));
}

TEST(TensorDictKeysTest, LeavesOnlyDropsNestedTensorDictKeys) {
  EXPECT_THAT(transition().keys(/*include_nested=*/true, /*leaves_only=*/true),
              ElementsAre(NestedKey("obs"), (NestedKey{"next", "obs"}),
                          (NestedKey{"next", "reward"}), NestedKey("info")));
}

TEST(TensorDictKeysTest, LeavesOnlyWithoutNestingListsTopLevelLeaves) {
  EXPECT_THAT(transition().keys(/*include_nested=*/false, /*leaves_only=*/true),
              ElementsAre(NestedKey("obs"), NestedKey("info")));
}

TEST(TensorDictKeysTest, IncludeNestedWalksEveryLevel) {
  TensorDict td = TensorDict::empty({});
  td.set({"nested", {"supernested", {"key"}}}, torch::zeros({}));
  td.set("top", torch::zeros({}));
  EXPECT_THAT(td.keys(true),
              ElementsAre(NestedKey("nested"), (NestedKey{"nested", "supernested"}),
                          (NestedKey{"nested", "supernested", "key"}), NestedKey("top")));
}

TEST(TensorDictKeysTest, ReadmeUnravelledKeyIsFoundAmongNestedKeys) {
  TensorDict td({{"key 1", torch::ones({3, 4, 5})}}, {3, 4});
  td.set({"nested", {"supernested", {"key"}}}, torch::zeros({3, 4}));
  auto keys = td.keys(/*include_nested=*/true);
  NestedKey wanted{{"nested"}, "supernested", {{"key"}}};
  EXPECT_NE(std::find(keys.begin(), keys.end(), wanted), keys.end());
}

TEST(TensorDictKeysTest, EmptyNestedTensorDictIsAKeyButNotALeaf) {
  TensorDict td({{"a", torch::zeros({2})}, {"empty", TensorDict::empty({2})}}, {2});
  EXPECT_THAT(td.keys(true), ElementsAre(NestedKey("a"), NestedKey("empty")));
  EXPECT_THAT(td.keys(true, true), ElementsAre(NestedKey("a")));
}

TEST(TensorDictKeysTest, ManyKeysKeepOrderAndStayFindableAfterDeletion) {
  // More keys than the linear-search threshold: the hash index must follow every change.
  TensorDict td = TensorDict::empty({});
  for (int i = 0; i < 24; ++i)
    td.set("k" + std::to_string(i), torch::tensor(static_cast<int64_t>(i)));
  td.del_("k3");
  td.rename_key_("k7", "seven");
  auto keys = td.keys();
  ASSERT_EQ(keys.size(), 23u);
  EXPECT_EQ(keys.front(), NestedKey("k0"));
  EXPECT_FALSE(td.contains("k3"));
  EXPECT_FALSE(td.contains("k7"));
  EXPECT_EQ(td.get("seven").item<int64_t>(), 7);
  for (int i = 0; i < 24; ++i) {
    if (i == 3 || i == 7) continue;
    EXPECT_EQ(td.get("k" + std::to_string(i)).item<int64_t>(), i) << "key k" << i;
  }
}

// ---- values and items -------------------------------------------------------------------------

TEST(TensorDictKeysTest, TutorialValuesComeInKeyOrder) {
  TensorDict td({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  td.set("c", torch::zeros({3, 4, 2, 2}));
  td.set("d", torch::zeros({3, 4, 2, 2}));
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& v : td.values()) shapes.push_back(std::get<torch::Tensor>(v).sizes().vec());
  EXPECT_THAT(shapes,
              ElementsAre(std::vector<int64_t>{3, 4, 5}, std::vector<int64_t>{3, 4},
                          std::vector<int64_t>{3, 4, 2, 2}, std::vector<int64_t>{3, 4, 2, 2}));
}

TEST(TensorDictKeysTest, ValuesFollowTheOrderOfNestedLeafKeys) {
  TensorDict td = transition();
  auto keys = td.keys(true, true);
  auto values = td.values(true, true);
  ASSERT_EQ(keys.size(), values.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto expected = td.get_value(keys[i]);
    ASSERT_EQ(values[i].index(), expected.index()) << keys[i];
    if (auto* t = std::get_if<torch::Tensor>(&values[i])) {
      EXPECT_TRUE(t->is_same(std::get<torch::Tensor>(expected))) << keys[i];
    }
  }
}

TEST(TensorDictKeysTest, ValuesHoldEveryKindOfEntry) {
  auto values = transition().values();
  ASSERT_EQ(values.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<torch::Tensor>(values[0]));
  EXPECT_TRUE(std::holds_alternative<TensorDict>(values[1]));
  EXPECT_TRUE(std::holds_alternative<tensordict::NonTensorData>(values[2]));
}

TEST(TensorDictKeysTest, ItemsPairKeysWithAliasedValues) {
  TensorDict td = transition();
  auto items = td.items(true, true);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[1].first, (NestedKey{"next", "obs"}));
  EXPECT_TRUE(std::get<torch::Tensor>(items[1].second).is_same(td.get({"next", "obs"})));
  EXPECT_EQ(items[3].first, NestedKey("info"));
}

TEST(TensorDictKeysTest, ItemsIncludeNestedTensorDictsUnlessLeavesOnly) {
  TensorDict td = transition();
  auto all = td.items(true);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[1].first, NestedKey("next"));
  EXPECT_TRUE(std::get<TensorDict>(all[1].second).is_same(td.get_tensordict("next")));
}

}  // namespace
