// Every misuse throws the right tensordict::Error subclass with a message naming the key path
// and the shapes, and a failed write leaves the TensorDict exactly as it was.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/name_table.h>
#include <tensordict/tensordict.h>

#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;
using tensordict::IndexError;

// Expects `stmt` to throw `type` and checks its message with `matcher`.
#define EXPECT_THROW_MSG(stmt, type, matcher)             \
  do {                                                    \
    try {                                                 \
      stmt;                                               \
      ADD_FAILURE() << "expected " #type " from: " #stmt; \
    } catch (const type& e) {                             \
      EXPECT_THAT(std::string(e.what()), matcher);        \
    }                                                     \
  } while (false)

// Everything observable about a TensorDict: keys, batch sizes, which tensors are stored and
// their values, and non-tensor values.
struct Snapshot {
  BatchSize batch;
  std::vector<NestedKey> keys;
  std::vector<BatchSize> nested_batches;
  std::vector<torch::Tensor> stored;  // the tensor objects themselves
  std::vector<torch::Tensor> values;  // copies of their contents
  std::vector<NonTensorData> non_tensors;
};

Snapshot snapshot(const TensorDict& td) {
  Snapshot s;
  s.batch = td.batch_size();
  s.keys = td.keys(/*include_nested=*/true);
  for (const auto& [key, v] : td.items(true)) {
    if (auto* t = std::get_if<torch::Tensor>(&v)) {
      s.stored.push_back(*t);
      s.values.push_back(t->clone());
    } else if (auto* nested = std::get_if<TensorDict>(&v)) {
      s.nested_batches.push_back(nested->batch_size());
    } else {
      s.non_tensors.push_back(std::get<NonTensorData>(v));
    }
  }
  return s;
}

::testing::AssertionResult unchanged(const TensorDict& td, const Snapshot& before) {
  Snapshot now = snapshot(td);
  if (now.batch != before.batch) return ::testing::AssertionFailure() << "batch size changed";
  if (now.keys != before.keys) return ::testing::AssertionFailure() << "keys changed";
  if (now.nested_batches != before.nested_batches)
    return ::testing::AssertionFailure() << "a nested batch size changed";
  for (size_t i = 0; i < now.stored.size(); ++i) {
    if (!now.stored[i].is_same(before.stored[i]))
      return ::testing::AssertionFailure() << "tensor " << i << " was replaced";
    if (!torch::equal(now.stored[i], before.values[i]))
      return ::testing::AssertionFailure() << "tensor " << i << " was written";
  }
  for (size_t i = 0; i < now.non_tensors.size(); ++i)
    if (!(now.non_tensors[i] == before.non_tensors[i]))
      return ::testing::AssertionFailure() << "non-tensor value " << i << " changed";
  return ::testing::AssertionSuccess();
}

// batch [3, 4]: a [3, 4, 5] zeros, i [3, 4] int64 zeros, next {obs [3, 4, 2] zeros}, s "text".
TensorDict transition_3x4() {
  return TensorDict({{"a", torch::zeros({3, 4, 5})},
                     {"i", torch::zeros({3, 4}, torch::kLong)},
                     {"next", {{"obs", torch::zeros({3, 4, 2})}}},
                     {"s", "text"}},
                    {3, 4});
}

// ---- The hierarchy ----------------------------------------------------------------------------

TEST(TensorDictErrorsTest, CheckThrowsTheTypeWithItsPartsStreamedOnlyWhenTheConditionFails) {
  int built = 0;
  auto part = [&built] {
    ++built;
    return std::string("part");
  };
  TDRL_CHECK(1 + 1 == 2, tensordict::ValueError, "never ", part());
  EXPECT_EQ(built, 0) << "the message is built only on failure";
  EXPECT_THAT([&] { TDRL_CHECK(1 + 1 == 3, ShapeError, "op: got ", 3, " ", part(), '!'); },
              ThrowsMessage<ShapeError>(::testing::StrEq("op: got 3 part!")));
}

