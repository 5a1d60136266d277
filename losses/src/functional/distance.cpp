// The critics' elementwise regression losses (distance_loss) and their names.

#include <tdrl/losses/functional/distance.h>

#include <algorithm>
#include <sstream>

#include <torch/types.h>

#include <tensordict/errors.h>

namespace tdrl::losses::functional {

const std::vector<std::string>& distance_loss_names() {
  static const std::vector<std::string> names = {"l1", "l2", "smooth_l1"};
  return names;
}

void check_distance_loss_name(const std::string& where, const std::string& option,
                              const std::string& loss_function) {
  const auto& names = distance_loss_names();
  if (std::find(names.begin(), names.end(), loss_function) != names.end()) return;
  throw tensordict::ValueError(where + ": " + option + " is '" + loss_function +
                               "'; valid: 'l1', 'l2', 'smooth_l1'");
}

torch::Tensor distance_loss(const torch::Tensor& v1, const torch::Tensor& v2,
                            const std::string& loss_function) {
  if (!v1.sizes().equals(v2.sizes())) {
    std::ostringstream os;
    os << "distance_loss: the inputs have shapes " << v1.sizes() << " and " << v2.sizes()
       << "; they must match exactly (a [B] target against a [B, 1] value would broadcast to "
          "[B, B]); reshape one of them";
    throw tensordict::ShapeError(os.str());
  }
  if (loss_function == "l2") return (v1 - v2).pow(2);
  if (loss_function == "l1") return (v1 - v2).abs();
  if (loss_function == "smooth_l1") {
    return torch::smooth_l1_loss(v1, v2, at::Reduction::None, /*beta=*/1.0);
  }
  check_distance_loss_name("distance_loss", "loss_function", loss_function);
  TORCH_INTERNAL_ASSERT(false, "unreachable");
}

}  // namespace tdrl::losses::functional
