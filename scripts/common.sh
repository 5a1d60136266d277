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

# Which LibTorch the scripts build against: TDRL_TORCH=debian (Debian 12's 1.13.1, the default)
# or pypi (the LibTorch inside PyPI's torch wheel, in the virtual environment below, in build
# folders of its own: build-pypi, ...).
TDRL_TORCH=${TDRL_TORCH:-debian}
if [[ $TDRL_TORCH != debian && $TDRL_TORCH != pypi ]]; then
  echo "scripts: TDRL_TORCH is '$TDRL_TORCH'; it takes 'debian' or 'pypi'" >&2
  exit 2
fi
export TDRL_TORCH
TDRL_VENV=$TDRL_ROOT/.venv-torch
# What the suite was last run against (2026-11-28: the newest on PyPI).
TDRL_PYPI_TORCH=${TDRL_PYPI_TORCH:-torch==2.15.0 tensordict==0.15.3}

# tdrl_pypi_torch_venv: makes $TDRL_VENV and installs $TDRL_PYPI_TORCH there (pip does nothing
# when the versions are installed already).
tdrl_pypi_torch_venv() {
  if [[ ! -x $TDRL_VENV/bin/python ]]; then
    echo "setup: making $TDRL_VENV"
    python3 -m venv "$TDRL_VENV"
  fi
  local want
  read -r -a want <<< "$TDRL_PYPI_TORCH"
  "$TDRL_VENV/bin/python" -m pip install -q --disable-pip-version-check "${want[@]}"
}

# tdrl_build_dir NAME: the default build folder NAME, with a -pypi suffix in the PyPI lane.
tdrl_build_dir() {
  if [[ $TDRL_TORCH == pypi ]]; then echo "$TDRL_ROOT/$1-pypi"; else echo "$TDRL_ROOT/$1"; fi
}

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
  local torch=()
  if [[ $TDRL_TORCH == pypi ]]; then
    # The torch package's own folder, not torch.utils.cmake_prefix_path: TorchConfig.cmake looks
    # for its libraries after the system's, so with Debian's libtorch-dev installed it would
    # link Debian's libraries unless <prefix>/lib is torch's.
    torch=("-DCMAKE_PREFIX_PATH=$("$TDRL_VENV/bin/python" -c \
      'import os, torch; print(os.path.dirname(torch.__file__))')")
    # The venv's tensordict is the Python side of the memmap interop tests: named, so that the
    # lane runs them (a venv without it stops the configure) rather than skipping them.
    torch+=("-DTDRL_PYTHON=$TDRL_VENV/bin/python")
  fi
  cmake -S "$TDRL_ROOT" -B "$dir" "${first[@]}" "${torch[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
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
