#pragma once

/// Umbrella header of tdrl::losses: LossModule and target updaters, value estimators
/// (functional and keyed) and the algorithm losses.

#include <tdrl/losses/a2c.h>
#include <tdrl/losses/actor_qvalue_loss.h>
#include <tdrl/losses/cql.h>
#include <tdrl/losses/ddpg.h>
#include <tdrl/losses/dqn.h>
#include <tdrl/losses/functional/distance.h>
#include <tdrl/losses/functional/value.h>
#include <tdrl/losses/iql.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/policy_gradient.h>
#include <tdrl/losses/ppo.h>
#include <tdrl/losses/reinforce.h>
#include <tdrl/losses/sac.h>
#include <tdrl/losses/td3.h>
#include <tdrl/losses/temperature.h>
#include <tdrl/losses/value_estimators.h>
