#pragma once

/// OrnsteinUhlenbeckProcessModule: temporally correlated exploration noise for continuous
/// actions (TorchRL's `OrnsteinUhlenbeckProcessModule`, the DDPG exploration).

#include <cstdint>
#include <optional>
#include <ostream>
#include <utility>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tdrl/modules/exploration.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nested_key.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::modules {

/// The key (next to the action) holding each batch element's last noise value (TorchRL's name).
inline const char* const kOuPrevNoiseKey = "_ou_prev_noise";
/// The key (next to the action) holding each batch element's process step count (TorchRL's name).
inline const char* const kOuStepsKey = "_ou_steps";

/// Options of OrnsteinUhlenbeckProcessModule (TorchRL's argument names and defaults).
/// Example: `OrnsteinUhlenbeckProcessModuleOptions().theta(0.15).sigma(0.2).sigma_min(0.05)`
struct OrnsteinUhlenbeckProcessModuleOptions {
  /// The noise scale factor eps before any `step()`; >= 0. Default 1.0.
  TORCH_ARG(double, eps_init) = 1.0;
  /// The factor reached after `annealing_num_steps` frames, in [0, eps_init]. Default 0.1.
  TORCH_ARG(double, eps_end) = 0.1;
  /// The number of frames over which eps decreases linearly from eps_init to eps_end; >= 1.
  /// Default 1000.
  TORCH_ARG(int64_t, annealing_num_steps) = 1000;
  /// The mean-reversion rate; >= 0. Default 0.15.
  TORCH_ARG(double, theta) = 0.15;
  /// The mean the noise reverts to; finite. Default 0.0.
  TORCH_ARG(double, mu) = 0.0;
  /// The volatility at process step 0; >= 0. Default 0.2.
  TORCH_ARG(double, sigma) = 0.2;
  /// The time step; > 0. Default 0.01.
  TORCH_ARG(double, dt) = 1e-2;
  /// The noise a batch element restarts from: a tensor broadcastable to the spec's shape.
  /// Default: zeros.
  TORCH_ARG(torch::Tensor, x0);

 public:
  /// The same, one value for every element.
  OrnsteinUhlenbeckProcessModuleOptions& x0(double v) {
    return x0(torch::tensor(v, torch::kFloat64));
  }
  /// The volatility floor, in [0, sigma]: sigma then decreases linearly with each batch
  /// element's process step count, reaching sigma_min after n_steps_annealing steps. Default:
  /// unset (constant sigma).
  TORCH_ARG(std::optional<double>, sigma_min);
  /// The process steps over which sigma reaches sigma_min; >= 1. Default 1000.
  TORCH_ARG(int64_t, n_steps_annealing) = 1000;
  /// The key of the action, read and overwritten. Default "action".
  TORCH_ARG(tensordict::NestedKey, action_key){"action"};
  /// The key of the bool flags `[*batch, 1]` (or `[*batch]`) marking batch elements whose
  /// process restarts from x0 (set by env resets). Default "is_init".
  TORCH_ARG(tensordict::NestedKey, is_init_key){"is_init"};
  /// Project the noisy action into the spec (clamp into a Bounded spec's box). Default true.
  TORCH_ARG(bool, safe) = true;
  /// The generator of the noise, on the actions' device. Default: LibTorch's default generator.
  TORCH_ARG(std::optional<torch::Generator>, generator);
};

