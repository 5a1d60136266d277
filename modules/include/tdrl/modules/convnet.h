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

#include <tdrl/modules/convnet_options.h>

namespace tdrl::modules {

/// Convolutions over `[*batch, C, H, W]` (any number of leading batch dims, including none
/// beyond one image; uint8 images are scaled into [0, 1] first, as a replay buffer stores
/// frames): each layer is Conv2d → activation; the output is `[*batch, C', H', W']`,
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
  std::vector<int64_t> output_shape(int64_t height, int64_t width) const {
    return output_shape(options_, height, width);
  }

  /// The same for the ConvNet `options` would build, without building it (no parameters are
  /// made, so the init RNG is not drawn from). Throws ValueError when the image is too small for
  /// the kernels, or a per-layer list's length fits neither one value nor num_cells.
  static std::vector<int64_t> output_shape(const ConvNetOptions& options, int64_t height,
                                           int64_t width);

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
