#!/usr/bin/env bash
# The concurrent parts under ThreadSanitizer: the replay buffers (prefetching, shared storages),
# the collectors (threads, worker processes, the distributed collector) and the tensordict core
# (shared memory, the distributed transport). Builds only their test binaries, in
# build-sanitize-thread, and runs them. Exits non-zero on a failure or a race report.
# LibTorch and Gloo are not instrumented: cmake/tsan.supp names what TSan cannot see through.
# From a clean clone on the 2-core VM: 82 s for the replay and collectors tests with clang (64 s
# build; 130 s with GCC; 404 s before the unity batches, same hour, 2026-11-28), and seconds when
# ccache holds the same commit.
#   scripts/test_tsan.sh                    # all three
#   scripts/test_tsan.sh tdrl_replay_tests  # one of them
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$TDRL_ROOT/scripts/setup.sh"

build_dir=${BUILD_DIR:-$(tdrl_build_dir build-sanitize-thread)}
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(tdrl_replay_tests tdrl_collectors_tests tensordict_tests)

start=$(date +%s)
tdrl_configure "$build_dir" -DTDRL_SANITIZE=thread
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"
echo "test_tsan.sh: build finished in $(( $(date +%s) - start )) s"

# halt_on_error: a race fails the run at once, with the report as the last output.
tdrl_one_thread_per_test
export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$TDRL_ROOT/cmake/tsan.supp halt_on_error=1}
status=0
for target in "${targets[@]}"; do
  binary=$(find "$build_dir/tests" -type f -name "$target" -perm -u+x | head -n 1)
  if [[ -z "$binary" ]]; then
    echo "test_tsan.sh: no binary $target under $build_dir/tests" >&2
    exit 1
  fi
  echo "test_tsan.sh: $target"
  # Sanitized binaries find the test data and worker binaries from their build folder.
  (cd "$(dirname "$binary")" && "$binary" --gtest_brief=1) || status=1
done
echo "test_tsan.sh: finished in $(( $(date +%s) - start )) s"
exit $status
