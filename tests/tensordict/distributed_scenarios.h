// The two sides of each distributed test: rank 0 runs inside the test binary, rank 1 in the
// peer process it launches (distributed_peer.cpp). Both build their TensorDicts here so the
// sides agree by construction.

#pragma once

#include <tensordict/tensordict.h>

namespace tensordict::testing {

/// A nested TensorDict of batch [2] with three dtypes; `fill` sets every value (0 = zeros).
/// With `reversed`, keys are inserted in the opposite order (transport order must not care).
inline TensorDict distributed_sample(double fill, bool reversed = false) {
  auto a = torch::arange(6, torch::kFloat).reshape({2, 3}) * fill;
  auto b = torch::ones({2, 4}, torch::kLong) * static_cast<int64_t>(fill);
  auto d = torch::full({2}, 7.0 * fill, torch::kDouble);
  TensorDict nested_c({{"d", d}}, {2});
  if (reversed) {
    TensorDict n({{"c", nested_c}, {"b", b}}, {2});
    return TensorDict({{"n", n}, {"a", a}}, {2});
  }
  TensorDict n({{"b", b}, {"c", nested_c}}, {2});
  return TensorDict({{"a", a}, {"n", n}}, {2});
}

/// The same structure with "a" of shape [2, 4] instead of [2, 3].
inline TensorDict distributed_mismatch() {
  auto td = distributed_sample(1.0);
  td.set("a", torch::ones({2, 4}));
  return td;
}

/// Nested batch dims deeper than the root's, a key with a space and a dot, and an insertion
/// order that is not transport order: what recv_new must rebuild exactly.
inline TensorDict distributed_deep(double fill) {
  TensorDict inner({{"z", torch::full({2, 3, 4}, fill)},
                    {"a b.c", torch::arange(6, torch::kInt).reshape({2, 3})}},
                   {2, 3});
  return TensorDict({{"y", torch::full({2}, 2.0 * fill, torch::kDouble)}, {"inner", inner}}, {2});
}

}  // namespace tensordict::testing
