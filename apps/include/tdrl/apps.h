#pragma once

/// Umbrella header of tdrl::apps: the typed config, the registries of algorithms and
/// transforms, recipes, the Trainer, checkpoints, run folders and the entry points
/// train_main / eval_main.

#include <tdrl/apps/checkpoint.h>
#include <tdrl/apps/checkpoint_store.h>
#include <tdrl/apps/config.h>
#include <tdrl/apps/config_fields.h>
#include <tdrl/apps/env_parts.h>
#include <tdrl/apps/learning_curve.h>
#include <tdrl/apps/main.h>
#include <tdrl/apps/metrics.h>
#include <tdrl/apps/models.h>
#include <tdrl/apps/progress.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/run_dir.h>
#include <tdrl/apps/stop_signal.h>
#include <tdrl/apps/trainer.h>
