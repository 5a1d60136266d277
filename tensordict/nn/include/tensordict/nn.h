#pragma once

/// Umbrella header of tensordict::nn: distributions, parameter extractors, TensorDictModule,
/// TensorDictSequential, interaction types, probabilistic modules, and functional parameters
/// and ensembles (from_module, to_module).

#include <tensordict/nn/distribution_class.h>
#include <tensordict/nn/distributions.h>
#include <tensordict/nn/functional.h>
#include <tensordict/nn/interaction_type.h>
#include <tensordict/nn/probabilistic.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>
