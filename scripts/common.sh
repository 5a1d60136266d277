# Shared by the scripts: repo root, build settings, and the configure step.
# shellcheck shell=bash
TDRL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# ccache can only reuse objects built with a precompiled header when told these are safe.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}

# tdrl_configure BUILD_DIR [extra cmake args...]
tdrl_configure() {
  local dir=$1
  shift
  local generator=()
  [[ -f "$dir/CMakeCache.txt" ]] || generator=(-G Ninja)
  cmake -S "$TDRL_ROOT" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
}
