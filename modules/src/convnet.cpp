// ConvNet: a stack of 2-D convolutions over [*batch, C, H, W] images.

#include <tdrl/modules/convnet.h>

#include <sstream>
#include <string>
#include <vector>

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <tdrl/modules/mlp.h>
#include <tensordict/errors.h>

#include "detail/model_util.h"

namespace tdrl::modules {

using detail::check_positive;
using detail::ints_repr;

namespace {

// The value of a per-layer option for `layer`: the layer's own or the single shared one.
int64_t per_layer(const std::string& option, const std::vector<int64_t>& values, size_t layer,
                  size_t layers) {
  TDRL_CHECK(!(values.size() != 1 && values.size() != layers), ValueError, "ConvNet: ", option,
             " has ", std::to_string(values.size()), " values for ", std::to_string(layers),
             " layers; give one value per layer or a single value for all");
  return values.size() == 1 ? values[0] : values[layer];
}

}  // namespace

ConvNetImpl::ConvNetImpl(ConvNetOptions options) : options_(std::move(options)) {
  const auto& cells = options_.num_cells();
  TDRL_CHECK(!cells.empty(), ValueError, "ConvNet: num_cells is empty; give at least one layer");
  check_positive("ConvNet", "in_channels", options_.in_channels());
  make_activation(options_.activation());
  int64_t in = options_.in_channels();
  for (size_t i = 0; i < cells.size(); ++i) {
    check_positive("ConvNet", "num_cells entry", cells[i]);
    const int64_t kernel = per_layer("kernel_sizes", options_.kernel_sizes(), i, cells.size());
    const int64_t stride = per_layer("strides", options_.strides(), i, cells.size());
    const int64_t padding = per_layer("paddings", options_.paddings(), i, cells.size());
    check_positive("ConvNet", "kernel size", kernel);
    check_positive("ConvNet", "stride", stride);
    TDRL_CHECK(!(padding < 0), ValueError, "ConvNet: padding is ", std::to_string(padding),
               "; it must be >= 0");
    layers_->push_back(torch::nn::Conv2d(
        torch::nn::Conv2dOptions(in, cells[i], kernel).stride(stride).padding(padding)));
    layers_->push_back(make_activation(options_.activation()));
    in = cells[i];
  }
  layers_ = register_module("layers", layers_);
}

std::vector<int64_t> ConvNetImpl::output_shape(const ConvNetOptions& options, int64_t height,
                                               int64_t width) {
  const auto& cells = options.num_cells();
  TDRL_CHECK(!cells.empty(), ValueError, "ConvNet: num_cells is empty; give at least one layer");
  int64_t h = height, w = width;
  for (size_t i = 0; i < cells.size(); ++i) {
    const int64_t kernel = per_layer("kernel_sizes", options.kernel_sizes(), i, cells.size());
    const int64_t stride = per_layer("strides", options.strides(), i, cells.size());
    const int64_t padding = per_layer("paddings", options.paddings(), i, cells.size());
    h = (h + 2 * padding - kernel) / stride + 1;
    w = (w + 2 * padding - kernel) / stride + 1;
    if (h <= 0 || w <= 0) {
      std::ostringstream os;
      os << "ConvNet: a " << height << "x" << width << " image is too small: layer " << i
         << " (kernel " << kernel << ", stride " << stride << ", padding " << padding
         << ") would output " << h << "x" << w << "; use larger images or smaller kernels";
      throw ValueError(os.str());
    }
  }
  if (options.squash_last_layer()) return {cells.back() * h * w};
  return {cells.back(), h, w};
}

torch::Tensor ConvNetImpl::forward(const torch::Tensor& x) {
  if (x.dim() < 3 || x.size(-3) != options_.in_channels()) {
    std::ostringstream os;
    os << "ConvNet::forward: input has shape " << x.sizes() << "; expected [*batch, "
       << options_.in_channels() << ", H, W]";
    throw ShapeError(os.str());
  }
  output_shape(x.size(-2), x.size(-1));  // clear error before LibTorch's
  const auto batch = x.sizes().slice(0, x.dim() - 3).vec();
  // uint8 frames (as stored in replay) are scaled here, where the convolutions run.
  torch::Tensor input = x;
  if (x.scalar_type() == torch::kUInt8) {
    // The first convolution's dtype (layers_ always starts with one), without listing every
    // parameter on each call.
    const auto dtype = layers_[0]->as<torch::nn::Conv2dImpl>()->weight.scalar_type();
    input = x.to(dtype).div_(255.0);
  }
  auto out = layers_->forward(input.reshape({-1, x.size(-3), x.size(-2), x.size(-1)}));
  std::vector<int64_t> shape = batch;
  if (options_.squash_last_layer()) {
    shape.push_back(out.size(1) * out.size(2) * out.size(3));
  } else {
    shape.insert(shape.end(), {out.size(1), out.size(2), out.size(3)});
  }
  return out.reshape(shape);
}

void ConvNetImpl::pretty_print(std::ostream& stream) const {
  stream << "ConvNet(in_channels=" << options_.in_channels()
         << ", num_cells=" << ints_repr(options_.num_cells())
         << ", kernel_sizes=" << ints_repr(options_.kernel_sizes())
         << ", strides=" << ints_repr(options_.strides())
         << ", activation=" << options_.activation() << ")";
}

}  // namespace tdrl::modules
