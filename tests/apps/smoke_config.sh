#!/usr/bin/env bash
# CI smoke run of one shipped config: a few hundred frames through tdrl-train (every part of
# the loop: collection, optimisation, evaluation, checkpoints), then tdrl-eval on the run, so
# that no config rots. Usage: smoke_config.sh BIN_DIR CONFIG WORK_DIR
set -euo pipefail
bin=$1
config=$2
work=$3
name=$(basename "$config" .yaml)
rm -rf "${work:?}/$name"
mkdir -p "$work/$name"
algo=$(sed -n 's/^  name: \(ppo\|a2c\|dqn\|ddpg\|td3\|sac\)$/\1/p' "$config" | head -n 1)
overrides=(collector.frames_per_batch=64 collector.total_frames=128 eval.episodes=1
  eval.max_steps=20 eval.interval_frames=64 checkpoint.interval_frames=64
  logger.dir="$work/$name" logger.progress=none name=smoke)
case $algo in
  ppo | a2c)
    overrides+=(algo.num_epochs=1 algo.minibatch_size=32)
    # A recurrent core's sequences: the few steps per env of a smoke batch, whole.
    if grep -q '^  core: \(lstm\|gru\)$' "$config"; then overrides+=(algo.sequence_length=-1); fi
    ;;
  *) overrides+=(collector.init_random_frames=64 algo.updates_per_batch=2 replay.batch_size=32
    replay.capacity=1000) ;;
esac
args=()
for o in "${overrides[@]}"; do args+=(--set "$o"); done
"$bin/tdrl-train" --config "$config" "${args[@]}"
run=$(find "$work/$name" -mindepth 1 -maxdepth 1 -type d -name 'smoke-*' | head -n 1)
[[ -n "$run" ]] || { echo "smoke: no run folder under $work/$name" >&2; exit 1; }
files=(config.yaml metrics.csv train.log checkpoints/latest)
# A build without cairo draws no learning curve, and says so in train.log.
grep -q "draws no pictures" "$run/train.log" || files+=(learning_curve.svg learning_curve.png)
for f in "${files[@]}"; do
  [[ -s "$run/$f" ]] || { echo "smoke: $run/$f is missing or empty" >&2; exit 1; }
done
last=$(tail -n 1 "$run/metrics.csv" | cut -d, -f1)
[[ "$last" == 128 ]] || { echo "smoke: last metrics row at $last frames, expected 128" >&2; exit 1; }
"$bin/tdrl-eval" --run "$run" --episodes 1
