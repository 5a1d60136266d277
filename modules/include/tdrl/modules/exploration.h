#pragma once

/// ExplorationModuleBase: the base of the exploration modules (EGreedyModule,
/// AdditiveGaussianModule, OrnsteinUhlenbeckProcessModule), for an exploration module of your
/// own too.

#include <cstdint>
#include <string>

#include <torch/types.h>

#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nested_key.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::modules {

/// A module that perturbs the action a policy wrote, by an amount an annealed scale sets (eps,
/// sigma, ...).
///
/// Active only under `SetInteractionType guard(InteractionType::kRandom)`: with any other
/// interaction type, or with no guard at all, forward leaves the TensorDict unchanged (TorchRL
/// also explores when no type is set; here exploration is always asked for explicitly). When
/// active, forward checks the module's in keys (KeyError naming the module, the key and the
/// available keys), that the action's trailing dims equal the spec's shape (ShapeError; any
/// leading dims are batch dims) and, for a module adding real-valued noise, that the action is
/// floating (TypeError); then `explore` perturbs it.
///
/// State: the scale lives in a registered float64 buffer named after it ("eps", "sigma"), so
/// `torch::save`/`torch::load` keep it; `step(frames)` anneals it linearly from its initial to
/// its final value over `annealing_num_steps` frames.
///
/// Errors: the constructor throws ValueError for a null spec, a discrete spec given to a module
/// adding real-valued noise, an initial or final scale outside its range, a final scale above
/// the initial one, annealing_num_steps < 1.
///
/// Thread safety: the modules draw from a generator, which is not synchronised; do not call one
/// module (or modules sharing a generator) from several threads at once.
class ExplorationModuleBase : public tensordict::nn::TensorDictModuleBase {
 public:
  /// Anneals the scale by `frames` frames: scale = max(end, scale - frames * (init - end) /
  /// annealing_num_steps). Throws ValueError for frames < 0.
  void step(int64_t frames = 1);
  /// The action spec the noise respects.
  const tdrl::specs::TensorSpecPtr& spec() const { return spec_; }

 protected:
  /// What the module perturbs: discrete actions (replaced) or continuous ones (real-valued
  /// noise added; the spec must be continuous and the action floating).
  enum class ActionKind { kDiscrete, kContinuous };
  /// The annealed scale: `name` names its buffer and its options "<name>_init" and
  /// "<name>_end" in messages; both lie in [0, max].
  struct AnnealedScale {
    std::string name;
    double init;
    double end;
    int64_t annealing_num_steps;
    double max;
  };

  /// Checks the spec and the scale and registers the scale's buffer. Throws ValueError as the
  /// class comment says.
  ExplorationModuleBase(std::string name, tdrl::specs::TensorSpecPtr spec,
                        tensordict::NestedKey action_key, ActionKind kind, AnnealedScale scale);

  /// Perturbs `action`, read from `action_key()` of `tensordict` and checked, and writes the
  /// result into `tensordict_out`. Called only while exploring.
  virtual void explore(const tensordict::TensorDict& tensordict,
                       const tensordict::TensorDict& tensordict_out,
                       const torch::Tensor& action) = 0;

  /// The current scale.
  double scale() const;
  const tensordict::NestedKey& action_key() const { return action_key_; }
  /// "<module>::forward", the start of forward's error messages.
  std::string forward_where() const { return name() + "::forward"; }

 private:
  void forward_impl(const tensordict::TensorDict& tensordict,
                    const tensordict::TensorDict& tensordict_out) final;

  tdrl::specs::TensorSpecPtr spec_;
  tensordict::NestedKey action_key_;
  ActionKind kind_;
  AnnealedScale schedule_;
  torch::Tensor scale_;
};

}  // namespace tdrl::modules