TEST(TensorDictErrorsTest, EveryErrorIsATensorDictErrorAndARuntimeError) {
  TensorDict td = transition_3x4();
  EXPECT_THROW(td.get("missing"), tensordict::Error);
  EXPECT_THROW(td.set("x", torch::zeros({2})), tensordict::Error);
  EXPECT_THROW(td.index({0, 0, 0}), std::runtime_error);
  EXPECT_THROW(td.sum(5), tensordict::Error);
}

// ---- Reading ----------------------------------------------------------------------------------

TEST(TensorDictErrorsTest, MissingKeyMessageListsAvailableKeysClosestFirst) {
  TensorDict td({{"observation", torch::zeros({})},
                 {"action", torch::zeros({})},
                 {"reward", torch::zeros({})}});
  EXPECT_THROW_MSG(td.get("actoin"), KeyError,
                   AllOf(HasSubstr("'actoin'"), HasSubstr("['action', "),
                         HasSubstr("'observation'"), HasSubstr("'reward'")));
}

TEST(TensorDictErrorsTest, MissingNestedKeyMessageNamesThePathAndTheKeysThere) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.get({"next", "observation"}), KeyError,
                   AllOf(HasSubstr("('next', 'observation')"), HasSubstr("['obs']")));
}

TEST(TensorDictErrorsTest, MissingIntermediateMessageNamesTheMissingPart) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.get({"nxt", "obs"}), KeyError,
                   AllOf(HasSubstr("('nxt', 'obs')"), HasSubstr("'nxt'"), HasSubstr("'next'")));
}

TEST(TensorDictErrorsTest, PathThroughATensorThrowsKeyErrorNamingIt) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.get({"a", "x"}), KeyError, AllOf(HasSubstr("('a', 'x')"), HasSubstr("'a'")));
}

TEST(TensorDictErrorsTest, GetOfNestedTensorDictThrowsTypeErrorPointingToGetTensorDict) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.get("next"), TypeError,
                   AllOf(HasSubstr("'next'"), HasSubstr("get_tensordict")));
}

TEST(TensorDictErrorsTest, GetTensorDictOfTensorThrowsTypeError) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.get_tensordict("a"), TypeError, HasSubstr("'a'"));
}

TEST(TensorDictErrorsTest, GetNonTensorOfTensorThrowsTypeError) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.get_non_tensor({"next", "obs"}), TypeError, HasSubstr("('next', 'obs')"));
}

// ---- set --------------------------------------------------------------------------------------

TEST(TensorDictErrorsTest, SetOfNestedLeafWithWrongLeadingDimsNamesPathAndBothShapes) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.set({"next", "obs"}, torch::zeros({4, 3})), ShapeError,
                   AllOf(HasSubstr("TensorDict::set"), HasSubstr("('next', 'obs')"),
                         HasSubstr("[4, 3]"), HasSubstr("[3, 4]")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, FailedSetOfNewNestedPathCreatesNoIntermediate) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW(td.set({"new", "deeper", "x"}, torch::zeros({4, 3})), ShapeError);
  EXPECT_FALSE(td.contains("new"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, SetThroughANonTensorDictEntryThrowsKeyError) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.set({"s", "x"}, torch::zeros({3, 4})), KeyError,
                   AllOf(HasSubstr("('s', 'x')"), HasSubstr("non-tensor")));
  EXPECT_THROW(td.set({"a", "x"}, torch::zeros({3, 4})), KeyError);
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, SetOfNestedTensorDictWithWrongBatchSizeNamesBothBatchSizes) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.set("n", TensorDict::empty({4})), ShapeError,
                   AllOf(HasSubstr("'n'"), HasSubstr("[4]"), HasSubstr("[3, 4]")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, SetOfATensorDictIntoItselfThrowsValueError) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW(td.set("self", td), ValueError);
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, SetOfAnUndefinedTensorThrowsValueError) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.set("x", torch::Tensor()), ValueError, HasSubstr("'x'"));
  EXPECT_FALSE(td.contains("x"));
}

// ---- set_ / set_at_ ---------------------------------------------------------------------------

