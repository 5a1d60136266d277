#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main program: for now the TensorDict demo
# (examples/tensordict_demo.cpp); the training apps take its place when they exist.
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$TDRL_ROOT/scripts/setup.sh"
build_dir=${BUILD_DIR:-$TDRL_ROOT/build}
tdrl_configure "$build_dir"
cmake --build "$build_dir" -j "$(nproc)" --target tensordict_demo
"$build_dir/examples/tensordict_demo" "$@"
