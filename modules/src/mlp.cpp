// MLP, ConcatMLP and TanhBoundedMLP, and the activations they take (make_activation).

#include <tdrl/modules/mlp.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <ATen/ExpandUtils.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>

#include <tensordict/errors.h>
#include <tensordict/name_table.h>

#include "detail/model_util.h"

namespace tdrl::modules {

using detail::check_positive;
using detail::ints_repr;

namespace {

// The activations, in the order listed: the one table that both names and builds them.
using ActivationTable = tensordict::NameTable<torch::nn::AnyModule (*)()>;
const ActivationTable& activation_table() {
  static const ActivationTable table(
      "activation", {
                        {"tanh", [] { return torch::nn::AnyModule(torch::nn::Tanh()); }},
                        {"relu", [] { return torch::nn::AnyModule(torch::nn::ReLU()); }},
                        {"elu", [] { return torch::nn::AnyModule(torch::nn::ELU()); }},
                        {"leaky_relu", [] { return torch::nn::AnyModule(torch::nn::LeakyReLU()); }},
                        {"gelu", [] { return torch::nn::AnyModule(torch::nn::GELU()); }},
                        {"silu", [] { return torch::nn::AnyModule(torch::nn::SiLU()); }},
                        {"sigmoid", [] { return torch::nn::AnyModule(torch::nn::Sigmoid()); }},
                        {"softplus", [] { return torch::nn::AnyModule(torch::nn::Softplus()); }},
                        {"identity", [] { return torch::nn::AnyModule(torch::nn::Identity()); }},
                    });
  return table;
}

}  // namespace

const std::vector<std::string>& activation_names() { return activation_table().names(); }

torch::nn::AnyModule make_activation(const std::string& name) {
  return activation_table().at(name, "make_activation")();
}

// ---- MLP -----------------------------------------------------------------------------------

MLPImpl::MLPImpl(MLPOptions options) : options_(std::move(options)) {
  check_positive("MLP", "in_features", options_.in_features());
  check_positive("MLP", "out_features", options_.out_features());
  for (auto cells : options_.num_cells()) check_positive("MLP", "num_cells entry", cells);
  TDRL_CHECK(!(options_.dropout() < 0.0 || options_.dropout() >= 1.0), ValueError,
             "MLP: dropout is ", std::to_string(options_.dropout()), "; it must be in [0, 1)");
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
  if (a.dim() < 1 || b.dim() != a.dim() ||
      a.sizes().slice(0, a.dim() - 1) != b.sizes().slice(0, b.dim() - 1) ||
      a.size(-1) + b.size(-1) != in) {
    throw ShapeError("ConcatMLP: inputs of shapes " + c10::str(a.sizes()) + " and " +
                     c10::str(b.sizes()) + " do not concatenate to [*batch, " + std::to_string(in) +
                     "] (the MLP's in_features); give both the same "
                     "leading dims and last dims adding up to " +
                     std::to_string(in));
  }
  return mlp_->forward(torch::cat({a, b}, -1));
}

TanhBoundedMLPImpl::TanhBoundedMLPImpl(MLP mlp, const torch::Tensor& low, const torch::Tensor& high)
    : mlp_(std::move(mlp)) {
  const std::vector<int64_t> out{mlp_->options().out_features()};
  for (const auto* bound : {&low, &high}) {
    TDRL_CHECK(bound->defined() && at::is_expandable_to(bound->sizes(), out), ShapeError,
               "TanhBoundedMLP: a bound of shape ",
               (bound->defined() ? c10::str(bound->sizes()) : std::string("undefined")),
               " does not broadcast to the MLP's output [", std::to_string(out[0]), "]");
    TDRL_CHECK(torch::isfinite(*bound).all().item<bool>(), ValueError,
               "TanhBoundedMLP: the bounds must be finite, got ", c10::str(*bound));
  }
  TDRL_CHECK(!((low > high).any().item<bool>()), ValueError,
             "TanhBoundedMLP: some low > high (low ", c10::str(low), ", high ", c10::str(high),
             ")");
  register_module("mlp", mlp_);
  low_ = register_buffer("low", low.to(torch::kFloat32));
  high_ = register_buffer("high", high.to(torch::kFloat32));
}

torch::Tensor TanhBoundedMLPImpl::forward(const torch::Tensor& x) {
  return low_ + (high_ - low_) * (torch::tanh(mlp_->forward(x)) + 1) / 2;
}

}  // namespace tdrl::modules
