#pragma once

/// Umbrella header of tensordict::nn's distributions and parameter extractors.

#include <tensordict/nn/bernoulli.h>
#include <tensordict/nn/bounded_normal.h>
#include <tensordict/nn/categorical.h>
#include <tensordict/nn/delta.h>
#include <tensordict/nn/distribution.h>
#include <tensordict/nn/normal.h>
#include <tensordict/nn/normal_param_extractor.h>
#include <tensordict/nn/tanh_normal.h>
#include <tensordict/nn/truncated_normal.h>
