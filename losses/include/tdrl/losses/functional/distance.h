#pragma once

/// The elementwise regression losses the losses use for critics (TorchRL's
/// torchrl.objectives.utils.distance_loss).

#include <string>
#include <vector>

#include <torch/types.h>

namespace tdrl::losses::functional {

/// The names distance_loss takes, in the order error messages list them:
/// "l1", "l2", "smooth_l1".
const std::vector<std::string>& distance_loss_names();

/// Throws ValueError unless `loss_function` is one of distance_loss_names(); the message starts
/// with `where`, names `option` and lists the valid names. Loss constructors call it.
void check_distance_loss_name(const std::string& where, const std::string& option,
                              const std::string& loss_function);

/// The elementwise (unreduced) distance between `v1` and `v2`, of their common shape:
/// - "l1": |v1 - v2|;
/// - "l2": (v1 - v2)^2 (no factor 1/2, as torch's mse_loss);
/// - "smooth_l1": 0.5 (v1 - v2)^2 where |v1 - v2| < 1, |v1 - v2| - 0.5 elsewhere (Huber with
///   beta 1, as torch's smooth_l1_loss).
/// Gradients flow into both arguments (detach the target yourself when it is one).
/// Throws ShapeError when the shapes differ (no broadcasting: a [B] target against a [B, 1]
/// value would silently give [B, B]) and ValueError for an unknown `loss_function`.
/// Example: `auto loss = distance_loss(value_target, state_value, "smooth_l1").mean();`
torch::Tensor distance_loss(const torch::Tensor& v1, const torch::Tensor& v2,
                            const std::string& loss_function);

}  // namespace tdrl::losses::functional
