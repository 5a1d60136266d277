// AdditiveGaussianModule: annealed Gaussian noise added to continuous actions.

#include <tdrl/modules/additive_gaussian.h>

#include <cmath>
#include <string>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/exploration_util.h"

namespace tdrl::modules {

using detail::check_in_range;
using detail::fmt;
using detail::spec_repr;
using detail::to_c10;

AdditiveGaussianModuleImpl::AdditiveGaussianModuleImpl(tdrl::specs::TensorSpecPtr action_spec,
                                                       AdditiveGaussianModuleOptions options)
    : ExplorationModuleBase("AdditiveGaussianModule", std::move(action_spec), options.action_key(),
                            ActionKind::kContinuous,
                            {"sigma", options.sigma_init(), options.sigma_end(),
                             options.annealing_num_steps(), INFINITY}),
      options_(std::move(options)) {
  TDRL_CHECK(std::isfinite(options_.mean()), ValueError, name(), ": mean is ", fmt(options_.mean()),
             "; it must be finite");
  check_in_range(name(), "std", options_.std(), 0.0, INFINITY, "[0, inf)");
  set_keys({options_.action_key()}, {options_.action_key()});
}

void AdditiveGaussianModuleImpl::explore(const TensorDict& /*tensordict*/,
                                         const TensorDict& tensordict_out,
                                         const torch::Tensor& action) {
  const auto options = torch::TensorOptions().dtype(action.dtype()).device(action.device());
  const torch::Tensor noise =
      torch::randn(action.sizes(), to_c10(options_.generator()), options) * options_.std() +
      options_.mean();
  torch::Tensor result = action + noise * sigma();
  if (options_.safe()) result = spec()->project(result).to(action.dtype());
  tensordict_out.set(action_key(), result);
}

void AdditiveGaussianModuleImpl::print_to(std::ostream& stream) const {
  stream << name() << "(sigma=" << fmt(sigma()) << ", sigma_init=" << fmt(options_.sigma_init())
         << ", sigma_end=" << fmt(options_.sigma_end())
         << ", annealing_num_steps=" << options_.annealing_num_steps()
         << ", mean=" << fmt(options_.mean()) << ", std=" << fmt(options_.std())
         << ", action_key=" << options_.action_key().to_string()
         << ", safe=" << (options_.safe() ? "True" : "False") << ", spec=" << spec_repr(*spec())
         << ")";
}

}  // namespace tdrl::modules
