#!/usr/bin/env bash
# Builds the Google Benchmark programs (Release) and runs every bench_* executable; each ends
# with its TensorDict/raw ratio table. Arguments go to every benchmark program:
#   scripts/bench.sh --benchmark_min_time=0.05
#   scripts/bench.sh --benchmark_filter=Index --benchmark_repetitions=5
#   BUILD_DIR=... scripts/bench.sh          # another build folder (default build-bench/)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/common.sh"
[[ ! -f "$TDRL_ROOT/scripts/setup.sh" ]] || "$TDRL_ROOT/scripts/setup.sh"

build_dir=${BUILD_DIR:-$(tdrl_build_dir build-bench)}
tdrl_configure "$build_dir" -DTDRL_BUILD_BENCH=ON -DTDRL_BUILD_TESTS=OFF -DTDRL_BUILD_EXAMPLES=OFF

# Every bench_* target the project defines (Ninja lists "name: phony", Make "... name").
mapfile -t targets < <(cmake --build "$build_dir" --target help |
  sed -nE 's/^(\.\.\. )?(bench_[A-Za-z0-9_]+)(: .*)?$/\2/p' | sort -u)
if ((${#targets[@]} == 0)); then
  echo "bench.sh: no bench_* targets in $build_dir" >&2
  exit 1
fi
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"

status=0
for target in "${targets[@]}"; do
  exe=$(find "$build_dir" -path '*/CMakeFiles' -prune -o -type f -name "$target" -perm -u+x \
    -print | head -n 1)
  if [[ -z "$exe" ]]; then
    echo "bench.sh: built $target but found no executable of that name" >&2
    status=1
    continue
  fi
  echo "==== $target ===="
  "$exe" "$@" || status=$?
done
exit "$status"
