#include "tdrl/modules/optimizers.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <tensordict/name_table.h>

namespace tdrl::modules {

namespace {

using Optimizer = std::shared_ptr<torch::optim::Optimizer>;
using Factory = Optimizer (*)(const OptimizerChoice&, std::vector<torch::Tensor>, double lr);

// The one table that names the kinds (a config's choices) and builds them.
const tensordict::NameTable<Factory>& optimizer_table() {
  static const tensordict::NameTable<Factory> table(
      "optimiser",
      {
          {"adam",
           [](const OptimizerChoice& o, std::vector<torch::Tensor> params, double lr) -> Optimizer {
             return std::make_shared<torch::optim::Adam>(
                 params, torch::optim::AdamOptions(lr).weight_decay(o.weight_decay()).eps(o.eps()));
           }},
          {"adamw",
           [](const OptimizerChoice& o, std::vector<torch::Tensor> params, double lr) -> Optimizer {
             return std::make_shared<torch::optim::AdamW>(
                 params,
                 torch::optim::AdamWOptions(lr).weight_decay(o.weight_decay()).eps(o.eps()));
           }},
          {"sgd",
           [](const OptimizerChoice& o, std::vector<torch::Tensor> params, double lr) -> Optimizer {
             return std::make_shared<torch::optim::SGD>(
                 params, torch::optim::SGDOptions(lr).weight_decay(o.weight_decay()));
           }},
          {"rmsprop",
           [](const OptimizerChoice& o, std::vector<torch::Tensor> params, double lr) -> Optimizer {
             return std::make_shared<torch::optim::RMSprop>(
                 params,
                 torch::optim::RMSpropOptions(lr).weight_decay(o.weight_decay()).eps(o.eps()));
           }},
      });
  return table;
}

}  // namespace

const std::vector<std::string>& optimizer_names() { return optimizer_table().names(); }

Optimizer make_optimizer(const OptimizerChoice& choice, std::vector<torch::Tensor> params,
                         std::optional<double> lr) {
  return optimizer_table().at(choice.name(), "make_optimizer")(choice, std::move(params),
                                                               lr.value_or(choice.lr()));
}

}  // namespace tdrl::modules
