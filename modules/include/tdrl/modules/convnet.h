#pragma once

/// ConvNet: a stack of 2-d convolutions with activations, flattened at the end (TorchRL's
/// ConvNet with its SquashDims aggregator).

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

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
};

/// Convolutions over `[*batch, C, H, W]` (any number of leading batch dims, including none
/// beyond one image): each layer is Conv2d → activation; the output is `[*batch, C', H', W']`,
/// flattened to `[*batch, C'*H'*W']` with squash_last_layer.
///
/// Errors: the constructor throws tensordict::ValueError for an empty num_cells, a per-layer
/// list whose length is neither 1 nor the number of layers, a non-positive size or an unknown
/// activation; forward throws tensordict::ShapeError when the input has fewer than 3 dims or
/// the wrong channel count, and ValueError when the image is too small for the kernels.
/// Example: `ConvNet net(ConvNetOptions(3)); auto features = net(pixels);  // [B, F]`
class ConvNetImpl : public torch::nn::Module {
 public:
  explicit ConvNetImpl(ConvNetOptions options);

  torch::Tensor forward(const torch::Tensor& x);

  /// The output size for `[C, height, width]` inputs: `{C', H', W'}`, or `{C'*H'*W'}` with
  /// squash_last_layer. Throws ValueError when the image is too small for the kernels.
  std::vector<int64_t> output_shape(int64_t height, int64_t width) const;

  void pretty_print(std::ostream& stream) const override;

  const ConvNetOptions& options() const { return options_; }
  /// The convolutions and activations, in order.
  const torch::nn::Sequential& layers() const { return layers_; }

 private:
  ConvNetOptions options_;
  torch::nn::Sequential layers_;
};

/// Holder of ConvNetImpl.
TORCH_MODULE(ConvNet);

}  // namespace tdrl::modules
