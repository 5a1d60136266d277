#pragma once

/// Functional parameters and ensembles: a module's parameters as a nested TensorDict
/// (`from_module`), swapped into a module for the length of a scope (`to_module`), stacked
/// across N modules (`make_ensemble_params`, `stack_params`) and run as an ensemble, either
/// member by member (`ensemble_forward_loop`) or, for MLPs, with one batched matmul per layer
/// (`batched_mlp_forward`). Python tensordict's `TensorDict.from_module` / `to_module` and its
/// stacked-parameter ensembles.

#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tensordict/errors.h>
#include <tensordict/tensor_dict.h>

namespace tensordict::nn {

// ---- from_module --------------------------------------------------------------------------

/// Options of from_module.
/// Example: `from_module(net, FromModuleOptions().include_buffers(false))`
struct FromModuleOptions {
  /// Also take the module's buffers (BatchNorm's running_mean, running_var,
  /// num_batches_tracked). Default true.
  TORCH_ARG(bool, include_buffers) = true;
};

/// The parameters (and buffers) of `module` as a nested TensorDict of batch size `[]` that
/// mirrors the module tree: each module's own parameters, then its buffers, at their
/// registered names, then each submodule as a nested TensorDict under its registered name.
/// Submodules holding nothing (ReLU) are left out, and so are undefined parameters (a Linear
/// without bias has no "bias"). A Sequential of Linear, ReLU, Linear gives
/// `{"0": {"weight", "bias"}, "2": {"weight", "bias"}}`.
///
/// Aliasing: every leaf IS the module's tensor (the same TensorImpl, hence the same storage
/// and requires_grad): an in-place write through the TensorDict (`set_`, `zero_`, `copy_`,
/// under `torch::NoGradGuard` for parameters that require grad) changes the module, and while
/// a `to_module` swap is active the leaves show the swapped-in values. `set` on the result
/// only rebinds the TensorDict's entry and leaves the module alone (use to_module for that).
/// `from_module(m).clone()` copies the storage, but the clones are not leaves: a clone of a
/// parameter requiring grad requires grad and is connected to the parameter by autograd;
/// `.detach()` (after or before the clone) gives independent tensors, and
/// `clone().detach().requires_grad_()` independent trainable leaves.
///
/// Never throws for a well-formed module. Thread safety: reads the module's registries only;
/// must not race with a registration of parameters or submodules.
///
/// Example:
/// ```
/// torch::nn::Sequential net(torch::nn::Linear(3, 4), torch::nn::ReLU(), torch::nn::Linear(4, 1));
/// TensorDict params = from_module(*net);  // params.get({"0", "weight"}) is net[0]'s weight
/// ```
TensorDict from_module(const torch::nn::Module& module, const FromModuleOptions& options = {});

/// from_module for a module holder (`torch::nn::Linear`, any `TORCH_MODULE`).
template <class M>
TensorDict from_module(const torch::nn::ModuleHolder<M>& module,
                       const FromModuleOptions& options = {}) {
  return from_module(static_cast<const torch::nn::Module&>(*module), options);
}

/// from_module for a module held by `shared_ptr`.
template <class M, class = std::enable_if_t<std::is_base_of_v<torch::nn::Module, M>>>
TensorDict from_module(const std::shared_ptr<M>& module, const FromModuleOptions& options = {}) {
  return from_module(static_cast<const torch::nn::Module&>(*module), options);
}

// ---- to_module ----------------------------------------------------------------------------

/// Options of to_module.
/// Example: `to_module(params, net, ToModuleOptions().strict(false))`
struct ToModuleOptions {
  /// When true (default) every parameter of the module (submodules included) must be in
  /// `params`; when false, parameters missing from `params` keep their values. Buffers are
  /// always optional: those present are swapped, the others kept.
  TORCH_ARG(bool, strict) = true;
};

/// The RAII guard of a to_module swap: holds the swapped tensors and their original values,
/// and puts the originals back on destruction or on `restore()`, whichever comes first.
/// Move-only; a moved-from or default-constructed guard restores nothing.
///
/// Guards nest as scopes do: swap A, then B, then destroy B (the module holds A again), then
/// A (the module holds its own values again). Destroying them out of order leaves the module
/// with A's values; keep guards on the stack or restore them in reverse order.
///
/// The guard keeps the module's tensors alive, not the module; restoring after the module is
/// gone is harmless. Thread safety: restoring writes the module's tensors, as to_module does.
class [[nodiscard]] ParamsGuard {
 public:
  /// A guard that restores nothing.
  ParamsGuard() = default;
  ParamsGuard(const ParamsGuard&) = delete;
  ParamsGuard& operator=(const ParamsGuard&) = delete;
  /// Takes over `other`'s swaps; `other` restores nothing afterwards.
  ParamsGuard(ParamsGuard&& other) noexcept;
  /// Restores this guard's swaps, then takes over `other`'s.
  ParamsGuard& operator=(ParamsGuard&& other) noexcept;
  /// Restores the originals (see restore()).
  ~ParamsGuard();

