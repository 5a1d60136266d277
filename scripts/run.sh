#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: PPO on CartPole-v1
# (configs/ppo_cartpole.yaml, about 25 s of training on 2 cores after the build) with tdrl-train.
# Arguments go to tdrl-train, e.g. `scripts/run.sh --set seed=1` or
# `scripts/run.sh --config configs/sac_pendulum.yaml`.
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$TDRL_ROOT/scripts/setup.sh"
build_dir=${BUILD_DIR:-$(tdrl_build_dir build)}
tdrl_configure "$build_dir"
cmake --build "$build_dir" -j "$(nproc)" --target tdrl-train tdrl-eval tdrl-envs
config=()
[[ " $* " == *" --config "* || " $* " == *" --resume "* ]] || config=(--config "$TDRL_ROOT/configs/ppo_cartpole.yaml")
cd "$TDRL_ROOT"
"$build_dir/apps/tdrl-train" "${config[@]}" "$@"
