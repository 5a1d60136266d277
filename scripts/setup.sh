#!/usr/bin/env bash
# Installs the Debian packages tdrl needs, and only those missing. Safe to run repeatedly.
#   scripts/setup.sh                # Debian 12's LibTorch 1.13.1 (libtorch-dev)
#   scripts/setup.sh --torch pypi   # also PyPI's LibTorch, in .venv-torch (scripts/common.sh)
# TDRL_TORCH=pypi in the environment does the same (the other scripts pass it on this way).
# --torch pypi makes the virtual environment .venv-torch in the checkout (ignored by git) and
# installs PyPI's torch there (a CUDA build: its wheel holds a complete LibTorch) with the Python
# tensordict of the interop tests. TDRL_PYPI_TORCH names what pip installs (default: the version
# the suite was last run against; `TDRL_PYPI_TORCH=torch` for the newest).
set -euo pipefail
source "$(dirname "$0")/common.sh"

torch=${TDRL_TORCH:-debian}
while (($#)); do
  case $1 in
    --torch)
      [[ $# -ge 2 && ( $2 == debian || $2 == pypi ) ]] || {
        echo "setup.sh: --torch takes 'debian' or 'pypi', got '${2:-nothing}'" >&2
        exit 2
      }
      torch=$2
      shift 2 ;;
    *)
      echo "setup.sh: unknown argument '$1' (usage: scripts/setup.sh [--torch debian|pypi])" >&2
      exit 2 ;;
  esac
done

packages=(
  g++ clang libclang-rt-14-dev cmake ninja-build ccache pkg-config python3 time
  libtorch-dev libopenblas0-pthread
  libgloo-dev
  libmujoco-dev libmujoco-samples
  libyaml-cpp-dev libspdlog-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
  libcairo2-dev fonts-dejavu-core
  libosmesa6-dev libegl-dev
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
[[ $torch == debian ]] || packages+=(python3-venv)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# LibTorch on Debian links the generic libblas.so.3; without OpenBLAS behind it, matrix
# products run on the reference BLAS, 7-15x slower on MLPs.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
if [[ "$blas" != *openblas* ]]; then
  echo "setup: WARNING: libblas.so.3 resolves to '${blas:-nothing}', not OpenBLAS." >&2
  echo "setup: WARNING: LibTorch will be 7-15x slower. Fix: apt-get install libopenblas0-pthread" >&2
  echo "setup: WARNING: and 'update-alternatives --config libblas.so.3-x86_64-linux-gnu'." >&2
fi

if [[ $torch == pypi ]]; then
  tdrl_pypi_torch_venv
fi
