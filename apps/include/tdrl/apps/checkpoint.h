#pragma once

/// The one on-disk format of a run's state: a TensorDict written with TensorDict::save (the
/// memmap folder layout of docs/memmap.md, readable by Python tensordict) into
/// `<checkpoint folder>/state`, beside the replay buffer's own dump in `replay/`. The Trainer
/// writes and resumes from it; tdrl-eval reads its "actor" and "env" entries only.
///
/// Entries of the state: "actor" (the evaluation actor's parameters and buffers), "loss" (every
/// network of the loss, targets included), "optim/<group>" (the optimiser's state), "exploration/
/// <name>" (exploration modules), "collector", "env/<name>" (running statistics) and "trainer"
/// (frames, updates, episodes, wall_time, rng).
///
/// Errors: a missing or unreadable folder throws std::runtime_error naming the path; a state
/// whose entries do not match the module (a missing key, another shape) throws
/// tensordict::KeyError / ShapeError naming the entry, and the module is left unchanged.

#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <tensordict/tensor_dict.h>

namespace tdrl::apps {

/// `module`'s parameters and buffers as a TensorDict (batch size []) nested by the module
/// path ("mlp.0.weight" -> ("mlp", "0", "weight")); the tensors are detached copies.
tensordict::TensorDict module_state(const torch::nn::Module& module);

/// Copies `state` (as module_state writes it) into `module`'s parameters and buffers. Every
/// entry is checked before anything is copied; `what` names the module in messages.
void load_module_state(torch::nn::Module& module, const tensordict::TensorDict& state,
                       const std::string& what);

/// The optimiser's state (LibTorch's own serialisation of it) as a uint8 entry "archive".
tensordict::TensorDict optimizer_state(torch::optim::Optimizer& optimizer);
/// Restores what optimizer_state wrote. Throws std::runtime_error naming `what` when the archive
/// does not fit the optimiser.
void load_optimizer_state(torch::optim::Optimizer& optimizer, const tensordict::TensorDict& state,
                          const std::string& what);

/// Writes `state` into `<folder>/state`.
void save_checkpoint_state(const tensordict::TensorDict& state, const std::string& folder);
/// Reads `<folder>/state` into memory (a copy, not a mapping of the files).
tensordict::TensorDict load_checkpoint_state(const std::string& folder);

}  // namespace tdrl::apps
