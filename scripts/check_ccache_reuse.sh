#!/usr/bin/env bash
# Checks that a second checkout of the same commit builds from ccache: clones HEAD (committed
# work only) twice into a scratch folder, builds the given targets in the first with an empty
# private cache, then in the second, and prints the second build's hit rate. Exits 1 when fewer
# than 85% of its compiles hit (a path of the checkout has crept into a compile's inputs: a
# definition, a generated source), 2 on bad arguments. Under clang the precompiled headers
# themselves are left out of the rate: a clang PCH records the absolute paths of its inputs and
# clang refuses one copied from another clone, so each clone builds its own (a few compiles)
# and what ccache reuses is every object built with them.
#   scripts/check_ccache_reuse.sh                     # tdrl_envs and tdrl_specs_tests
#   scripts/check_ccache_reuse.sh all                 # everything test.sh builds
#   TDRL_SANITIZE=thread scripts/check_ccache_reuse.sh tdrl_replay_tests
# The scratch folder and its cache are removed at the end. Takes one cold build of the targets
# plus a cached one (about 5 minutes for the default on 2 cores).
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$TDRL_ROOT/scripts/setup.sh"

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(tdrl_envs tdrl_specs_tests)
for t in "${targets[@]}"; do
  if ! [[ "$t" =~ ^[A-Za-z0-9_.+-]+$ ]]; then
    echo "check_ccache_reuse.sh: '$t' is not a target name" >&2
    exit 2
  fi
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/tdrl_ccache_reuse.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export CCACHE_DIR="$scratch/ccache"

# build_in FOLDER: clone HEAD there and build the targets, with base_dir at that clone, with the
# compiler the scripts use (scripts/common.sh: clang unless CXX names another).
build_in() {
  local clone=$1
  git clone -q --no-hardlinks "$TDRL_ROOT" "$clone"
  (
    export CCACHE_BASEDIR=$clone
    cmake -S "$clone" -B "$clone/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      "-DCMAKE_CXX_COMPILER=${CXX:-clang++}" \
      -DTDRL_SANITIZE="${TDRL_SANITIZE:-}" > "$clone.configure.log"
    cmake --build "$clone/build" -j "$(nproc)" --target "${targets[@]}" > "$clone.build.log"
  ) || { echo "check_ccache_reuse.sh: the build in $clone failed:" >&2; tail -n 30 "$clone.build.log" >&2; exit 1; }
}

start=$(date +%s)
build_in "$scratch/first"
first=$(($(date +%s) - start))
ccache --zero-stats > /dev/null
start=$(date +%s)
build_in "$scratch/second"
second=$(($(date +%s) - start))

# ccache --print-stats: one "key<TAB>value" a line (ccache 4.7).
stats=$(ccache --print-stats)
stat() { awk -v k="$1" '$1 == k { print $2 }' <<< "$stats"; }
direct=$(stat direct_cache_hit)
preprocessed=$(stat preprocessed_cache_hit)
miss=$(stat cache_miss)
hits=$((direct + preprocessed))
total=$((hits + miss))
pchs=0
if [[ ${CXX:-clang++} == *clang* ]]; then
  pchs=$(find "$scratch/second/build" -name '*.pch' | wc -l)
  ((miss >= pchs)) || pchs=$miss
  miss=$((miss - pchs))
  total=$((total - pchs))
fi
if ((total == 0)); then
  echo "check_ccache_reuse.sh: the second build compiled nothing through ccache (is ccache the launcher?)" >&2
  exit 1
fi
rate=$((100 * hits / total))
echo "check_ccache_reuse.sh: targets ${targets[*]}: first clone built in ${first} s, second in ${second} s"
echo "check_ccache_reuse.sh: second clone: ${hits} of ${total} compiles from the cache (${rate}%; direct ${direct}, preprocessed ${preprocessed}, missed ${miss}; besides, ${pchs} precompiled headers built anew)"
if ((rate < 85)); then
  echo "check_ccache_reuse.sh: FAILED: under 85% of the second clone's compiles hit." >&2
  echo "check_ccache_reuse.sh: CCACHE_DEBUG=1 on a build writes each compile's hashed inputs beside its object." >&2
  exit 1
fi
