#pragma once

/// EGreedyModule: epsilon-greedy exploration (TorchRL's `EGreedyModule`).

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

/// Options of EGreedyModule (TorchRL's argument names and defaults).
/// Example: `EGreedyModuleOptions().eps_init(1.0).eps_end(0.05).annealing_num_steps(10000)`
struct EGreedyModuleOptions {
  /// The probability of a random action before any `step()`, in [0, 1]. Default 1.0.
  TORCH_ARG(double, eps_init) = 1.0;
  /// The probability reached after `annealing_num_steps` frames, in [0, eps_init]. Default 0.1.
  TORCH_ARG(double, eps_end) = 0.1;
  /// The number of frames over which eps decreases linearly from eps_init to eps_end; >= 1.
  /// Default 1000.
  TORCH_ARG(int64_t, annealing_num_steps) = 1000;
  /// The key of the action, read and overwritten. Default "action".
  TORCH_ARG(tensordict::NestedKey, action_key){"action"};

 public:
  /// The key of a bool mask `[*batch, n]` of allowed actions (true = allowed); random actions
  /// are drawn among allowed ones only. Only for Categorical and OneHot specs. Default: none.
  /// (Written by hand, not TORCH_ARG: a string literal converts to a NestedKey, but not on to
  /// an optional one.)
  EGreedyModuleOptions& action_mask_key(tensordict::NestedKey v) {
    action_mask_key_ = std::move(v);
    return *this;
  }
  const std::optional<tensordict::NestedKey>& action_mask_key() const { return action_mask_key_; }

 private:
  std::optional<tensordict::NestedKey> action_mask_key_;

 public:
  /// The generator of every draw (e.g. `at::make_generator<at::CPUGeneratorImpl>(seed)`), on
  /// the actions' device. Default: LibTorch's default generator.
  TORCH_ARG(std::optional<torch::Generator>, generator);

 public:
  /// The schedule: eps_init, eps_end, annealing_num_steps (the keys and the generator are the
  /// caller's wiring, not options a config sets).
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    v("eps_init", eps_init_, tf::in_range(0, 1), "initial epsilon of epsilon-greedy");
    v("eps_end", eps_end_, tf::in_range(0, 1), "final epsilon (at most eps_init)");
    v("annealing_num_steps", annealing_num_steps_, tf::at_least(1),
      "frames over which epsilon decays linearly from eps_init to eps_end");
  }
};

/// Epsilon-greedy exploration: with probability `eps()`, independently for each batch element,
/// replaces the action by one drawn uniformly from the action spec.
///
/// Active only under an explicit kRandom interaction type, as ExplorationModuleBase says
/// (with the checks forward makes and the thread safety).
///
/// Keys: reads and overwrites `action_key` (`[*batch, *spec->shape()[k:]]`: the action's
/// trailing dims must equal the spec's shape; any leading dims are extra batch dims), and reads
/// `action_mask_key` when set. The action keeps its dtype and device. A batch element is an
/// index into the batch dims of the TensorDict holding the action (for a nested action key,
/// its parent), as in TorchRL; for a OneHot spec the last dim is never a batch dim.
/// With a mask (`[*action.shape(), n]` for a Categorical spec, the action's shape for a OneHot
/// spec), random actions are drawn uniformly among the allowed ones.
///
/// State: `eps()` lives in the registered buffer "eps", so `torch::save`/`torch::load` keep
/// it; `step(frames)` anneals it.
///
/// Errors: the constructor throws ValueError for a null spec, eps_init or eps_end outside
/// [0, 1], eps_end > eps_init, annealing_num_steps < 1, or an action_mask_key with a spec other
/// than Categorical and OneHot. forward (when active) throws KeyError when the action or mask
/// is missing (naming the module, the key and the available keys), ShapeError when the action's
/// trailing dims differ from the spec's shape or the mask's shape is wrong, TypeError for a
/// non-bool mask, ValueError when an element to be replaced has no allowed action. A failed
/// call leaves the TensorDict unchanged.
///
/// Example:
/// ```
/// auto spec = std::make_shared<tdrl::specs::OneHot>(4);
/// EGreedyModule explore(spec, EGreedyModuleOptions().eps_init(1.0).eps_end(0.1));
/// tensordict::nn::SetInteractionType guard(tensordict::nn::InteractionType::kRandom);
/// explore(td);     // td["action"]: [*batch, 4], random with probability eps
/// explore->step(); // anneal eps by one frame
/// ```
class EGreedyModuleImpl : public ExplorationModuleBase {
 public:
  /// Throws ValueError as the class comment says.
  EGreedyModuleImpl(tdrl::specs::TensorSpecPtr spec, EGreedyModuleOptions options = {});

  /// The current probability of a random action (`step(frames)` anneals it).
  double eps() const { return scale(); }

  const EGreedyModuleOptions& options() const { return options_; }

 protected:
  void explore(const tensordict::TensorDict& tensordict,
               const tensordict::TensorDict& tensordict_out, const torch::Tensor& action) override;
  /// `EGreedyModule(eps=1.0, eps_init=1.0, eps_end=0.1, annealing_num_steps=1000,
  /// action_key='action', action_mask_key=None, spec=OneHot(shape=[4]))`.
  void print_to(std::ostream& stream) const override;

 private:
  // The random actions `[*action.shape()]` (in the action's dtype and device) for `tensordict`.
  torch::Tensor random_actions(const tensordict::TensorDict& tensordict,
                               const torch::Tensor& action, const torch::Tensor& replace) const;

  EGreedyModuleOptions options_;
};

/// Holder of EGreedyModuleImpl: `explore(td)` calls forward.
TORCH_MODULE(EGreedyModule);

}  // namespace tdrl::modules
