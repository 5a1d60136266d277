#pragma once

/// The one on-disk format of a run's state: a typed record (a tensorclass) written with
/// TensorDict::save (the memmap folder layout of docs/memmap.md, readable by Python tensordict)
/// into `<checkpoint folder>/state`, beside the replay buffer's own dump in `replay/`. The
/// Trainer writes RunState into each checkpoint and BestState into `checkpoints/best`;
/// tdrl-eval reads the "actor" and "env" entries both have.
///
/// Errors: a missing or unreadable folder throws std::runtime_error naming the path; a state
/// without a declared entry throws tensordict::KeyError naming the class, the entry and the
/// declared ones; a state whose entries do not match the module (a missing key, another shape)
/// throws tensordict::KeyError / ShapeError naming the entry, and the module is left unchanged.

#include <string>

#include <torch/nn/module.h>

#include <tensordict/tensor_dict.h>
#include <tensordict/tensorclass.h>

namespace tdrl::apps {

/// The Trainer's counters in a resumable checkpoint (its entry "trainer").
class RunCounters : public tensordict::TensorClass<RunCounters> {
 public:
  TENSORDICT_FIELD(torch::Tensor, frames);     // int64 []: env frames collected
  TENSORDICT_FIELD(torch::Tensor, updates);    // int64 []: optimiser updates
  TENSORDICT_FIELD(torch::Tensor, episodes);   // int64 []: episodes finished
  TENSORDICT_FIELD(torch::Tensor, wall_time);  // float64 []: seconds over every session
  TENSORDICT_FIELD(torch::Tensor, rng);        // uint8 [n]: the CPU generator's state
  // float64 [n, 4]: the episodes in flight (id, env return, transformed return, length), which
  // a resumed collector continues.
  TENSORDICT_FIELD(torch::Tensor, episodes_in_flight);
  TENSORDICT_FIELD(torch::Tensor, recent_returns);  // float64 [m]: what the progress averages
};

/// What a checkpoint's `state/` holds: everything a resumed run continues from.
class RunState : public tensordict::TensorClass<RunState> {
 public:
  TENSORDICT_FIELD(tensordict::TensorDict, actor);        // module_state of the eval actor
  TENSORDICT_FIELD(tensordict::TensorDict, loss);         // every network, targets included
  TENSORDICT_FIELD(tensordict::TensorDict, optim);        // <group>: modules::optimizer_state
  TENSORDICT_FIELD(tensordict::TensorDict, exploration);  // <name>: module_state
  TENSORDICT_FIELD(tensordict::TensorDict, collector);    // the collector's state_dict
  TENSORDICT_FIELD(tensordict::TensorDict, env);          // <name>: running statistics (VecNorm)
  TENSORDICT_FIELD(RunCounters, trainer);
};

/// The counters of `checkpoints/best`.
class BestCounters : public tensordict::TensorClass<BestCounters> {
 public:
  TENSORDICT_FIELD(torch::Tensor, frames);       // int64 []: when it was evaluated
  TENSORDICT_FIELD(torch::Tensor, eval_return);  // float64 []: its mean evaluation return
};

/// What `checkpoints/best/state` holds: the best-evaluated actor and the env statistics it
/// acted with.
class BestState : public tensordict::TensorClass<BestState> {
 public:
  TENSORDICT_FIELD(tensordict::TensorDict, actor);
  TENSORDICT_FIELD(tensordict::TensorDict, env);
  TENSORDICT_FIELD(BestCounters, trainer);
};

/// `module`'s parameters and buffers as a TensorDict (batch size []) nested by the module
/// path ("mlp.0.weight" -> ("mlp", "0", "weight")); the tensors are detached copies.
tensordict::TensorDict module_state(const torch::nn::Module& module);

/// Copies `state` (as module_state writes it) into `module`'s parameters and buffers. Every
/// entry is checked before anything is copied; `what` names the module in messages.
void load_module_state(torch::nn::Module& module, const tensordict::TensorDict& state,
                       const std::string& what);

/// Writes `state` into `<folder>/state`.
void save_checkpoint_state(const tensordict::TensorDict& state, const std::string& folder);
/// Reads `<folder>/state` into memory (a copy, not a mapping of the files), whichever record
/// it holds.
tensordict::TensorDict load_checkpoint_state(const std::string& folder);
/// Reads `<folder>/state` as a RunState. A state whose optimiser entries are LibTorch archives
/// (tdrl before 0.2) is refused saying so; other missing entries as from_tensordict refuses
/// them.
RunState load_run_state(const std::string& folder);

}  // namespace tdrl::apps
