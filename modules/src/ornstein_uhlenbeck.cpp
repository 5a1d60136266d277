// OrnsteinUhlenbeckProcessModule: temporally correlated (OU) exploration noise.

#include <tdrl/modules/ornstein_uhlenbeck.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/exploration_util.h"

namespace tdrl::modules {

using detail::check_at_least;
using detail::check_in_range;
using detail::expand_right;
using detail::fmt;
using detail::holder_of;
using detail::spec_repr;
using detail::to_c10;

namespace {

// `key` with its last part replaced by `name` (a key next to it).
NestedKey sibling(const NestedKey& key, const std::string& name) {
  return key.is_nested() ? key.parent().join(name) : NestedKey(name);
}

}  // namespace

OrnsteinUhlenbeckProcessModuleImpl::OrnsteinUhlenbeckProcessModuleImpl(
    tdrl::specs::TensorSpecPtr action_spec, OrnsteinUhlenbeckProcessModuleOptions options)
    : ExplorationModuleBase(
          "OrnsteinUhlenbeckProcessModule", std::move(action_spec), options.action_key(),
          ActionKind::kContinuous,
          {"eps", options.eps_init(), options.eps_end(), options.annealing_num_steps(), INFINITY}),
      options_(std::move(options)),
      noise_key_(sibling(options_.action_key(), kOuPrevNoiseKey)),
      steps_key_(sibling(options_.action_key(), kOuStepsKey)) {
  check_in_range(name(), "theta", options_.theta(), 0.0, INFINITY, "[0, inf)");
  TDRL_CHECK(std::isfinite(options_.mu()), ValueError, name(), ": mu is ", fmt(options_.mu()),
             "; it must be finite");
  check_in_range(name(), "sigma", options_.sigma(), 0.0, INFINITY, "[0, inf)");
  TDRL_CHECK(options_.dt() > 0.0 && std::isfinite(options_.dt()), ValueError, name(), ": dt is ",
             fmt(options_.dt()), "; it must be > 0");
  if (options_.sigma_min()) {
    check_in_range(name(), "sigma_min", *options_.sigma_min(), 0.0, options_.sigma(),
                   "[0, sigma] = [0, " + fmt(options_.sigma()) + "]");
  }
  check_at_least(name(), "n_steps_annealing", options_.n_steps_annealing(), 1);

  const auto& shape = spec()->shape();
  if (options_.x0().defined()) {
    const torch::Tensor& x0 = options_.x0();
    const auto n = static_cast<int64_t>(shape.size());
    bool ok = x0.dim() <= n;
    for (int64_t i = 1; ok && i <= x0.dim(); ++i) {
      const int64_t size = x0.size(-i);
      ok = size == 1 || size == shape[static_cast<size_t>(n - i)];
    }
    TDRL_CHECK(ok, ShapeError, name(), ": x0 has shape ", shape_str(x0.sizes()),
               ", which does not broadcast to the action spec's shape ", shape_str(shape),
               "; pass a scalar or a tensor broadcastable to it");
    x0_ = x0.to(torch::kFloat64).expand(shape).clone();
  } else {
    x0_ = torch::zeros(shape, torch::kFloat64);
  }
  set_keys({options_.action_key()}, {options_.action_key(), noise_key_, steps_key_});
}

double OrnsteinUhlenbeckProcessModuleImpl::current_sigma(int64_t n_steps) const {
  if (!options_.sigma_min()) return options_.sigma();
  const double sigma_min = *options_.sigma_min();
  const double slope =
      (options_.sigma() - sigma_min) / static_cast<double>(options_.n_steps_annealing());
  return std::max(sigma_min, options_.sigma() - slope * static_cast<double>(n_steps));
}

void OrnsteinUhlenbeckProcessModuleImpl::explore(const TensorDict& tensordict,
                                                 const TensorDict& tensordict_out,
                                                 const torch::Tensor& action) {
  const NestedKey& key = action_key();
  const std::string where = forward_where();
  const auto options = torch::TensorOptions().dtype(action.dtype()).device(action.device());
  const std::vector<int64_t> batch = holder_of(tensordict, key).batch_size();
  const torch::Tensor x0 = x0_.to(options).expand(action.sizes());

  // Restart flags per batch element of the action's TensorDict, read from the root.
  std::optional<torch::Tensor> restart;
  if (auto is_init = tensordict.find(options_.is_init_key())) {
    const std::vector<int64_t> root = tensordict.batch_size();
    std::vector<int64_t> with_one = root;
    with_one.push_back(1);
    const std::vector<int64_t> got = is_init->sizes().vec();
    TDRL_CHECK(!(got != root && got != with_one), ShapeError, where, ": is_init ",
               options_.is_init_key().to_string(), " has shape ", shape_str(got), "; expected ",
               shape_str(with_one), " or ", shape_str(root), " (one flag per batch element)");
    std::vector<int64_t> view = root;
    view.resize(batch.size(), 1);
    restart = is_init->to(torch::kBool).reshape(view).expand(batch).to(action.device());
  }

  // The process state carried in the TensorDict (checked against the action), restarted where
  // flagged; x0 and step 0 when absent.
  torch::Tensor prev_noise;
  torch::Tensor steps;
  const auto stored_noise = tensordict.find(noise_key_);
  const auto stored_steps = tensordict.find(steps_key_);
  if (stored_noise && stored_steps) {
    TDRL_CHECK(stored_noise->sizes() == action.sizes(), ShapeError, where, ": ",
               noise_key_.to_string(), " has shape ", shape_str(stored_noise->sizes()),
               " but the action has shape ", shape_str(action.sizes()),
               "; delete the stale process state or set ", options_.is_init_key().to_string());
    TDRL_CHECK(stored_steps->sizes().vec() == batch, ShapeError, where, ": ",
               steps_key_.to_string(), " has shape ", shape_str(stored_steps->sizes()),
               "; expected the batch size ", shape_str(batch), "; delete the stale process state");
    prev_noise = stored_noise->to(options);
    steps = stored_steps->to(torch::TensorOptions().dtype(torch::kInt64).device(action.device()));
    if (restart) {
      prev_noise = torch::where(expand_right(*restart, action.dim()), x0, prev_noise);
      steps = steps.masked_fill(*restart, 0);
    }
  } else {
    prev_noise = x0.clone();
    steps =
        torch::zeros(batch, torch::TensorOptions().dtype(torch::kInt64).device(action.device()));
  }

  // One Euler-Maruyama step of the process with the annealed sigma_t, added to the action.
  torch::Tensor sigma;
  if (options_.sigma_min()) {
    const double sigma_min = *options_.sigma_min();
    const double slope =
        (options_.sigma() - sigma_min) / static_cast<double>(options_.n_steps_annealing());
    sigma = expand_right(
        (options_.sigma() - slope * steps.to(torch::kFloat64)).clamp_min(sigma_min).to(options),
        action.dim());
  } else {
    sigma = torch::full({}, options_.sigma(), options);
  }
  const double dt = options_.dt();
  const torch::Tensor noise =
      prev_noise + options_.theta() * (options_.mu() - prev_noise) * dt +
      sigma * std::sqrt(dt) * torch::randn(action.sizes(), to_c10(options_.generator()), options);
  torch::Tensor result = action + eps() * noise;
  if (options_.safe()) result = spec()->project(result).to(action.dtype());

  tensordict_out.set(key, result);
  tensordict_out.set(noise_key_, noise);
  tensordict_out.set(steps_key_, steps + 1);
}

void OrnsteinUhlenbeckProcessModuleImpl::print_to(std::ostream& stream) const {
  stream << name() << "(eps=" << fmt(eps()) << ", eps_init=" << fmt(options_.eps_init())
         << ", eps_end=" << fmt(options_.eps_end())
         << ", annealing_num_steps=" << options_.annealing_num_steps()
         << ", theta=" << fmt(options_.theta()) << ", mu=" << fmt(options_.mu())
         << ", sigma=" << fmt(options_.sigma()) << ", dt=" << fmt(options_.dt())
         << ", sigma_min=" << (options_.sigma_min() ? fmt(*options_.sigma_min()) : "None")
         << ", n_steps_annealing=" << options_.n_steps_annealing()
         << ", action_key=" << options_.action_key().to_string()
         << ", is_init_key=" << options_.is_init_key().to_string()
         << ", safe=" << (options_.safe() ? "True" : "False") << ", spec=" << spec_repr(*spec())
         << ")";
}

}  // namespace tdrl::modules
