// What every generated docs snippet source includes first: every package's umbrella header, as
// a reader of the docs has them (so the build also checks that each umbrella compiles). No
// using-declarations: a snippet names what it uses the way the docs show it.
#pragma once

#include <torch/torch.h>

#include <tdrl/apps.h>
#include <tdrl/collectors.h>
#include <tdrl/envs.h>
#include <tdrl/losses.h>
#include <tdrl/modules.h>
#include <tdrl/replay.h>
#include <tdrl/specs.h>
#include <tensordict/nn.h>
#include <tensordict/tensordict.h>
