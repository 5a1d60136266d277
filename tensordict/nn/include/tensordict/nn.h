#pragma once

/// Umbrella header of tensordict::nn: distributions, parameter extractors, TensorDictModule
/// and TensorDictSequential.

#include <tensordict/nn/distributions.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>
