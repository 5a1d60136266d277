#pragma once

/// The options shared by the distributions on an interval [low, high] (TanhNormal,
/// TruncatedNormal): the bounds and how many trailing dims form one event.

#include <optional>

#include <torch/types.h>

namespace tensordict::nn {

/// Builder for `[low, high]` and `event_dims`; `Derived` is the concrete options struct so
/// that chained calls keep its type.
template <class Derived>
struct BoundedOptions {
  /// Lower bound, a scalar or a tensor broadcastable with loc (per-dim bounds). Default -1.
  Derived& low(double v) { return low(torch::tensor(v)); }
  Derived& low(torch::Tensor v) {
    low_ = std::move(v);
    return self();
  }
  /// Upper bound, a scalar or a tensor broadcastable with loc; must exceed low. Default 1.
  Derived& high(double v) { return high(torch::tensor(v)); }
  Derived& high(torch::Tensor v) {
    high_ = std::move(v);
    return self();
  }
  /// Trailing dims forming one event. Default: 1, or 0 when loc is a scalar.
  Derived& event_dims(int64_t v) {
    event_dims_ = v;
    return self();
  }
  const torch::Tensor& low() const { return low_; }
  const torch::Tensor& high() const { return high_; }
  std::optional<int64_t> event_dims() const { return event_dims_; }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  torch::Tensor low_ = torch::tensor(-1.0);
  torch::Tensor high_ = torch::tensor(1.0);
  std::optional<int64_t> event_dims_;
};

}  // namespace tensordict::nn
