#!/usr/bin/env bash
# Installs what is missing, builds everything (libraries, tests, benchmarks, examples) and
# runs the whole test suite. Exits non-zero on any failure.
#   TDRL_SANITIZE=address,undefined scripts/test.sh   # the suite under sanitizers
#   TDRL_SANITIZE=thread scripts/test.sh              # everything under ThreadSanitizer
#   scripts/test_tsan.sh                               # the concurrent parts alone (CI runs it)
#   TDRL_TORCH=pypi scripts/test.sh                   # against PyPI's LibTorch (build-pypi/)
#   BUILD_DIR=... scripts/test.sh                     # another build folder
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$TDRL_ROOT/scripts/setup.sh"

sanitize=${TDRL_SANITIZE:-}
default_dir=$(tdrl_build_dir build)
[[ -z "$sanitize" ]] || default_dir=$(tdrl_build_dir "build-sanitize-${sanitize//,/-}")
build_dir=${BUILD_DIR:-$default_dir}

# Counted before tdrl_one_thread_per_test: nproc honours OMP_NUM_THREADS.
jobs=$(nproc)
start=$(date +%s)
tdrl_configure "$build_dir" -DTDRL_SANITIZE="$sanitize"
cmake --build "$build_dir" -j "$jobs"
echo "test.sh: build finished in $(( $(date +%s) - start )) s"

if [[ -n "$sanitize" ]]; then
  # LibTorch keeps process-lifetime singletons that LeakSanitizer would report at exit.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
  export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$TDRL_ROOT/cmake/tsan.supp}
fi
tdrl_one_thread_per_test
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
