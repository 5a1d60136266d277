#!/usr/bin/env bash
# Installs the Debian packages tdrl needs, and only those missing. Safe to run repeatedly.
set -euo pipefail

packages=(
  g++ clang libclang-rt-14-dev cmake ninja-build ccache pkg-config python3 time
  libtorch-dev libopenblas0-pthread
  libgloo-dev
  libmujoco-dev libmujoco-samples
  libyaml-cpp-dev libspdlog-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)

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
