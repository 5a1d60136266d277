#pragma once

/// Umbrella header of tdrl::modules: models (MLP, ConvNet), actors and critics, Q-value
/// policies, exploration modules, and optimisers (CapturableAdam, make_optimizer, the
/// optimiser state as tensors).

#include <tdrl/modules/actors.h>
#include <tdrl/modules/additive_gaussian.h>
#include <tdrl/modules/capturable_adam.h>
#include <tdrl/modules/convnet.h>
#include <tdrl/modules/egreedy.h>
#include <tdrl/modules/exploration.h>
#include <tdrl/modules/mlp.h>
#include <tdrl/modules/optimizer_state.h>
#include <tdrl/modules/optimizers.h>
#include <tdrl/modules/ornstein_uhlenbeck.h>
#include <tdrl/modules/q_value.h>
#include <tdrl/modules/recurrent.h>
