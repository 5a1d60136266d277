#pragma once

/// ConvNetOptions, apart from the module so that configs can hold them without LibTorch's
/// nn headers.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/arg.h>

#include <tdrl/modules/mlp_options.h>
#include <tensordict/fields.h>

namespace tdrl::modules {

/// Options of ConvNet. `in_channels` is required (LibTorch has no lazy convolutions).
/// kernel_sizes, strides and paddings hold one value per layer, or a single value used for
/// every layer.
/// Example: `ConvNetOptions(3).num_cells({32, 64, 64}).kernel_sizes({8, 4, 3}).strides({4, 2, 1})`
struct ConvNetOptions {
  explicit ConvNetOptions(int64_t in_channels) : in_channels_(in_channels) {}
  /// Input channels C of `[*batch, C, H, W]`.
  TORCH_ARG(int64_t, in_channels);
  /// Output channels of each convolution. Default {32, 32, 32}.
  TORCH_ARG(std::vector<int64_t>, num_cells) = std::vector<int64_t>{32, 32, 32};
  /// Square kernel size per layer (or one for all). Default {3}.
  TORCH_ARG(std::vector<int64_t>, kernel_sizes) = std::vector<int64_t>{3};
  /// Stride per layer (or one for all). Default {1}.
  TORCH_ARG(std::vector<int64_t>, strides) = std::vector<int64_t>{1};
  /// Zero padding per layer (or one for all). Default {0}.
  TORCH_ARG(std::vector<int64_t>, paddings) = std::vector<int64_t>{0};
  /// Activation after every convolution (see activation_names()). Default "elu" (TorchRL).
  TORCH_ARG(std::string, activation) = "elu";
  /// Flatten the last three dims of the output to one (`[*batch, C*H*W]`). Default true.
  TORCH_ARG(bool, squash_last_layer) = true;

 public:
  /// num_cells, kernel_sizes, strides, paddings and activation (in_channels comes from the
  /// images, squash_last_layer from the caller).
  void fields(tensordict::fields::FieldVisitor& v) {
    v("num_cells", num_cells_, tensordict::fields::non_empty(),
      "output channels of each convolution");
    v("kernel_sizes", kernel_sizes_, tensordict::fields::non_empty(),
      "square kernel size per layer (or one for all)");
    v("strides", strides_, tensordict::fields::non_empty(), "stride per layer (or one for all)");
    v("paddings", paddings_, tensordict::fields::non_empty(),
      "zero padding per layer (or one for all)");
    v("activation", activation_, tensordict::fields::one_of(activation_names()),
      "activation after every convolution");
  }
};

}  // namespace tdrl::modules
