#pragma once

/// MLPOptions, the options of tdrl::modules::MLP (mlp.h), and the activation names: apart from
/// the network, so that a config section can hold them without LibTorch's nn headers.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/arg.h>

#include <tensordict/fields.h>

namespace tdrl::modules {

/// The activation names accepted by `make_activation` (and the `activation` options):
/// "tanh", "relu", "elu", "leaky_relu", "gelu", "silu", "sigmoid", "softplus", "identity".
const std::vector<std::string>& activation_names();

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

 public:
  /// The hidden layers' settings a config chooses: activation and layer_norm. The sizes and the
  /// output layer's settings are the caller's, per network; dropout is not declared, because
  /// the config-driven trainers never switch networks between train and eval mode, so a
  /// dropout would also be active in evaluation and in the collectors' policies.
  void fields(tensordict::fields::FieldVisitor& v) {
    v("activation", activation_, tensordict::fields::one_of(activation_names()),
      "activation of the hidden layers");
    v("layer_norm", layer_norm_, "LayerNorm after each hidden Linear");
  }
};

}  // namespace tdrl::modules
