// AdditiveGaussianModule: annealed Gaussian noise added to continuous actions.

#include <tdrl/modules/additive_gaussian.h>

#include <cmath>
#include <string>

#include <torch/torch.h>

#include <tensordict/errors.h>

#include "detail/exploration_util.h"

namespace tdrl::modules {

using tensordict::NestedKey;
using tensordict::TensorDict;
using tensordict::ValueError;

using detail::action_to_explore;
using detail::anneal;
using detail::check_in_range;
using detail::check_schedule;
using detail::fmt;
using detail::require_spec;
using detail::scalar_buffer;
using detail::spec_repr;
using detail::to_c10;

AdditiveGaussianModuleImpl::AdditiveGaussianModuleImpl(tdrl::specs::TensorSpecPtr spec,
                                                       AdditiveGaussianModuleOptions options)
    : TensorDictModuleBase("AdditiveGaussianModule"),
      spec_(std::move(spec)),
      options_(std::move(options)) {
  require_spec(spec_, name(), /*continuous=*/true);
  check_schedule(name(), "sigma", options_.sigma_init(), options_.sigma_end(),
                 options_.annealing_num_steps(), INFINITY, "[0, inf)");
  TDRL_CHECK(std::isfinite(options_.mean()), ValueError, name(), ": mean is ", fmt(options_.mean()),
             "; it must be finite");
  check_in_range(name(), "std", options_.std(), 0.0, INFINITY, "[0, inf)");
  set_keys({options_.action_key()}, {options_.action_key()});
  sigma_ = register_buffer("sigma", scalar_buffer(options_.sigma_init()));
}

void AdditiveGaussianModuleImpl::step(int64_t frames) {
  anneal(sigma_, options_.sigma_init(), options_.sigma_end(), options_.annealing_num_steps(),
         frames, name());
}

double AdditiveGaussianModuleImpl::sigma() const { return sigma_.item<double>(); }

void AdditiveGaussianModuleImpl::forward_impl(const TensorDict& tensordict,
                                              const TensorDict& tensordict_out) {
  const NestedKey& key = options_.action_key();
  const std::string where = name() + "::forward";
  const auto explored = action_to_explore(
      tensordict, tensordict_out, key, *spec_, where,
      /*floating=*/true, [&](const std::string& w) { check_in_keys(tensordict, w); });
  if (!explored) return;
  const torch::Tensor& action = *explored;

  const auto options = torch::TensorOptions().dtype(action.dtype()).device(action.device());
  const torch::Tensor noise =
      torch::randn(action.sizes(), to_c10(options_.generator()), options) * options_.std() +
      options_.mean();
  torch::Tensor result = action + noise * sigma();
  if (options_.safe()) result = spec_->project(result).to(action.dtype());
  tensordict_out.set(key, result);
}

void AdditiveGaussianModuleImpl::print_to(std::ostream& stream) const {
  stream << name() << "(sigma=" << fmt(sigma()) << ", sigma_init=" << fmt(options_.sigma_init())
         << ", sigma_end=" << fmt(options_.sigma_end())
         << ", annealing_num_steps=" << options_.annealing_num_steps()
         << ", mean=" << fmt(options_.mean()) << ", std=" << fmt(options_.std())
         << ", action_key=" << options_.action_key().to_string()
         << ", safe=" << (options_.safe() ? "True" : "False") << ", spec=" << spec_repr(*spec_)
         << ")";
}

}  // namespace tdrl::modules