TEST(TensorDictErrorsTest, SetInplaceShapeMismatchNamesKeyAndBothShapes) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.set_({"next", "obs"}, torch::ones({3, 4, 5})), ShapeError,
                   AllOf(HasSubstr("TensorDict::set_"), HasSubstr("('next', 'obs')"),
                         HasSubstr("[3, 4, 5]"), HasSubstr("[3, 4, 2]")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, SetInplaceDtypeMismatchNamesBothDtypes) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.set_("a", torch::ones({3, 4, 5}, torch::kDouble)), TypeError,
                   AllOf(HasSubstr("'a'"), HasSubstr("Float"), HasSubstr("Double")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, SetInplaceOfMissingKeyThrowsKeyError) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.set_({"next", "reward"}, torch::ones({3, 4})), KeyError,
                   HasSubstr("('next', 'reward')"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, SetInplaceOfNonTensorEntryThrowsTypeError) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW(td.set_("s", torch::ones({3, 4})), TypeError);
  EXPECT_THROW(td.set_("next", torch::ones({3, 4})), TypeError);
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, SetAtWithIndexBeyondTheBatchDimsThrowsIndexError) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.set_at_("a", torch::ones({5}), {0, 0, 0}), IndexError, HasSubstr("[3, 4]"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, SetAtWithValueThatDoesNotFitTheRegionThrowsShapeError) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.set_at_("a", torch::ones({3, 5}), {0}), ShapeError,
                   AllOf(HasSubstr("[3, 5]"), HasSubstr("[4, 5]")));
  EXPECT_TRUE(unchanged(td, before));
}

// ---- update / update_ -------------------------------------------------------------------------

