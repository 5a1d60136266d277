#pragma once
// An optimiser's state as a TensorDict of plain tensors, in the layout of PyTorch's
// Optimizer.state_dict(), so that it is saved with TensorDict::save beside the networks.

#include <string>

#include <torch/optim/optimizer.h>

#include <tensordict/tensor_dict.h>

namespace tdrl::modules {

/// `optimizer`'s hyperparameters and per-parameter state as tensors (batch size []):
///
/// - `param_groups/<g>/params`: int64 [n], the flat indices of group g's parameters (numbered
///   across groups in order, as PyTorch numbers them), and one 0-dim entry per option: float64
///   numbers (`lr`, `eps`, `weight_decay`, ...), bool flags (`amsgrad`, `nesterov`,
///   `centered`), `betas` as float64 [2].
/// - `state/<i>/<name>`: parameter i's state: `step` (int64, 0-dim) and the optimiser's tensors
///   (Adam/AdamW: `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq` with amsgrad; SGD:
///   `momentum_buffer`; RMSprop: `square_avg`, `momentum_buffer`, `grad_avg`; Adagrad: `sum`),
///   copies on the parameter's device. A parameter that has not stepped has no entry; an
///   optimiser that has not stepped has an empty `state`.
///
/// Kinds: LibTorch's Adam, AdamW, SGD, RMSprop and Adagrad, and what derives from them with
/// their options (CapturableAdam included: its device step counts are read, one host
/// synchronisation). Throws tensordict::TypeError naming the kind for another optimiser (LBFGS,
/// a user's own), so that a trainer can call it once on a fresh optimiser to refuse such one
/// before a run.
tensordict::TensorDict optimizer_state(const torch::optim::Optimizer& optimizer);

/// Restores what optimizer_state wrote: the options of every group and the state of every
/// parameter (moved to the parameter's device; a parameter without an entry starts afresh).
/// Everything is checked before anything is changed, so a failure leaves the optimiser as it
/// was: tensordict::KeyError for a missing or unknown entry (another optimiser kind, another
/// number of groups or parameters; an `archive` entry, as tdrl before 0.2 wrote, is named as
/// such), ShapeError for a state tensor whose shape is not its parameter's, TypeError for one of
/// another dtype or an optimiser of another kind. Messages start with `what` (e.g. "the
/// checkpoint's optimiser 'critic'").
void load_optimizer_state(torch::optim::Optimizer& optimizer, const tensordict::TensorDict& state,
                          const std::string& what = "optimizer state");

}  // namespace tdrl::modules
