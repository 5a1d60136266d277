// Helpers shared by the replay tests: transition TensorDicts whose every value encodes its row,
// and the names the tests use unqualified.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tdrl/replay.h>
#include <tensordict/tensordict.h>

#include "support/test_names.h"

namespace tdrl::replay::testing {

using namespace tdrl::testing::names;
using ::tensordict::Error;
using ::torch::indexing::Slice;

constexpr int64_t kObs = 4;
constexpr int64_t kAct = 2;

/// `n` transitions, batch [n]: observation [n, 4], action [n, 2], ("next", "observation")
/// [n, 4], ("next", "reward") [n, 1] float and ("next", "done") [n, 1] bool. Every float value
/// of row i is `first + i` (so a row's content names it); done is false.
inline TensorDict transitions(int64_t n, double first = 0) {
  auto v = torch::arange(n, torch::kDouble).add_(first).to(torch::kFloat).unsqueeze(1);
  return TensorDict({{"observation", v.expand({n, kObs}).clone()},
                     {"action", v.expand({n, kAct}).clone()},
                     {"next",
                      {{"observation", v.expand({n, kObs}).clone()},
                       {"reward", v.clone()},
                       {"done", torch::zeros({n, 1}, torch::kBool)}}}},
                    {n});
}

/// The value each row of a TensorDict made by `transitions` encodes (its observation's first
/// column), as int64 [n].
inline torch::Tensor row_values(const TensorDict& td) {
  return td.get("observation").select(-1, 0).to(torch::kLong);
}

/// True when every float leaf of each row holds the same value as its observation (no row
/// mixes two writes).
inline bool rows_consistent(const TensorDict& td) {
  const auto v = td.get("observation").select(-1, 0).unsqueeze(-1);
  return td.get("observation").eq(v).all().item<bool>() &&
         td.get("action").eq(v).all().item<bool>() &&
         td.get({"next", "observation"}).eq(v).all().item<bool>() &&
         td.get({"next", "reward"}).eq(v).all().item<bool>();
}

/// Sorted values of an int64 tensor, as a vector.
inline std::vector<int64_t> sorted_values(const torch::Tensor& t) {
  auto s = std::get<0>(t.to(torch::kLong).reshape({-1}).sort());
  return std::vector<int64_t>(s.data_ptr<int64_t>(), s.data_ptr<int64_t>() + s.numel());
}

/// The values of an int64 tensor, as a vector.
inline std::vector<int64_t> values_of(const torch::Tensor& t) {
  auto c = t.to(torch::kLong).reshape({-1}).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

/// Pearson's chi-square statistic of `counts` against `expected` counts.
inline double chi_square(const torch::Tensor& counts, const torch::Tensor& expected) {
  const auto c = counts.to(torch::kDouble);
  const auto e = expected.to(torch::kDouble);
  return ((c - e).pow(2) / e).sum().item<double>();
}

}  // namespace tdrl::replay::testing