TEST(TensorDictErrorsTest, UpdateWithOneBadEntryAmongGoodOnesWritesNothing) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.update(Entries{{"a", torch::ones({3, 4, 5})},
                                     {"new", torch::ones({3, 4})},
                                     {{"next", "obs"}, torch::ones({4, 3})}}),
                   ShapeError,
                   AllOf(HasSubstr("('next', 'obs')"), HasSubstr("[4, 3]"), HasSubstr("[3, 4]")));
  EXPECT_FALSE(td.contains("new"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, UpdateFromTensorDictWithOneBadLeafWritesNothing) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  TensorDict other({{"a", torch::ones({3, 4, 5})}, {"next", {{"reward", torch::ones({3, 5})}}}},
                   {3});
  EXPECT_THROW_MSG(
      td.update(other), ShapeError,
      AllOf(HasSubstr("('next', 'reward')"), HasSubstr("[3, 5]"), HasSubstr("[3, 4]")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, InplaceUpdateWithOneWrongDtypeWritesNothing) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  UpdateOptions options;
  options.inplace = true;
  EXPECT_THROW_MSG(td.update(Entries{{"a", torch::ones({3, 4, 5})},
                                     {{"next", "obs"}, torch::ones({3, 4, 2}, torch::kDouble)}},
                             options),
                   TypeError, HasSubstr("('next', 'obs')"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, UpdateInplaceMethodWithAMissingKeyWritesNothing) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  TensorDict other({{"a", torch::ones({3, 4, 5})}, {"missing", torch::ones({3, 4})}}, {3, 4});
  EXPECT_THROW_MSG(td.update_(other), KeyError, HasSubstr("'missing'"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, UpdateInplaceMethodWithOneBadShapeWritesNothing) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  TensorDict other({{"a", torch::ones({3, 4, 5})}, {"next", {{"obs", torch::ones({3, 4, 3})}}}},
                   {3, 4});
  EXPECT_THROW_MSG(
      td.update_(other), ShapeError,
      AllOf(HasSubstr("('next', 'obs')"), HasSubstr("[3, 4, 3]"), HasSubstr("[3, 4, 2]")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, CopyFromTensorDictWithWrongDtypeWritesNothing) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  TensorDict other = td.clone().apply([](const torch::Tensor& t) { return t + 1; });
  other.set("i", torch::ones({3, 4}));  // float where td holds int64
  EXPECT_THROW(td.copy_(other), TypeError);
  EXPECT_TRUE(unchanged(td, before));
}

// ---- apply / apply_ ---------------------------------------------------------------------------

TEST(TensorDictErrorsTest, ApplyInplaceWhoseFunctionChangesOneLeafsDtypeWritesNothing) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.apply_([](const torch::Tensor& t) {
    return t.scalar_type() == torch::kLong ? t.to(torch::kFloat) : t + 1;
  }),
                   TypeError, AllOf(HasSubstr("'i'"), HasSubstr("Long"), HasSubstr("Float")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, ApplyInplaceWhoseFunctionChangesOneLeafsShapeWritesNothing) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.apply_([](const torch::Tensor& t) {
    return t.dim() == 3 && t.size(2) == 2 ? torch::ones({3, 4, 7}) : t + 1;
  }),
                   ShapeError, AllOf(HasSubstr("('next', 'obs')"), HasSubstr("[3, 4, 7]")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, ApplyWhoseResultLosesTheBatchDimsThrowsShapeError) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.apply([](const torch::Tensor& t) { return t.sum(); }), ShapeError,
                   AllOf(HasSubstr("'a'"), HasSubstr("[3, 4, 5]"), HasSubstr("[3, 4]")));
}

TEST(TensorDictErrorsTest, ApplyOverTwoTensorDictsWithAMissingKeyThrowsKeyError) {
  TensorDict td = transition_3x4();
  TensorDict other({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  EXPECT_THROW_MSG(
      td.apply(other, [](const torch::Tensor& x, const torch::Tensor& y) { return x + y; }),
      KeyError, HasSubstr("'i'"));
}

// ---- arithmetic -------------------------------------------------------------------------------

TEST(TensorDictErrorsTest, AddInplaceWithAMissingKeyWritesNothing) {
  TensorDict td({{"a", torch::ones({3})}, {"b", torch::ones({3})}}, {3});
  Snapshot before = snapshot(td);
  TensorDict other({{"a", torch::ones({3})}}, {3});
  EXPECT_THROW_MSG(td.add_(other), KeyError, HasSubstr("'b'"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, AddInplaceThatWouldPromoteOneLeafWritesNothing) {
  TensorDict td({{"a", torch::ones({3})}, {"i", torch::ones({3}, torch::kLong)}}, {3});
  Snapshot before = snapshot(td);
  TensorDict other({{"a", torch::ones({3})}, {"i", torch::full({3}, 0.5)}}, {3});
  EXPECT_THROW_MSG(td.add_(other), TypeError, HasSubstr("'i'"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, BinaryOperatorOnDifferentKeysListsTheOddOnes) {
  TensorDict x({{"a", torch::ones({3})}, {"b", torch::ones({3})}}, {3});
  TensorDict y({{"a", torch::ones({3})}, {"c", torch::ones({3})}}, {3});
  EXPECT_THROW_MSG(x + y, KeyError,
                   AllOf(HasSubstr("'b' (left only)"), HasSubstr("'c' (right only)")));
  EXPECT_THROW(static_cast<void>(x == y), KeyError);
}

// ---- index_put_ -------------------------------------------------------------------------------

TEST(TensorDictErrorsTest, IndexPutWithOneBadLeafWritesNothing) {
  TensorDict td({{"a", torch::zeros({3, 2})}, {"b", torch::zeros({3, 4})}}, {3});
  Snapshot before = snapshot(td);
  TensorDict value({{"a", torch::ones({2})}, {"b", torch::ones({5})}}, {});
  EXPECT_THROW_MSG(td.index_put_({1}, value), ShapeError,
                   AllOf(HasSubstr("'b'"), HasSubstr("[5]"), HasSubstr("[4]")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, IndexPutWithOneBadLeafPreallocatesNothing) {
  TensorDict td({{"b", torch::zeros({3, 4})}}, {3});
  Snapshot before = snapshot(td);
  TensorDict value(
      {{"new", torch::ones({2})}, {"nested", {{"x", torch::ones({})}}}, {"b", torch::ones({5})}},
      {});
  EXPECT_THROW(td.index_put_({1}, value), ShapeError);
  EXPECT_FALSE(td.contains("new"));
  EXPECT_FALSE(td.contains("nested"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, IndexPutWithWrongDtypeWritesNothing) {
  TensorDict td({{"a", torch::zeros({3, 2})}, {"i", torch::zeros({3}, torch::kLong)}}, {3});
  Snapshot before = snapshot(td);
  TensorDict value({{"a", torch::ones({2})}, {"i", torch::ones({})}}, {});
  EXPECT_THROW_MSG(td.index_put_({0}, value), TypeError, HasSubstr("'i'"));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, IndexPutOfAValueWhoseBatchDoesNotFitTheRegionThrowsShapeError) {
  TensorDict td({{"a", torch::zeros({3, 2})}}, {3});
  Snapshot before = snapshot(td);
  TensorDict value({{"a", torch::ones({3, 2})}}, {3});
  EXPECT_THROW_MSG(td.index_put_({Slice(0, 2)}, value), ShapeError,
                   AllOf(HasSubstr("[3]"), HasSubstr("[2]")));
  EXPECT_TRUE(unchanged(td, before));
}

// ---- rename / delete --------------------------------------------------------------------------

TEST(TensorDictErrorsTest, RenameOntoAnExistingKeyKeepsBothEntries) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.rename_key_("a", "i"), KeyError, HasSubstr("'i'"));
  EXPECT_THROW(td.rename_key_("a", {"next", "obs"}), KeyError);
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, RenameOntoAPathThroughALeafKeepsTheEntry) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW(td.rename_key_({"next", "obs"}, {"a", "obs"}), KeyError);
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, RenameOfAMissingKeyListsAvailableKeys) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.rename_key_("b", "c"), KeyError, AllOf(HasSubstr("'b'"), HasSubstr("'a'")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, DeleteOfAMissingKeyListsAvailableKeys) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.del_({"next", "ob"}), KeyError,
                   AllOf(HasSubstr("('next', 'ob')"), HasSubstr("'obs'")));
  EXPECT_THROW(td.pop("zz"), KeyError);
  EXPECT_TRUE(unchanged(td, before));
}

// ---- shape and index errors -------------------------------------------------------------------

TEST(TensorDictErrorsTest, SetBatchSizeThatDoesNotFitChangesNothing) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.set_batch_size({4, 4}), ShapeError,
                   AllOf(HasSubstr("[3, 4, 5]"), HasSubstr("[4, 4]")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, IndexWithMoreIndicesThanBatchDimsThrowsIndexError) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.index({0, 0, 0}), IndexError, HasSubstr("[3, 4]"));
}

TEST(TensorDictErrorsTest, IndexOutOfRangeThrowsIndexError) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.index({5}), IndexError, HasSubstr("[3, 4]"));
}

TEST(TensorDictErrorsTest, ReductionOverADimOutOfRangeThrowsValueError) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.sum(2), ValueError, HasSubstr("dim 2"));
  EXPECT_THROW(td.mean(-3), ValueError);
}

TEST(TensorDictErrorsTest, UnsqueezeOutOfRangeThrowsValueError) {
  EXPECT_THROW(transition_3x4().unsqueeze(4), ValueError);
}

TEST(TensorDictErrorsTest, StackOfNothingThrowsValueError) {
  EXPECT_THROW(tensordict::stack({}), ValueError);
}

TEST(TensorDictErrorsTest, StackOfUnequalBatchSizesNamesBoth) {
  TensorDict x = TensorDict::empty({3});
  TensorDict y = TensorDict::empty({4});
  EXPECT_THROW_MSG(tensordict::stack({x, y}), ShapeError,
                   AllOf(HasSubstr("[3]"), HasSubstr("[4]")));
}

TEST(TensorDictErrorsTest, CatOfDifferentKeysThrowsKeyError) {
  TensorDict x({{"a", torch::zeros({2})}}, {2});
  TensorDict y({{"b", torch::zeros({2})}}, {2});
  EXPECT_THROW(tensordict::cat({x, y}), KeyError);
}

TEST(TensorDictErrorsTest, LazyStackViewOfADenseTensorDictThrowsTypeError) {
  EXPECT_THROW(tensordict::LazyStackedTensorDict{transition_3x4()}, TypeError);
}

// ---- other whole-TensorDict operations --------------------------------------------------------

TEST(TensorDictErrorsTest, StrictSelectOfAMissingKeyListsAvailableKeys) {
  TensorDict td = transition_3x4();
  EXPECT_THROW_MSG(td.select({"a", "b"}), KeyError,
                   AllOf(HasSubstr("'b'"), HasSubstr("'a'"), HasSubstr("strict")));
}

TEST(TensorDictErrorsTest, FillOfMissingOrNonTensorKeyThrows) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW(td.fill_("missing", 1), KeyError);
  EXPECT_THROW(td.fill_("s", 1), TypeError);
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, MaskedFillWithNonBoolMaskThrowsTypeError) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW(td.masked_fill_(torch::ones({3, 4}), 1), TypeError);
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, MaskedFillWithMaskOfWrongShapeNamesBothShapes) {
  TensorDict td = transition_3x4();
  Snapshot before = snapshot(td);
  EXPECT_THROW_MSG(td.masked_fill_(torch::ones({4}, torch::kBool), 1), ShapeError,
                   AllOf(HasSubstr("[4]"), HasSubstr("[3, 4]")));
  EXPECT_TRUE(unchanged(td, before));
}

