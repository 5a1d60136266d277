#include <tdrl/modules/convnet.h>
#include <tdrl/modules/mlp.h>

#include <functional>
#include <map>
#include <sstream>

#include <ATen/ExpandUtils.h>
#include <torch/torch.h>

#include <tensordict/errors.h>

namespace tdrl::modules {

using tensordict::ShapeError;
using tensordict::ValueError;

namespace {

const std::map<std::string, std::function<torch::nn::AnyModule()>>& activation_factories() {
  static const std::map<std::string, std::function<torch::nn::AnyModule()>> factories = {
      {"tanh", [] { return torch::nn::AnyModule(torch::nn::Tanh()); }},
      {"relu", [] { return torch::nn::AnyModule(torch::nn::ReLU()); }},
      {"elu", [] { return torch::nn::AnyModule(torch::nn::ELU()); }},
      {"leaky_relu", [] { return torch::nn::AnyModule(torch::nn::LeakyReLU()); }},
      {"gelu", [] { return torch::nn::AnyModule(torch::nn::GELU()); }},
      {"silu", [] { return torch::nn::AnyModule(torch::nn::SiLU()); }},
      {"sigmoid", [] { return torch::nn::AnyModule(torch::nn::Sigmoid()); }},
      {"softplus", [] { return torch::nn::AnyModule(torch::nn::Softplus()); }},
      {"identity", [] { return torch::nn::AnyModule(torch::nn::Identity()); }},
  };
  return factories;
}

std::string ints_repr(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

void check_positive(const std::string& where, const std::string& option, int64_t value) {
  if (value <= 0) {
    throw ValueError(where + ": " + option + " is " + std::to_string(value) +
                     "; it must be positive");
  }
}

// The value of a per-layer option for `layer`: the layer's own or the single shared one.
int64_t per_layer(const std::string& option, const std::vector<int64_t>& values, size_t layer,
                  size_t layers) {
  if (values.size() != 1 && values.size() != layers) {
    throw ValueError("ConvNet: " + option + " has " + std::to_string(values.size()) +
                     " values for " + std::to_string(layers) +
                     " layers; give one value per layer or a single value for all");
  }
  return values.size() == 1 ? values[0] : values[layer];
}

}  // namespace

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = {
      "tanh", "relu", "elu", "leaky_relu", "gelu", "silu", "sigmoid", "softplus", "identity"};
  return names;
}

torch::nn::AnyModule make_activation(const std::string& name) {
  const auto& factories = activation_factories();
  auto it = factories.find(name);
  if (it == factories.end()) {
    std::string valid;
    for (const auto& n : activation_names()) valid += (valid.empty() ? "" : ", ") + n;
    throw ValueError("make_activation: unknown activation '" + name + "'; valid: " + valid);
  }
  return it->second();
}

// ---- MLP -----------------------------------------------------------------------------------

MLPImpl::MLPImpl(MLPOptions options) : options_(std::move(options)) {
  check_positive("MLP", "in_features", options_.in_features());
  check_positive("MLP", "out_features", options_.out_features());
  for (auto cells : options_.num_cells()) check_positive("MLP", "num_cells entry", cells);
  if (options_.dropout() < 0.0 || options_.dropout() >= 1.0) {
    throw ValueError("MLP: dropout is " + std::to_string(options_.dropout()) +
                     "; it must be in [0, 1)");
  }
  make_activation(options_.activation());  // validates the name before any layer is built

  auto tail = [this](int64_t width) {
    if (options_.dropout() > 0.0) push_back(torch::nn::Dropout(options_.dropout()));
    if (options_.layer_norm())
      push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
    push_back(make_activation(options_.activation()));
  };
  int64_t in = options_.in_features();
  for (auto width : options_.num_cells()) {
    push_back(torch::nn::Linear(in, width));
    tail(width);
    in = width;
  }
  push_back(torch::nn::Linear(
      torch::nn::LinearOptions(in, options_.out_features()).bias(options_.bias_last_layer())));
  if (options_.activate_last_layer()) tail(options_.out_features());
}

void MLPImpl::pretty_print(std::ostream& stream) const {
  stream << "MLP(in_features=" << options_.in_features()
         << ", out_features=" << options_.out_features()
         << ", num_cells=" << ints_repr(options_.num_cells())
         << ", activation=" << options_.activation() << ")";
}

// ---- ConcatMLP, TanhBoundedMLP -------------------------------------------------------------

ConcatMLPImpl::ConcatMLPImpl(MLP mlp) : mlp_(register_module("mlp", std::move(mlp))) {}

torch::Tensor ConcatMLPImpl::forward(const torch::Tensor& a, const torch::Tensor& b) {
  const int64_t in = mlp_->options().in_features();
  if (a.dim() < 1 || b.dim() != a.dim() || a.sizes().slice(0, a.dim() - 1) !=
                                               b.sizes().slice(0, b.dim() - 1) ||
      a.size(-1) + b.size(-1) != in) {
    throw ShapeError("ConcatMLP: inputs of shapes " + c10::str(a.sizes()) + " and " +
                     c10::str(b.sizes()) + " do not concatenate to [*batch, " +
                     std::to_string(in) + "] (the MLP's in_features); give both the same "
                     "leading dims and last dims adding up to " + std::to_string(in));
  }
  return mlp_->forward(torch::cat({a, b}, -1));
}

TanhBoundedMLPImpl::TanhBoundedMLPImpl(MLP mlp, const torch::Tensor& low,
                                       const torch::Tensor& high)
    : mlp_(std::move(mlp)) {
  const std::vector<int64_t> out{mlp_->options().out_features()};
  for (const auto* bound : {&low, &high}) {
    if (!bound->defined() || !at::is_expandable_to(bound->sizes(), out)) {
      throw ShapeError("TanhBoundedMLP: a bound of shape " +
                       (bound->defined() ? c10::str(bound->sizes()) : std::string("undefined")) +
                       " does not broadcast to the MLP's output [" + std::to_string(out[0]) +
                       "]");
    }
    if (!torch::isfinite(*bound).all().item<bool>()) {
      throw ValueError("TanhBoundedMLP: the bounds must be finite, got " + c10::str(*bound));
    }
  }
  if ((low > high).any().item<bool>()) {
    throw ValueError("TanhBoundedMLP: some low > high (low " + c10::str(low) + ", high " +
                     c10::str(high) + ")");
  }
  register_module("mlp", mlp_);
  low_ = register_buffer("low", low.to(torch::kFloat32));
  high_ = register_buffer("high", high.to(torch::kFloat32));
}

torch::Tensor TanhBoundedMLPImpl::forward(const torch::Tensor& x) {
  return low_ + (high_ - low_) * (torch::tanh(mlp_->forward(x)) + 1) / 2;
}

// ---- ConvNet -------------------------------------------------------------------------------

ConvNetImpl::ConvNetImpl(ConvNetOptions options) : options_(std::move(options)) {
  const auto& cells = options_.num_cells();
  if (cells.empty()) throw ValueError("ConvNet: num_cells is empty; give at least one layer");
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
    if (padding < 0) {
      throw ValueError("ConvNet: padding is " + std::to_string(padding) + "; it must be >= 0");
    }
    layers_->push_back(torch::nn::Conv2d(
        torch::nn::Conv2dOptions(in, cells[i], kernel).stride(stride).padding(padding)));
    layers_->push_back(make_activation(options_.activation()));
    in = cells[i];
  }
  layers_ = register_module("layers", layers_);
}

std::vector<int64_t> ConvNetImpl::output_shape(int64_t height, int64_t width) const {
  const auto& cells = options_.num_cells();
  int64_t h = height, w = width;
  for (size_t i = 0; i < cells.size(); ++i) {
    const int64_t kernel = per_layer("kernel_sizes", options_.kernel_sizes(), i, cells.size());
    const int64_t stride = per_layer("strides", options_.strides(), i, cells.size());
    const int64_t padding = per_layer("paddings", options_.paddings(), i, cells.size());
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
  if (options_.squash_last_layer()) return {cells.back() * h * w};
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
  auto out = layers_->forward(x.reshape({-1, x.size(-3), x.size(-2), x.size(-1)}));
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
