// Helpers shared by the tensordict tests (core and nn): the reference TensorDicts of the
// tutorial and the README, shape shorthands, printed(), and the names the tests use unqualified. A
// test file includes this header and writes `using namespace tensordict::testing;` inside its
// anonymous namespace.

#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensordict.h>

#include "support/printed.h"

namespace tensordict::testing {

// ---- Names the tests use unqualified ------------------------------------------------------------

using namespace torch::indexing;  // Slice, None, Ellipsis
using ::tensordict::AnyValue;
using ::tensordict::BatchSize;
using ::tensordict::Error;
using ::tensordict::KeyError;
using ::tensordict::LazyStackedTensorDict;
using ::tensordict::MemmapMode;
using ::tensordict::MemoryMappedTensor;
using ::tensordict::NestedKey;
using ::tensordict::NonTensorData;
using ::tensordict::ShapeError;
using ::tensordict::TensorDict;
using ::tensordict::TypeError;
using ::tensordict::UpdateOptions;
using ::tensordict::Value;
using ::tensordict::ValueError;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::ThrowsMessage;

/// A list of `{key, value}` pairs, as taken by TensorDict::update and the constructor.
using Entries = std::vector<std::pair<NestedKey, Value>>;

// ---- Shapes -------------------------------------------------------------------------------------

/// A tensor's sizes as a comparable vector, e.g. `Shape{3, 4, 5}`.
using Shape = std::vector<int64_t>;

/// The sizes of `t` as a Shape.
inline Shape shape_of(const torch::Tensor& t) { return t.sizes().vec(); }

// ---- Reference TensorDicts ----------------------------------------------------------------------

/// The tutorial's TensorDict with random values: a [3, 4, 5], b [3, 4], batch [3, 4] (randn).
inline TensorDict tutorial_td() {
  return TensorDict({{"a", torch::randn({3, 4, 5})}, {"b", torch::randn({3, 4})}}, {3, 4});
}

/// The tutorial's TensorDict as the tutorial writes it: a [3, 4, 5], b [3, 4] zeros, batch [3, 4].
inline TensorDict tutorial_zeros_td() {
  return TensorDict({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
}

/// The README's TensorDict: "key 1" ones [3, 4, 5], "key 2" bool zeros [3, 4, 5], batch [3, 4].
inline TensorDict readme_td() {
  return TensorDict(
      {{"key 1", torch::ones({3, 4, 5})}, {"key 2", torch::zeros({3, 4, 5}, torch::kBool)}},
      {3, 4});
}

// ---- Comparisons --------------------------------------------------------------------------------

// Checks that `actual` holds what `expected` holds: structure, batch sizes, key order,
// dtypes, shapes, values (bit-exact: the files hold raw elements) and non-tensor values.
inline void expect_same(const TensorDict& expected, const TensorDict& actual) {
  EXPECT_EQ(actual.batch_size(), expected.batch_size());
  ASSERT_EQ(actual.is_lazy_stack(), expected.is_lazy_stack());
  if (expected.is_lazy_stack()) {
    ::tensordict::LazyStackedTensorDict e(expected);
    ::tensordict::LazyStackedTensorDict a(actual);
    EXPECT_EQ(a.stack_dim(), e.stack_dim());
    ASSERT_EQ(a.tensordicts().size(), e.tensordicts().size());
    for (size_t i = 0; i < e.tensordicts().size(); ++i) {
      SCOPED_TRACE("member " + std::to_string(i));
      expect_same(e.tensordicts()[i], a.tensordicts()[i]);
    }
    return;
  }
  ASSERT_EQ(actual.keys(), expected.keys());
  for (const auto& key : expected.keys()) {
    SCOPED_TRACE(key.to_string());
    const Value e = expected.get_value(key);
    const Value a = actual.get_value(key);
    ASSERT_EQ(a.index(), e.index());
    if (auto* et = std::get_if<torch::Tensor>(&e)) {
      const auto& at = std::get<torch::Tensor>(a);
      EXPECT_EQ(at.scalar_type(), et->scalar_type());
      EXPECT_EQ(shape_of(at), shape_of(*et));
      EXPECT_TRUE(torch::equal(at, *et));
    } else if (auto* etd = std::get_if<TensorDict>(&e)) {
      expect_same(*etd, std::get<TensorDict>(a));
    } else {
      const auto& ent = std::get<NonTensorData>(e);
      const auto& ant = std::get<NonTensorData>(a);
      EXPECT_EQ(ant.batch_size(), ent.batch_size());
      EXPECT_EQ(ant.is_uniform(), ent.is_uniform());
      EXPECT_TRUE(ant == ent);
    }
  }
}

}  // namespace tensordict::testing
