#pragma once

/// Umbrella header of tdrl::envs: EnvBase, the classic-control and MuJoCo tasks, serial and
/// parallel batched envs, every transform and the env registry. The specs and key names the
/// envs use are in <tdrl/specs.h>.

#include <tdrl/envs/batched_envs.h>
#include <tdrl/envs/classic_control.h>
#include <tdrl/envs/env_base.h>
#include <tdrl/envs/mujoco_env.h>
#include <tdrl/envs/mujoco_tasks.h>
#include <tdrl/envs/registry.h>
#include <tdrl/envs/transforms/all.h>
#include <tdrl/envs/worker_pool.h>
#include <tdrl/specs.h>