TEST(TensorDictErrorsTest, WhereWithOtherMissingAKeyThrowsKeyError) {
  TensorDict x({{"a", torch::ones({3})}, {"b", torch::ones({3})}}, {3});
  TensorDict y({{"a", torch::ones({3})}}, {3});
  EXPECT_THROW(x.where(torch::ones({3}, torch::kBool), y), KeyError);
}

TEST(TensorDictErrorsTest, FlattenKeysCollisionThrowsValueError) {
  TensorDict td({{"a.b", torch::zeros({})}, {"a", {{"b", torch::zeros({})}}}});
  EXPECT_THROW_MSG(td.flatten_keys("."), ValueError, HasSubstr("'a.b'"));
  EXPECT_THROW(td.flatten_keys(""), ValueError);
}

TEST(TensorDictErrorsTest, UnflattenKeysCollisionThrowsValueError) {
  TensorDict td({{"a.b", torch::zeros({})}, {"a", {{"b", torch::zeros({})}}}});
  EXPECT_THROW(td.unflatten_keys("."), ValueError);
  EXPECT_THROW(td.unflatten_keys(""), ValueError);
}

TEST(TensorDictErrorsTest, NonTensorValueReadAsTheWrongTypeThrowsTypeError) {
  TensorDict td = transition_3x4();
  EXPECT_THROW(td.get_non_tensor<double>("s"), TypeError);
}

