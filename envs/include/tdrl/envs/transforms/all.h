#pragma once

/// Every transform: TransformedEnv, Compose and the transforms of transforms/*.h.

#include <tdrl/envs/transforms.h>
#include <tdrl/envs/transforms/episode.h>
#include <tdrl/envs/transforms/image.h>
#include <tdrl/envs/transforms/keys.h>
#include <tdrl/envs/transforms/normalization.h>
#include <tdrl/envs/transforms/primer.h>
#include <tdrl/envs/transforms/reward.h>
#include <tdrl/envs/transforms/values.h>
