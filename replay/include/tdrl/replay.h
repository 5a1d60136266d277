#pragma once

/// tdrl::replay: replay buffers built from storages, samplers and writers (TorchRL's
/// torchrl.data.replay_buffers). See docs/replay.md.

#include <tdrl/replay/component.h>
#include <tdrl/replay/frame_stack.h>
#include <tdrl/replay/prioritized_sampler.h>
#include <tdrl/replay/replay_buffer.h>
#include <tdrl/replay/samplers.h>
#include <tdrl/replay/segment_tree.h>
#include <tdrl/replay/slice_sampler.h>
#include <tdrl/replay/storage.h>
#include <tdrl/replay/storages.h>
#include <tdrl/replay/writers.h>
