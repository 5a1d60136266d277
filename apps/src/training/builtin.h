#pragma once

// The built-in components, registered by register_builtin_components().

namespace tdrl::apps::detail {

/// vec_norm, observation_norm, reward_scaling, reward_clipping, double_to_float, step_counter.
void register_builtin_transforms();
/// ppo, a2c, dqn, ddpg, td3, sac.
void register_builtin_algorithms();

}  // namespace tdrl::apps::detail
