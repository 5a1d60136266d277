// The paths of detail/build_asset_dirs.h. They are definitions of this source alone
// (envs/CMakeLists.txt): a path in the other sources' flags would differ between two checkouts
// of the same commit and keep ccache from reusing their objects.

#include "detail/build_asset_dirs.h"

namespace tdrl::envs::detail {

const char* source_asset_dir() { return TDRL_ENVS_SOURCE_ASSET_DIR; }

const char* install_asset_dir() { return TDRL_ENVS_INSTALL_ASSET_DIR; }

}  // namespace tdrl::envs::detail
