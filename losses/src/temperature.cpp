#include <tdrl/losses/temperature.h>

#include <cmath>
#include <sstream>

#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tensordict/errors.h>

namespace tdrl::losses {

using tensordict::ValueError;

namespace {

torch::Tensor clamped(const torch::Tensor& log_alpha, const std::optional<double>& min_alpha,
                      const std::optional<double>& max_alpha) {
  auto out = log_alpha;
  if (min_alpha) out = out.clamp_min(std::log(*min_alpha));
  if (max_alpha) out = out.clamp_max(std::log(*max_alpha));
  return out;
}

}  // namespace

EntropyTemperature::EntropyTemperature(torch::nn::Module& owner, const std::string& where,
                                       double alpha_init, std::optional<double> min_alpha,
                                       std::optional<double> max_alpha, bool fixed,
                                       std::optional<double> target_entropy)
    : min_alpha_(min_alpha), max_alpha_(max_alpha), fixed_(fixed), target_entropy_(target_entropy) {
  TDRL_CHECK(alpha_init > 0.0, ValueError, where, ": alpha_init is ", std::to_string(alpha_init),
             "; it must be > 0");
  for (const auto& bound : {min_alpha, max_alpha}) {
    TDRL_CHECK(!(bound && !(*bound > 0.0)), ValueError, where, ": min_alpha/max_alpha is ",
               std::to_string(*bound), "; alpha bounds must be > 0");
  }
  TDRL_CHECK(!(min_alpha && max_alpha && *min_alpha > *max_alpha), ValueError, where,
             ": min_alpha ", std::to_string(*min_alpha), " > max_alpha ",
             std::to_string(*max_alpha));
  const auto init = torch::tensor(std::log(alpha_init), torch::kFloat32);
  log_alpha_ = fixed ? owner.register_buffer("log_alpha", init)
                     : owner.register_parameter("log_alpha", init);
}

torch::Tensor EntropyTemperature::alpha() const {
  return clamped(log_alpha_, min_alpha_, max_alpha_).detach().exp();
}

torch::Tensor EntropyTemperature::clamp() {
  if (min_alpha_ || max_alpha_) {
    torch::NoGradGuard no_grad;
    log_alpha_.copy_(clamped(log_alpha_, min_alpha_, max_alpha_));
  }
  return log_alpha_.detach().exp();
}

void EntropyTemperature::resolve_target_entropy(double action_numel) {
  if (!target_entropy_) target_entropy_ = -action_numel;
}

std::string EntropyTemperature::target_entropy_repr() const {
  if (!target_entropy_) return "auto";
  std::ostringstream out;
  out << *target_entropy_;
  return out.str();
}

torch::Tensor EntropyTemperature::loss(const torch::Tensor& gap) const {
  if (fixed_) return torch::zeros({}, log_alpha_.options());
  return -(log_alpha_ * gap.detach()).mean();
}

}  // namespace tdrl::losses
