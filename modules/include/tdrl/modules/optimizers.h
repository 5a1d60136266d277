#pragma once

/// make_optimizer: the LibTorch optimiser an OptimizerChoice names.

#include <memory>
#include <optional>
#include <vector>

#include <torch/optim/optimizer.h>

#include "tdrl/modules/optimizer_choice.h"

namespace tdrl::modules {

/// `choice`'s optimiser over `params`, at learning rate `lr` when given (e.g. a separate actor
/// rate), else `choice.lr()`. Throws tensordict::ValueError for a name not in optimizer_names()
/// (naming the known ones, closest first) and LibTorch's own error for an invalid option.
std::shared_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerChoice& choice,
                                                        std::vector<torch::Tensor> params,
                                                        std::optional<double> lr = std::nullopt);

}  // namespace tdrl::modules
