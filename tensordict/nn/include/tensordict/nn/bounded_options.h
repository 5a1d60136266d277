#pragma once

/// The options shared by the distributions on an interval [low, high] (TanhNormal,
/// TruncatedNormal): the bounds and how many trailing dims form one event.

#include <optional>

#include <torch/arg.h>
#include <torch/types.h>

#include <tensordict/arg.h>

namespace tensordict::nn {

/// Builder for `[low, high]` and `event_dims`; `Derived` is the concrete options struct so
/// that chained calls keep its type.
template <class Derived>
struct BoundedOptions {
  /// Lower bound, a scalar or a tensor broadcastable with loc (per-dim bounds). Default -1.
  Derived& low(double v) { return low(torch::tensor(v)); }
  TDRL_CRTP_ARG(Derived, torch::Tensor, low) = torch::tensor(-1.0);

 public:
  /// Upper bound, a scalar or a tensor broadcastable with loc; must exceed low. Default 1.
  Derived& high(double v) { return high(torch::tensor(v)); }
  TDRL_CRTP_ARG(Derived, torch::Tensor, high) = torch::tensor(1.0);
  /// Trailing dims forming one event. Default: 1, or 0 when loc is a scalar.
  TDRL_CRTP_ARG(Derived, std::optional<int64_t>, event_dims);
};

}  // namespace tensordict::nn
