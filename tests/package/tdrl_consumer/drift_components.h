#pragma once

/// The user components of the tdrl package test, written only against tdrl's installed headers:
///
/// - the env "Drift-v0": a point on a line that drifts. Observation "observation" `[*batch, 2]`
///   float32 (the position and the episode's drift per step); action "action" `[*batch, 1]` in
///   [-1, 1] (a push of up to 0.2); reward `-|position|` after the move; terminated when
///   |position| > 5; truncated after the task option `max_episode_steps` (default 50) steps.
///   Natively batched, seeded through its generator; works with the built-in ppo as well.
/// - the algorithm "drift_pg": REINFORCE with a batch-mean baseline on Monte-Carlo returns, a
///   TanhNormal actor on the action bounds and one Adam optimiser; its `algo:` section has
///   `gamma` (in [0, 1]) and `num_epochs`.
/// - the algorithm "drift_dpg": an off-policy deterministic policy gradient of the user's own
///   (DriftDPGLoss: target actor and critic, the critic held out of the actor's term), with a
///   replay buffer, soft target updates and annealed Gaussian exploration noise, one Adam per
///   network.

namespace drift {

/// Registers Drift-v0 (tdrl::envs::register_env), drift_pg and drift_dpg
/// (tdrl::apps::register_algorithm).
/// Idempotent: a later call, also from another copy of these components (an executable that
/// links them and loads the plugin holding them too), registers nothing again.
void register_drift_components();

}  // namespace drift