// ---- NameTable: the names of a choice and what each does, from one table --------------------

TEST(NameTableTest, ListsItsNamesInOrderAndFindsWhatEachStandsFor) {
  const tensordict::NameTable<int> table("colour", {{"red", 1}, {"green", 2}, {"blue", 3}});
  EXPECT_THAT(table.names(), ::testing::ElementsAre("red", "green", "blue"));
  EXPECT_EQ(table.at("green", "paint"), 2);
  ASSERT_NE(table.find("blue"), nullptr);
  EXPECT_EQ(*table.find("blue"), 3);
  EXPECT_EQ(table.find("Blue"), nullptr);
}

TEST(NameTableTest, AnUnknownNameIsRefusedWithTheClosestNamesFirst) {
  const tensordict::NameTable<int> table("colour", {{"red", 1}, {"green", 2}, {"blue", 3}});
  EXPECT_THROW_MSG(table.at("gren", "paint"), ValueError,
                   HasSubstr("paint: unknown colour 'gren'; the colours are ['green', "));
}

TEST(NameTableTest, AnEmptyOrRepeatedNameIsRefusedWhenTheTableIsMade) {
  using Table = tensordict::NameTable<int>;
  EXPECT_THROW_MSG(Table("colour", {{"red", 1}, {"", 2}}), ValueError, HasSubstr("an empty name"));
  EXPECT_THROW_MSG(Table("colour", {{"red", 1}, {"red", 2}}), ValueError,
                   HasSubstr("'red' appears twice"));
}

}  // namespace