  /// Puts the module's original tensors back (in reverse order of swapping); later calls and
  /// the destructor do nothing. After this, backward through a graph built while the swap
  /// was active raises autograd's "modified by an inplace operation" error (see to_module).
  void restore();
  /// True while the swap is in force (some tensor swapped and not yet restored).
  bool active() const { return !swaps_.empty(); }
  /// Number of tensors swapped (parameters and buffers).
  int64_t size() const { return static_cast<int64_t>(swaps_.size()); }

 private:
  friend ParamsGuard to_module(const TensorDict& params, torch::nn::Module& module,
                               const ToModuleOptions& options);

  // One swapped tensor: the module's tensor (whose TensorImpl stays the module's), its
  // original data and its original autograd version counter.
  struct Swap {
    torch::Tensor target;
    torch::Tensor original;
    c10::VariableVersion original_version;
    bool versioned;
  };

  // Swaps `value` into `target` and records how to undo it.
  void swap_in(const torch::Tensor& target, const torch::Tensor& value);

  std::vector<Swap> swaps_;
};

/// Puts the values of `params` into `module`'s parameters and buffers until the returned
/// guard is destroyed (or `restore()`d), like Python's `params.to_module(module)` used as a
/// context manager. `params` has the layout from_module gives: keys are registered names,
/// nested TensorDicts are submodules; its batch size is ignored (pass one member of a
/// stacked ensemble, `stacked.index({i})`, not the stack).
///
/// How: a LibTorch module's C++ members (`LinearImpl::weight`) are tensor handles that cannot
/// be re-pointed from outside, so each module tensor keeps its TensorImpl and has its data
/// replaced (`Tensor::set_data`) by the params tensor's: during the swap the module's tensor
/// and the params tensor share storage (no copy). Consequences, all tested:
/// - Outputs are those of a module holding `params`' values; `from_module(module)` shows them.
/// - In-place writes to the module's tensors during the swap (an optimizer step on
///   `module.parameters()`, BatchNorm's running stats in training mode) land in `params`.
/// - Autograd: the module's parameters stay the leaves. A loss on the module's output
///   backpropagates into the module's own parameters (`module.parameters()[k].grad()`,
///   evaluated at `params`' values) and never into `params`' tensors (their `grad()` stays
///   undefined, and a graph that produced them is not reached). Python's to_module, which
///   re-points the attributes, sends gradients to `params` instead; for gradients with
///   respect to stacked parameters use batched_mlp_forward.
/// - Run backward while the guard is active. Each swap gives the module's tensor a fresh
///   autograd version counter and restoring invalidates it, so backward after restoring
///   through any op that saved a swapped tensor (or a view of it) raises autograd's "one of
///   the variables needed for gradient computation has been modified by an inplace
///   operation" instead of silently using the restored values. Graphs built before the swap
///   are usable again once it is restored (but raise if backpropagated during it).
///
/// Checks, all before anything is swapped (a failure leaves the module untouched):
/// KeyError when a key of `params` names no parameter, buffer or submodule (naming the key
/// path and listing the valid names, closest first), or, with `strict`, when a parameter of
/// the module is missing from `params` (naming its key path); TypeError when a tensor stands
/// where the module has a submodule or the reverse, for non-tensor data, or when a dtype or
/// layout differs (expected and got); ShapeError when a shape differs (expected and got);
/// DeviceError when a device differs.
///
/// Thread safety: mutates the module; must not race with a forward of the same module or
/// another to_module on it. Use one module instance per thread.
///
/// Example (Python tensordict's docs example):
/// ```
/// TensorDict params = from_module(*net);
/// {
///   auto guard = to_module(params.clone().detach().zero_(), *net);
///   net->forward(x);  // all zeros
/// }                   // net has its own parameters again
/// ```
ParamsGuard to_module(const TensorDict& params, torch::nn::Module& module,
                      const ToModuleOptions& options = {});

/// to_module for a module holder (`torch::nn::Linear`, any `TORCH_MODULE`).
template <class M>
ParamsGuard to_module(const TensorDict& params, const torch::nn::ModuleHolder<M>& module,
                      const ToModuleOptions& options = {}) {
  return to_module(params, static_cast<torch::nn::Module&>(*module.ptr()), options);
}

/// to_module for a module held by `shared_ptr`.
template <class M, class = std::enable_if_t<std::is_base_of_v<torch::nn::Module, M>>>
ParamsGuard to_module(const TensorDict& params, const std::shared_ptr<M>& module,
                      const ToModuleOptions& options = {}) {
  return to_module(params, static_cast<torch::nn::Module&>(*module), options);
}

// ---- Ensembles ----------------------------------------------------------------------------

/// Stacks N parameter TensorDicts of the same structure (e.g. from_module of N modules built
/// alike) into one dense TensorDict of batch size `[N, *batch]` whose leaf at `key` is
/// `[N, *shape]`. The leaves are new contiguous tensors (copies, detached from the inputs),
/// each a leaf that requires grad when any input's tensor at that key did, so the result can
/// be handed to an optimizer. Throws ValueError on an empty list; ShapeError when batch sizes
/// or a key's shapes differ; KeyError when a member lacks a key of member 0 or has one more
/// (naming the member, the key path and the member's keys); TypeError for a non-tensor leaf
/// or differing dtypes; DeviceError for differing devices.
TensorDict stack_params(const std::vector<TensorDict>& params);

/// `stack_params` of `from_module(member, options)` for every member: the `[N]` ensemble
/// parameters of N modules of one architecture (independently initialised members give an
/// ensemble of independent networks). The members are left unchanged and share nothing with
/// the result. Throws as stack_params.
///
/// Example:
/// ```
/// std::vector<torch::nn::Sequential> members;
/// for (int i = 0; i < 5; ++i) members.push_back(make_mlp());
/// TensorDict stacked = make_ensemble_params(members);  // batch [5]
/// ```
TensorDict make_ensemble_params(const std::vector<std::shared_ptr<torch::nn::Module>>& members,
                                const FromModuleOptions& options = {});

/// make_ensemble_params for module holders (`torch::nn::Sequential`, any `TORCH_MODULE`).
template <class Holder,
          class = decltype(std::shared_ptr<torch::nn::Module>(std::declval<const Holder&>().ptr()))>
TensorDict make_ensemble_params(const std::vector<Holder>& members,
                                const FromModuleOptions& options = {}) {
  std::vector<std::shared_ptr<torch::nn::Module>> ptrs;
  ptrs.reserve(members.size());
  for (const auto& m : members) ptrs.push_back(m.ptr());
  return make_ensemble_params(ptrs, options);
}

/// make_ensemble_params for modules held by `shared_ptr` to a concrete type.
template <class M, class = std::enable_if_t<std::is_base_of_v<torch::nn::Module, M> &&
                                            !std::is_same_v<M, torch::nn::Module>>>
TensorDict make_ensemble_params(const std::vector<std::shared_ptr<M>>& members,
                                const FromModuleOptions& options = {}) {
  return make_ensemble_params(
      std::vector<std::shared_ptr<torch::nn::Module>>(members.begin(), members.end()), options);
}

/// Runs an ensemble member by member on one module: for each member i of `stacked_params`
/// (batch size `[N, ...]`), swaps `stacked_params.index({i})` into `module` (to_module with
/// `options`), calls `call(i)` (which runs `module` on member i's input and returns its
/// output) and restores the module; returns the N outputs stacked along dim 0, `[N, *out]`.
/// Works for any architecture to_module accepts.
///
/// The loop runs under `torch::NoGradGuard`: outputs do not require grad (a graph built under
/// a swap could not be backpropagated after the restore, see to_module). For gradients with
/// respect to stacked parameters use batched_mlp_forward; for any other architecture, swap
/// with to_module and backpropagate inside the guard.
///
/// The module is left as it was, also when `call` or a check throws (the exception
/// propagates). Throws ShapeError when `stacked_params` has batch size `[]` or the members'
/// outputs have different shapes (naming both), ValueError when N is 0 or `call` returns an
/// undefined tensor, and whatever to_module throws (checked on member 0 before any call).
/// Thread safety: as to_module (mutates `module` while it runs).
///
/// Example:
/// ```
/// torch::Tensor out = ensemble_forward_loop(*net, stacked, [&](int64_t i) {
///   return net->forward(obs[i]);
/// });  // [N, B, out]
/// ```
torch::Tensor ensemble_forward_loop(torch::nn::Module& module, const TensorDict& stacked_params,
                                    const std::function<torch::Tensor(int64_t member)>& call,
                                    const ToModuleOptions& options = {});

/// ensemble_forward_loop for a module holder.
template <class M>
torch::Tensor ensemble_forward_loop(const torch::nn::ModuleHolder<M>& module,
                                    const TensorDict& stacked_params,
                                    const std::function<torch::Tensor(int64_t member)>& call,
                                    const ToModuleOptions& options = {}) {
  return ensemble_forward_loop(static_cast<torch::nn::Module&>(*module.ptr()), stacked_params, call,
                               options);
}

/// Options of batched_mlp_forward.
/// Example: `batched_mlp_forward(mlp, stacked, obs, BatchedMlpOptions().shared_input(true))`
struct BatchedMlpOptions {
  /// False (default): `input` is `[N, *batch, in]`, one input per member. True: `input` is
  /// `[*batch, in]`, the same input for every member. (An explicit choice, since a shared
  /// input whose first batch dim happens to equal N would otherwise be ambiguous.)
  TORCH_ARG(bool, shared_input) = false;
};

/// Runs the N members of an MLP ensemble at once: the result equals, for every member i,
/// `mlp` with parameters `stacked_params.index({i})` applied to member i's input (as
/// ensemble_forward_loop computes it), but each Linear layer is one batched matmul over the
/// stacked weights `[N, out, in]` (one GEMM over all members for a shared input), and the
/// computation is functional: `mlp`'s own parameters are neither read nor changed, and
/// gradients flow into `stacked_params`' tensors.
///
/// `mlp` may hold, in any order: `torch::nn::Linear` (per-member "weight" `[N, out, in]` and,
/// when the layer has a bias, "bias" `[N, out]`), `torch::nn::LayerNorm` over the last dim
/// (per-member "weight" and "bias" `[N, features]` when elementwise_affine), and the
/// parameter-free elementwise modules ReLU, ReLU6, LeakyReLU, ELU, SELU, CELU, GELU, SiLU,
/// Mish, Sigmoid, Tanh, Softplus, Softsign, Hardtanh, Tanhshrink, Dropout, AlphaDropout and
/// Identity, which are applied as they are (Dropout in training mode draws an independent
/// mask per member). `stacked_params` has batch size `[N]` and from_module's layout for
/// `mlp` (`{"<layer name>", "weight"}`, ...), e.g. from make_ensemble_params.
///
/// Shapes: `input` `[N, *batch, in]`, or `[*batch, in]` with
/// `BatchedMlpOptions().shared_input(true)`; result `[N, *batch, out]`.
///
/// Everything is checked before computing: ValueError naming the index, name and type of a
/// module of another kind (listing the supported ones; use ensemble_forward_loop for other
/// architectures); ShapeError when `stacked_params`' batch size is not `[N]`, a parameter's
/// shape is not `[N, *module parameter shape]` (naming the key path, expected and got), the
/// input is not `[N, *batch, in]` (or `[*batch, in]`), or a layer's input features differ
/// from the previous output's; KeyError for a missing parameter key or a key that names no
/// parameter of a supported layer (naming the key path and the valid ones); TypeError for a
/// non-tensor leaf or a dtype other than the module parameter's.
///
/// Thread safety: reads `mlp`'s structure and options only; safe to call concurrently.
torch::Tensor batched_mlp_forward(const torch::nn::Sequential& mlp,
                                  const TensorDict& stacked_params, const torch::Tensor& input,
                                  const BatchedMlpOptions& options = {});

}  // namespace tensordict::nn
