#pragma once

/// Umbrella header of tdrl::losses: LossModule and target updaters, value estimators
/// (functional and keyed) and the algorithm losses.

#include <tdrl/losses/functional/value.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/value_estimators.h>
