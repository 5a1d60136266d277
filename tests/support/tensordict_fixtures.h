// Helpers shared by the tensordict tests: the reference TensorDicts of the tutorial and the
// README, shape shorthands, and the names the tests use unqualified. A test file includes this
// header and writes `using namespace tensordict::testing;` inside its anonymous namespace.

#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/tensordict.h>

namespace tensordict::testing {

// ---- Names the tests use unqualified ------------------------------------------------------------

using namespace torch::indexing;  // Slice, None, Ellipsis
using ::tensordict::BatchSize;
using ::tensordict::KeyError;
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

}  // namespace tensordict::testing
