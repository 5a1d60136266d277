#pragma once

/// Umbrella header of tensordict::nn: distributions, parameter extractors, TensorDictModule,
/// TensorDictSequential, interaction types, probabilistic modules, functional parameters
/// and ensembles (from_module, to_module), and ModulePtr (a module as a holder or a shared_ptr).

#include <tensordict/nn/distribution_class.h>
#include <tensordict/nn/distributions.h>
#include <tensordict/nn/functional.h>
#include <tensordict/nn/interaction_type.h>
#include <tensordict/nn/module_ptr.h>
#include <tensordict/nn/probabilistic.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>
