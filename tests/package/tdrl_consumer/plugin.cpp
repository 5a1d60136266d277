// The drift components as a plugin: `tdrl-train --plugin libdrift_plugin.so` loads this library
// and calls its tdrl_register_plugin before reading the config.

#include <tdrl/apps/main.h>

#include "drift_components.h"

TDRL_PLUGIN { drift::register_drift_components(); }
