#pragma once

/// MLP: a multi-layer perceptron built as a torch::nn::Sequential (TorchRL's MLP), and the
/// activation names the models of tdrl::modules accept.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tdrl/modules/mlp_options.h>

namespace tdrl::modules {

/// A fresh activation module for `name` (see activation_names()). Throws
/// tensordict::ValueError for an unknown name, listing the valid ones.
torch::nn::AnyModule make_activation(const std::string& name);

/// A multi-layer perceptron `[*batch, in_features]` → `[*batch, out_features]`: for each
/// hidden width, Linear → [Dropout] → [LayerNorm] → activation; then the output Linear (and,
/// with activate_last_layer, the same tail). It is a torch::nn::Sequential, so its layers
/// are the submodules "0", "1", ... (parameters named "0.weight", "0.bias", ... as in
/// TorchRL) and `tensordict::nn::batched_mlp_forward` can run a stacked-parameter ensemble
/// of it.
///
/// Errors: the constructor throws tensordict::ValueError for non-positive sizes, an unknown
/// activation or a dropout outside [0, 1); forward throws LibTorch's error for an input
/// whose last dim is not in_features.
/// Example: `MLP mlp(MLPOptions(4, 2).num_cells({64, 64})); auto y = mlp(x);`
class MLPImpl : public torch::nn::SequentialImpl {
 public:
  explicit MLPImpl(MLPOptions options);

  /// `x` `[*batch, in_features]` → `[*batch, out_features]`.
  torch::Tensor forward(const torch::Tensor& x) { return SequentialImpl::forward(x); }

  /// This MLP as a `torch::nn::Sequential` holder sharing it (not a copy), e.g. for
  /// `tensordict::nn::batched_mlp_forward(mlp->sequential(), stacked_params, input)`. The MLP
  /// must be held by a shared_ptr (it is, inside an MLP holder).
  torch::nn::Sequential sequential() {
    return torch::nn::Sequential(std::dynamic_pointer_cast<SequentialImpl>(shared_from_this()));
  }

  /// Prints `MLP(in_features=4, out_features=2, num_cells=[64, 64], activation=tanh)`
  /// followed by the layers.
  void pretty_print(std::ostream& stream) const override;

  const MLPOptions& options() const { return options_; }

 private:
  MLPOptions options_;
};

/// Holder of MLPImpl.
TORCH_MODULE(MLP);

/// An MLP on the concatenation of two inputs along the last dim: the Q(s, a) critic of DDPG,
/// TD3 and SAC, wrapped as `ValueOperator(ConcatMLP(...), ValueOperatorOptions().in_keys(
/// {"observation", "action"}))` (TorchRL's MLP concatenates its inputs the same way). The MLP is
/// registered as "mlp", so parameters read "mlp.0.weight", ...
/// Throws ShapeError when the inputs' leading dims differ or their last dims do not add up to
/// the MLP's in_features.
/// Example: `ConcatMLP q(MLP(MLPOptions(obs_dim + action_dim, 1).num_cells({256, 256})));`
class ConcatMLPImpl : public torch::nn::Module {
 public:
  explicit ConcatMLPImpl(MLP mlp);

  /// `a` `[*batch, n]`, `b` `[*batch, m]` → `mlp(cat(a, b))` `[*batch, out_features]`.
  torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b);

  /// The MLP (a holder sharing it).
  MLP mlp() const { return mlp_; }

 private:
  MLP mlp_;
};

/// Holder of ConcatMLPImpl.
TORCH_MODULE(ConcatMLP);

/// An MLP squashed onto a box: `low + (high - low) * (tanh(mlp(x)) + 1) / 2`, the deterministic
/// actor of DDPG and TD3 on a Bounded action spec (TorchRL's TanhModule after an MLP). The MLP
/// is registered as "mlp", the bounds as float32 buffers "low" and "high".
/// Throws ShapeError when low or high does not broadcast to `[out_features]`, ValueError when
/// a bound is not finite or some low > high.
/// Example: `TanhBoundedMLP actor(MLP(MLPOptions(obs_dim, 1)), torch::tensor({-2.0}),
///                                torch::tensor({2.0}));`
class TanhBoundedMLPImpl : public torch::nn::Module {
 public:
  TanhBoundedMLPImpl(MLP mlp, const torch::Tensor& low, const torch::Tensor& high);

  /// `x` `[*batch, in_features]` → `[*batch, out_features]`, inside [low, high].
  torch::Tensor forward(const torch::Tensor& x);

  /// The MLP (a holder sharing it).
  MLP mlp() const { return mlp_; }
  const torch::Tensor& low() const { return low_; }
  const torch::Tensor& high() const { return high_; }

 private:
  MLP mlp_;
  torch::Tensor low_;
  torch::Tensor high_;
};

/// Holder of TanhBoundedMLPImpl.
TORCH_MODULE(TanhBoundedMLP);

}  // namespace tdrl::modules
