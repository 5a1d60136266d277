#pragma once

/// The classic-control tasks: CartPole-v1, Pendulum-v1, MountainCar-v0,
/// MountainCarContinuous-v0 and Acrobot-v1 (docs/envs.md lists their observations, actions,
/// rewards, termination and truncation).

#include <tdrl/envs/acrobot.h>
#include <tdrl/envs/cartpole.h>
#include <tdrl/envs/classic_control_env.h>
#include <tdrl/envs/mountain_car.h>
#include <tdrl/envs/pendulum.h>
