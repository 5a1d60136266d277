#pragma once

/// OptimizerChoice: which LibTorch optimiser to build and the options its kinds share, declared
/// once with their ranges (fields.h) so that a config section can hold it; make_optimizer
/// (optimizers.h) builds it. Apart from the optimisers, so that a config section can hold it
/// without LibTorch's optim headers.

#include <string>
#include <vector>

#include <torch/arg.h>

#include <tensordict/fields.h>

namespace tdrl::modules {

/// The kinds make_optimizer builds: "adam", "adamw", "sgd", "rmsprop" (LibTorch's Adam, AdamW,
/// SGD, RMSprop).
const std::vector<std::string>& optimizer_names();

/// An optimiser kind and its shared options, as torch.optim names them.
/// Example: `make_optimizer(OptimizerChoice().name("adamw").lr(1e-3), net->parameters())`
struct OptimizerChoice {
  /// One of optimizer_names(). Default "adam".
  TORCH_ARG(std::string, name) = "adam";
  /// The learning rate, > 0. Default 3e-4.
  TORCH_ARG(double, lr) = 3e-4;
  /// L2 penalty (AdamW: decoupled weight decay), >= 0. Default 0.
  TORCH_ARG(double, weight_decay) = 0;
  /// The denominator's epsilon of Adam, AdamW and RMSprop (SGD has none), > 0. Default 1e-8.
  TORCH_ARG(double, eps) = 1e-8;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    using namespace tensordict::fields;
    v("name", name_, one_of(optimizer_names()), "optimiser");
    v("lr", lr_, greater_than(0), "learning rate");
    v("weight_decay", weight_decay_, at_least(0), "weight decay");
    v("eps", eps_, greater_than(0), "Adam/AdamW/RMSprop epsilon");
  }
};

}  // namespace tdrl::modules
