// Where the MuJoCo models are in the checkout this library was built from, and where
// `cmake --install` puts them (default_mujoco_asset_dir() falls back to these).

#pragma once

namespace tdrl::envs::detail {

/// envs/assets of the checkout.
const char* source_asset_dir();

/// share/tdrl/envs/assets under the configured install prefix.
const char* install_asset_dir();

}  // namespace tdrl::envs::detail
