#pragma once
// The collector modes (collector.mode): one table that names them, for the config's choices, and
// builds the collector of each.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tdrl/apps/config.h>
#include <tdrl/apps/env_parts.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/apps/run_dir.h>
#include <tdrl/collectors/collector.h>

namespace tdrl::apps::detail {

/// collector.mode's choices: "single", "sync", "async", "distributed".
const std::vector<std::string>& collector_mode_names();

/// The mode-specific keys of `c` (num_workers, address, port, launch_workers, timeout_s) set
/// away from their defaults although `c.mode` does not read them, one sentence each naming the
/// key, the modes that read it and the fix; empty when there are none.
std::vector<std::string> collector_mode_problems(const CollectorSection& c);

/// How many envs' steps each batch of `c.mode` interleaves, one row per env per step:
/// `num_envs` for single, times num_workers for the modes that stack their workers' batches
/// (sync, distributed); std::nullopt for async, whose batches come from one worker at a time, so
/// an env's previous step is not a fixed number of rows back. Throws tensordict::ValueError for
/// a mode not in the table.
std::optional<int64_t> collector_streams(const CollectorSection& c, int64_t num_envs);

/// The collector of `c.mode` over the run's envs and the recipe's exploration policy.
///
/// The single collector runs the policy on the training `device` (the envs step on the CPU: the
/// policy's input and action cross once each per step of the batched env) and stores its batches
/// there (filled in pinned memory, moved across once per batch). Worker collectors act on the CPU
/// with their own policies, which update_policy_weights_ copies the trainer's weights into; the
/// Trainer moves their batches to the device. Distributed workers are this executable started
/// again on the run's config.yaml (which lists the plugins they must load). Throws
/// tensordict::ValueError for a mode not in the table.
std::unique_ptr<collectors::CollectorBase> make_collector(const CollectorSection& c,
                                                          const EnvParts& env, Recipe& recipe,
                                                          const RunDir& run, torch::Device device);

}  // namespace tdrl::apps::detail