/// Ornstein-Uhlenbeck exploration: one noise process per batch element, advanced once per call,
/// added to the action scaled by `eps()`:
///
///   noise_{t+1} = noise_t + theta * (mu - noise_t) * dt + sigma_t * sqrt(dt) * N(0, 1)
///   action     <- action + eps * noise_{t+1}      (then projected into the spec when safe)
///
/// where sigma_t = max(sigma_min, sigma - (sigma - sigma_min) * t / n_steps_annealing) for a
/// batch element at process step t (constant sigma when sigma_min is unset), and a process
/// restarts at noise = x0, t = 0.
///
/// Active only under an explicit kRandom interaction type, as ExplorationModuleBase says
/// (with the checks forward makes and the thread safety).
///
/// Keys: reads and overwrites `action_key`, a floating tensor `[*batch, *spec->shape()]` (any
/// leading dims beyond the batch of the TensorDict holding it are extra dims, sharing that batch
/// element's step count). The process state lives in the TensorDict, next to the action (in the
/// action key's parent for a nested key): "_ou_prev_noise" (the last noise, the action's shape
/// and dtype) and "_ou_steps" (int64 `[*batch]`, the process step count). Unlike TorchRL, which
/// stores noise - x0, "_ou_prev_noise" holds the noise itself. Both are (re)initialised to x0
/// and 0 when absent, and for the batch elements whose `is_init_key` (bool `[*batch, 1]` or
/// `[*batch]`, read from the root when present; absent means no restart) is true.
/// out_keys are the action and the two state keys.
///
/// State: `eps()` lives in the registered buffer "eps", so `torch::save`/`torch::load` keep it;
/// `step(frames)` anneals it. The per-element process state travels with the TensorDict
/// (collectors carry it from one step to the next).
///
/// Errors: the constructor throws ValueError for a null or discrete spec, eps_init < 0, eps_end
/// outside [0, eps_init], annealing_num_steps < 1, theta < 0, sigma < 0, dt <= 0, sigma_min
/// outside [0, sigma], n_steps_annealing < 1 or a non-finite mu, and ShapeError when x0 does not
/// broadcast to the spec's shape. forward (when active) throws KeyError when the action is
/// missing (naming the module, the key and the available keys), ShapeError when its trailing
/// dims differ from the spec's shape, when is_init has the wrong shape, or when a state key
/// holds a tensor of the wrong shape (e.g. left from a different action shape), TypeError when
/// the action is not floating. A failed call leaves the TensorDict unchanged.
///
/// Example:
/// ```
/// auto spec = std::make_shared<tdrl::specs::Bounded>(
///     tdrl::specs::BoundedOptions().low(-1.0).high(1.0).shape({6}));
/// OrnsteinUhlenbeckProcessModule explore(spec, OrnsteinUhlenbeckProcessModuleOptions());
/// tensordict::nn::SetInteractionType guard(tensordict::nn::InteractionType::kRandom);
/// explore(td);  // td["action"] noisy; td["_ou_prev_noise"], td["_ou_steps"] written
/// ```
class OrnsteinUhlenbeckProcessModuleImpl : public ExplorationModuleBase {
 public:
  /// Throws as the class comment says.
  OrnsteinUhlenbeckProcessModuleImpl(tdrl::specs::TensorSpecPtr spec,
                                     OrnsteinUhlenbeckProcessModuleOptions options = {});

  /// The current noise scale factor (`step(frames)` anneals it).
  double eps() const { return scale(); }
  /// The volatility sigma_t of a process at step `n_steps` (see the class comment).
  double current_sigma(int64_t n_steps) const;

  /// The key of the last noise, next to the action: `("agents", "_ou_prev_noise")` for the
  /// action key `("agents", "action")`.
  const tensordict::NestedKey& noise_key() const { return noise_key_; }
  /// The key of the process step counts, next to the action.
  const tensordict::NestedKey& steps_key() const { return steps_key_; }
  const OrnsteinUhlenbeckProcessModuleOptions& options() const { return options_; }

 protected:
  void explore(const tensordict::TensorDict& tensordict,
               const tensordict::TensorDict& tensordict_out, const torch::Tensor& action) override;
  /// `OrnsteinUhlenbeckProcessModule(eps=1.0, eps_init=1.0, eps_end=0.1,
  /// annealing_num_steps=1000, theta=0.15, mu=0.0, sigma=0.2, dt=0.01, sigma_min=None,
  /// n_steps_annealing=1000, action_key='action', is_init_key='is_init', safe=True,
  /// spec=BoundedContinuous(shape=[6]))`.
  void print_to(std::ostream& stream) const override;

 private:
  OrnsteinUhlenbeckProcessModuleOptions options_;
  tensordict::NestedKey noise_key_;
  tensordict::NestedKey steps_key_;
  // x0 broadcast to the spec's shape, float64.
  torch::Tensor x0_;
};

/// Holder of OrnsteinUhlenbeckProcessModuleImpl: `explore(td)` calls forward.
TORCH_MODULE(OrnsteinUhlenbeckProcessModule);

}  // namespace tdrl::modules
