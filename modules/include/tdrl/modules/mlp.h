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

namespace tdrl::modules {

/// The activation names accepted by `make_activation` (and the `activation` options):
/// "tanh", "relu", "elu", "leaky_relu", "gelu", "silu", "sigmoid", "softplus", "identity".
const std::vector<std::string>& activation_names();

/// A fresh activation module for `name` (see activation_names()). Throws
/// tensordict::ValueError for an unknown name, listing the valid ones.
torch::nn::AnyModule make_activation(const std::string& name);

/// Options of MLP. `in_features` and `out_features` are required.
/// Example: `MLPOptions(17, 6).num_cells({256, 256}).activation("relu")`
struct MLPOptions {
  MLPOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  /// Input size (last dim of the input). LibTorch has no lazy layers, so it is required.
  TORCH_ARG(int64_t, in_features);
  /// Output size (last dim of the output).
  TORCH_ARG(int64_t, out_features);
  /// Hidden layer widths, one per hidden layer; empty gives a single Linear. Default
  /// {32, 32, 32} (TorchRL's depth 3 of 32 cells).
  TORCH_ARG(std::vector<int64_t>, num_cells) = std::vector<int64_t>{32, 32, 32};
  /// Activation after each hidden layer (see activation_names()). Default "tanh".
  TORCH_ARG(std::string, activation) = "tanh";
  /// Also apply dropout/norm/activation after the output layer. Default false.
  TORCH_ARG(bool, activate_last_layer) = false;
  /// A LayerNorm after each activated Linear (before the activation). Default false.
  TORCH_ARG(bool, layer_norm) = false;
  /// Dropout probability after each activated Linear (before the norm); 0 = none.
  TORCH_ARG(double, dropout) = 0.0;
  /// Whether the output layer has a bias. Default true.
  TORCH_ARG(bool, bias_last_layer) = true;
};

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

}  // namespace tdrl::modules
