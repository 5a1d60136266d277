#!/usr/bin/env bash
# Runs the learning configs (not in CI: it is a benchmark) and reports each run's final
# deterministic evaluation return (10 episodes) against its target, with frames, wall time and
# frames/s; writes the table to docs/results.md and copies the learning curves to
# docs/results/. Arguments: config names to run (default: every config with a target), or
# --resume with the run folder of a suite run that was stopped (it continues from its last
# checkpoint and is reported like a fresh run), e.g.
#   scripts/learning_suite.sh ppo_cartpole dqn_cartpole
#   scripts/learning_suite.sh --resume runs/learning_suite/sac_halfcheetah-20261123-034317
#   BUILD_DIR=... RUNS_DIR=... scripts/learning_suite.sh
#   TDRL_TRAIN=/opt/tdrl/bin/tdrl-train scripts/learning_suite.sh   (an installed tdrl-train,
#     so that rebuilding the tree during a long suite does not change the program under test)
# Wall time is the run's own clock (metrics.csv's wall_time), which adds up across a resume and
# includes evaluation and checkpoints.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/common.sh"
"$TDRL_ROOT/scripts/setup.sh"
build_dir=${BUILD_DIR:-$TDRL_ROOT/build}
runs_dir=${RUNS_DIR:-$TDRL_ROOT/runs/learning_suite}
train=${TDRL_TRAIN:-}
if [[ -z "$train" ]]; then
  tdrl_configure "$build_dir"
  cmake --build "$build_dir" -j "$(nproc)" --target tdrl-train
  train=$build_dir/apps/tdrl-train
fi
[[ -x "$train" ]] || { echo "learning_suite.sh: $train is not an executable" >&2; exit 2; }

# config: target return, the public anchor at that budget
declare -A target anchor
target[ppo_cartpole]=475;          anchor[ppo_cartpole]="SB3 zoo 500 @ 100k"
target[dqn_cartpole]=475;          anchor[dqn_cartpole]="SB3 zoo 500 @ 50k"
target[a2c_cartpole]=475;          anchor[a2c_cartpole]="SB3 zoo 500 @ 500k"
target[sac_pendulum]=-200;         anchor[sac_pendulum]="SB3 zoo -157 @ 20k"
target[td3_pendulum]=-200;         anchor[td3_pendulum]="SB3 zoo -152 @ 20k"
target[ddpg_pendulum]=-200;        anchor[ddpg_pendulum]="SB3 zoo -152 @ 20k"
target[ppo_invertedpendulum]=950;  anchor[ppo_invertedpendulum]="CleanRL 963 @ 1M"
target[ppo_halfcheetah]=1500;      anchor[ppo_halfcheetah]="CleanRL 1443 @ 1M"
target[sac_halfcheetah]=4000;      anchor[sac_halfcheetah]="CleanRL ~9.6k @ 1M"
target[td3_hopper]=2500;           anchor[td3_hopper]="CleanRL 3.1k @ 1M"
order=(ppo_cartpole dqn_cartpole a2c_cartpole sac_pendulum td3_pendulum ddpg_pendulum
  ppo_invertedpendulum ppo_halfcheetah sac_halfcheetah td3_hopper)
resume_dir=""
if [[ "${1:-}" == --resume ]]; then
  [[ -f "${2:-}/config.yaml" ]] || { echo "learning_suite.sh: --resume needs a run folder with a config.yaml" >&2; exit 2; }
  resume_dir=$(cd "$2" && pwd)
  configs=("$(sed -n 's/^name: *\([A-Za-z0-9_]*\).*/\1/p' "$resume_dir/config.yaml")")
else
  configs=("$@")
  ((${#configs[@]})) || configs=("${order[@]}")
fi

mkdir -p "$runs_dir" "$TDRL_ROOT/docs/results"
results=$TDRL_ROOT/docs/results.md
rows=()
for name in "${configs[@]}"; do
  config=$TDRL_ROOT/configs/$name.yaml
  [[ -f "$config" ]] || { echo "learning_suite.sh: no config $config" >&2; exit 2; }
  echo "== $name"
  if [[ -n "$resume_dir" ]]; then
    # The resumed run keeps its config (logger.dir, eval.episodes=10 from the first start).
    "$train" --resume "$resume_dir" | tee -a "$runs_dir/$name.out"
    run=$resume_dir
  else
    "$train" --config "$config" --set logger.dir="$runs_dir" \
      --set logger.progress=lines --set eval.episodes=10 | tee "$runs_dir/$name.out"
    run=$(sed -n 's/^tdrl-train: run folder //p' "$runs_dir/$name.out" | tail -n 1)
  fi
  # The last metrics row with an eval_return: the final evaluation; wall time from the last row.
  read -r frames ret std wall fps < <(python3 - "$run/metrics.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
r = [r for r in rows if r.get("eval_return")][-1]
wall = float(rows[-1]["wall_time"])
frames = int(float(r["frames"]))
print(frames, float(r["eval_return"]), float(r["eval_std"] or 0), f"{wall:.0f}", f"{frames / wall:.0f}")
PY
)
  t=${target[$name]:-}
  verdict="-"
  [[ -z "$t" ]] || verdict=$(python3 -c "print('met' if $ret >= $t else 'missed')")
  cp "$run/learning_curve.svg" "$TDRL_ROOT/docs/results/$name.svg"
  rows+=("| $name | $(printf '%.1f ± %.1f' "$ret" "$std") | ${t:--} | $verdict | $frames | ${wall} s | $fps | ${anchor[$name]:--} |")
  printf '%s\n' "${rows[-1]}"
done

# Rows of configs not run this time are kept from the previous table; rows follow `order`.
declare -A row_of
conditions=""
if [[ -f "$results" ]]; then
  # A hand-written "Conditions ..." paragraph (how the runs were made) is kept.
  conditions=$(awk '/^Conditions/{p=1} p&&/^$/{exit} p' "$results")
  while IFS= read -r line; do
    name=$(sed -n 's/^| \([a-z0-9_]*\) | .*/\1/p' <<<"$line")
    [[ -n "$name" && "$name" != config ]] && row_of[$name]=$line
  done < "$results"
fi
for row in "${rows[@]}"; do
  name=$(sed -n 's/^| \([a-z0-9_]*\) | .*/\1/p' <<<"$row")
  row_of[$name]=$row
done
{
  echo "# Learning results"
  echo
  echo "Written by \`scripts/learning_suite.sh\` (last run $(date -u +%Y-%m-%d)), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p'))."
  echo "Return: mean ± std over 10 deterministic evaluation episodes at the end of the run."
  echo "Wall time includes evaluation and checkpoints. MuJoCo tasks use the project's own MJCF"
  echo "models, not Gymnasium's: their returns compare with the anchors in spirit only."
  echo
  [[ -z "$conditions" ]] || printf '%s\n\n' "$conditions"
  echo "| config | return | target | | frames | wall time | frames/s | public anchor |"
  echo "| --- | ---: | ---: | --- | ---: | ---: | ---: | --- |"
  for name in "${order[@]}"; do
    [[ -z "${row_of[$name]:-}" ]] || printf '%s\n' "${row_of[$name]}"
    unset "row_of[$name]"
  done
  for name in "${!row_of[@]}"; do printf '%s\n' "${row_of[$name]}"; done
  echo
  for svg in "$TDRL_ROOT"/docs/results/*.svg; do
    name=$(basename "$svg" .svg)
    echo "![$name](results/$name.svg)"
  done
} > "$results.new"
mv "$results.new" "$results"
echo "learning_suite.sh: wrote $results"
