// What every generated docs snippet source includes first: the public headers of every
// package, as a reader of the docs has them. No using-declarations: a snippet names what it
// uses the way the docs show it.
#pragma once

#include <torch/torch.h>

#include <tdrl/apps/main.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/trainer.h>
#include <tdrl/collectors/collector.h>
#include <tdrl/collectors/distributed_collector.h>
#include <tdrl/collectors/multi_collector.h>
#include <tdrl/envs/batched_envs.h>
#include <tdrl/envs/classic_control.h>
#include <tdrl/envs/mujoco_tasks.h>
#include <tdrl/envs/registry.h>
#include <tdrl/envs/specs.h>
#include <tdrl/envs/transforms/all.h>
#include <tdrl/losses.h>
#include <tdrl/modules.h>
#include <tdrl/replay.h>
#include <tensordict/nn.h>
#include <tensordict/tensordict.h>
