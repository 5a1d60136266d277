#pragma once

/// AdditiveGaussianModule: Gaussian exploration noise for continuous actions (TorchRL's
/// `AdditiveGaussianModule`).

#include <cstdint>
#include <optional>
#include <ostream>
#include <utility>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tdrl/modules/exploration.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/fields.h>
#include <tensordict/nested_key.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::modules {

/// Options of AdditiveGaussianModule (TorchRL's argument names and defaults).
/// Example: `AdditiveGaussianModuleOptions().sigma_init(0.5).sigma_end(0.05).safe(true)`
struct AdditiveGaussianModuleOptions {
  /// The noise scale before any `step()`; >= 0. Default 1.0.
  TORCH_ARG(double, sigma_init) = 1.0;
  /// The noise scale reached after `annealing_num_steps` frames, in [0, sigma_init].
  /// Default 0.1.
  TORCH_ARG(double, sigma_end) = 0.1;
  /// The number of frames over which sigma decreases linearly from sigma_init to sigma_end;
  /// >= 1. Default 1000.
  TORCH_ARG(int64_t, annealing_num_steps) = 1000;
  /// The mean of the unscaled noise N(mean, std); finite. Default 0.0.
  TORCH_ARG(double, mean) = 0.0;
  /// The standard deviation of the unscaled noise N(mean, std); >= 0. Default 1.0.
  TORCH_ARG(double, std) = 1.0;
  /// The key of the action, read and overwritten. Default "action".
  TORCH_ARG(tensordict::NestedKey, action_key){"action"};
  /// Project the noisy action into the spec (clamp into a Bounded spec's box). Default true.
  TORCH_ARG(bool, safe) = true;
  /// The generator of the noise, on the actions' device. Default: LibTorch's default generator.
  TORCH_ARG(std::optional<torch::Generator>, generator);

 public:
  /// The noise and its schedule (the key and the generator are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    v("sigma_init", sigma_init_, tf::at_least(0), "noise scale before any annealing");
    v("sigma_end", sigma_end_, tf::at_least(0), "noise scale at the end (at most sigma_init)");
    v("annealing_num_steps", annealing_num_steps_, tf::at_least(1),
      "frames over which sigma decreases linearly from sigma_init to sigma_end");
    v("mean", mean_, "mean of the unscaled noise");
    v("std", std_, tf::at_least(0), "standard deviation of the unscaled noise");
    v("safe", safe_, "clamp the noisy action into the action spec's box");
  }
};

/// Additive Gaussian exploration: action + sigma * N(mean, std), drawn independently for each
/// element, then projected into the spec when `safe` (a Bounded spec clamps into its box).
///
/// Active only under an explicit kRandom interaction type, as ExplorationModuleBase says
/// (with the checks forward makes and the thread safety).
///
/// Keys: reads and overwrites `action_key`, a floating tensor `[*batch, *spec->shape()]` (any
/// leading dims are extra batch dims); the result keeps the action's dtype and device.
///
/// State: `sigma()` lives in the registered buffer "sigma", so `torch::save`/`torch::load` keep
/// it; `step(frames)` anneals it.
///
/// Errors: the constructor throws ValueError for a null or discrete spec, sigma_init < 0,
/// sigma_end outside [0, sigma_init], annealing_num_steps < 1, std < 0 or a non-finite mean.
/// forward (when active) throws KeyError when the action is missing (naming the module, the key
/// and the available keys), ShapeError when its trailing dims differ from the spec's shape,
/// TypeError when it is not floating. A failed call leaves the TensorDict unchanged.
///
/// Example:
/// ```
/// auto spec = std::make_shared<tdrl::specs::Bounded>(
///     tdrl::specs::BoundedOptions().low(-1.0).high(1.0).shape({6}));
/// AdditiveGaussianModule explore(spec, AdditiveGaussianModuleOptions().sigma_init(0.5));
/// tensordict::nn::SetInteractionType guard(tensordict::nn::InteractionType::kRandom);
/// explore(td);  // td["action"]: [*batch, 6], noisy and clamped into [-1, 1]
/// ```
class AdditiveGaussianModuleImpl : public ExplorationModuleBase {
 public:
  /// Throws ValueError as the class comment says.
  AdditiveGaussianModuleImpl(tdrl::specs::TensorSpecPtr spec,
                             AdditiveGaussianModuleOptions options = {});

  /// The current noise scale (`step(frames)` anneals it).
  double sigma() const { return scale(); }

  const AdditiveGaussianModuleOptions& options() const { return options_; }

 protected:
  void explore(const tensordict::TensorDict& tensordict,
               const tensordict::TensorDict& tensordict_out, const torch::Tensor& action) override;
  /// `AdditiveGaussianModule(sigma=1.0, sigma_init=1.0, sigma_end=0.1,
  /// annealing_num_steps=1000, mean=0.0, std=1.0, action_key='action', safe=True,
  /// spec=BoundedContinuous(shape=[6]))`.
  void print_to(std::ostream& stream) const override;

 private:
  AdditiveGaussianModuleOptions options_;
  torch::Tensor sigma_;
};

/// Holder of AdditiveGaussianModuleImpl: `explore(td)` calls forward.
TORCH_MODULE(AdditiveGaussianModule);

}  // namespace tdrl::modules
