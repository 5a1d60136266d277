// The names the tdrl package tests (specs, envs, modules, losses, collectors, replay) use
// unqualified: tensordict's key, handle and error types, gmock's matchers, the printed() and
// error_message() helpers, and two shorthands. A test file
// includes this header and writes `using namespace tdrl::testing::names;` inside its anonymous
// namespace, as the tensordict tests do with tensordict::testing.

#pragma once

#include <cstdint>
#include <vector>

#include <gmock/gmock.h>

#include <tensordict/errors.h>
#include <tensordict/nested_key.h>
#include <tensordict/tensor_dict.h>

#include "support/error_message.h"
#include "support/printed.h"

namespace tdrl::testing::names {

using ::tdrl::test_util::error_message;
using ::tensordict::DeviceError;
using ::tensordict::IndexError;
using ::tensordict::KeyError;
using ::tensordict::NestedKey;
using ::tensordict::ShapeError;
using ::tensordict::TensorDict;
using ::tensordict::TypeError;
using ::tensordict::ValueError;
using ::tensordict::testing::printed;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::ThrowsMessage;

/// A shape as a comparable vector, e.g. `Shape{4, 1}`.
using Shape = std::vector<int64_t>;
/// A list of keys, e.g. `Keys{"observation", {"next", "reward"}}`.
using Keys = std::vector<NestedKey>;

}  // namespace tdrl::testing::names
