# Shared by the scripts: repo root, build settings, and the configure step.
# shellcheck shell=bash
TDRL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# ccache reuses objects across checkouts: with base_dir it hashes (and compiles) the paths under
# the checkout relative to the build folder, so a fresh clone of the same commit in another
# folder (CI's) hits the objects of this one. The sources' mtimes are not part of what it checks
# (a fresh clone's files are all new), and pch_defines,time_macros let it cache the precompiled
# headers and the objects built with them. A clang PCH holds the checkout's absolute paths, so
# ccache hashes the .sum beside it instead (pch_external_checksum; cmake/pch_sum.sh writes it).
# scripts/check_ccache_reuse.sh measures the hit rate.
export CCACHE_BASEDIR=$TDRL_ROOT
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_PCH_EXTSUM=true
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}

# tdrl_configure BUILD_DIR [extra cmake args...]
# A new build folder gets Ninja and clang (CXX=g++ picks GCC): clang builds the whole tree in
# 204 s where GCC takes 350 s on the 2-core VM, at the same -O3 (docs/performance.md#build-time).
# An existing folder keeps the compiler it was configured with.
tdrl_configure() {
  local dir=$1
  shift
  local first=()
  [[ -f "$dir/CMakeCache.txt" ]] ||
    first=(-G Ninja "-DCMAKE_CXX_COMPILER=${CXX:-clang++}")
  cmake -S "$TDRL_ROOT" -B "$dir" "${first[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
}

# tdrl_one_thread_per_test: one LibTorch (OpenMP) and one OpenBLAS thread in each test process,
# unless the caller set them. ctest runs nproc tests at once and each would start nproc threads
# of both kinds; OpenBLAS's idle workers spin on sched_yield between the small products (a third
# of a training run's CPU time in `perf`), so the suite took 95 s instead of 72 s on 2 cores.
# Set OMP_NUM_THREADS / OPENBLAS_NUM_THREADS yourself to test with threaded kernels.
tdrl_one_thread_per_test() {
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
}
