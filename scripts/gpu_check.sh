#!/usr/bin/env bash
# The GPU check, for a Linux machine with an NVIDIA GPU, CMake, Ninja, a C++ compiler and a CUDA
# PyTorch installed, and no network:
#   scripts/gpu_check.sh --prepare   # beforehand, with network: Debian 12 packages of what tdrl
#                                    # needs besides LibTorch, into .gpu_check/ (ignored by git)
#   scripts/gpu_check.sh             # on the GPU machine: build, CUDA tests, timings
# The build takes LibTorch from python3's torch (torch.utils's folder) and the rest (MuJoCo,
# yaml-cpp, spdlog, fmt, CLI11, nlohmann-json, Gloo's headers, GoogleTest, zlib's headers) from
# the packages unpacked into .gpu_check/prefix, never into /. It builds the libraries,
# tdrl-train, the test binaries with CUDA cases and the timing program with Ninja on all cores
# (build-gpu/), runs the *CUDA* test cases, then times each step on the GPU and on the CPU in
# one run and prints one Markdown table with the GPU's name (docs/performance.md#gpu).
# Exits 1 on a failed build or test, 2 on bad arguments.
#   PYTHON=...       the Python holding torch (default python3)
#   TDRL_GPU_FRAMES  frames of each PPO timing run (default 20480; SAC runs 1,000 random frames
#                    then 3,000 frames of one update each: on the CPU, on the GPU eagerly and
#                    with train.cuda_graph)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$root/.gpu_check
prefix=$work/prefix

# What tdrl needs besides LibTorch, as Debian 12 names it, with the libraries they load.
packages=(
  libmujoco-dev libmujoco2.2.2 libccd2 liblodepng0 libqhull-r8.0 libtinyxml2-9
  libyaml-cpp-dev libyaml-cpp0.7 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  libcli11-dev nlohmann-json3-dev libgloo-dev libgtest-dev libgmock-dev zlib1g-dev zlib1g
)

prepare() {
  mkdir -p "$work/debs"
  (cd "$work/debs" && apt-get download "${packages[@]}" > "$work/download.log" 2>&1) || {
    cat "$work/download.log" >&2
    exit 1
  }
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
  # Links to absolute paths (libz.so -> /lib/.../libz.so.1.2.13) point into the prefix instead,
  # relative to themselves, so that the folder works wherever the checkout is.
  local link target
  while IFS= read -r link; do
    target=$(readlink "$link")
    [[ $target == /* && -e $prefix$target ]] || continue
    ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$prefix$target")" "$link"
  done < <(find "$prefix" -type l)
  echo "gpu_check: $(ls "$work/debs" | wc -l) packages, $(du -sh "$work/debs" | cut -f1) downloaded;" \
    "unpacked into $prefix ($(du -sh "$prefix" | cut -f1))"
}

case ${1:-} in
  --prepare) prepare; exit 0 ;;
  "") ;;
  *) echo "gpu_check.sh: unknown argument '$1' (usage: scripts/gpu_check.sh [--prepare])" >&2
     exit 2 ;;
esac

[[ -d $prefix/usr ]] || {
  echo "gpu_check.sh: $prefix is missing: run scripts/gpu_check.sh --prepare first (it needs" \
    "the network)" >&2
  exit 1
}
python=${PYTHON:-python3}
torch_root=$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))') || {
  echo "gpu_check.sh: $python cannot import torch; set PYTHON to the Python that has it" >&2
  exit 1
}
frames=${TDRL_GPU_FRAMES:-20480}
build=$root/build-gpu
arch_libs=$prefix/usr/lib/x86_64-linux-gnu
# The unpacked libraries load each other (libmujoco its libccd, spdlog its fmt): the linker and
# the programs find them here.
export LD_LIBRARY_PATH=$arch_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
step_start=$SECONDS
# Seconds since the last call (called directly, not in $(...), which would lose step_start).
took() { took_s=$((SECONDS - step_start)); step_start=$SECONDS; }

# ---- build
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_PREFIX_PATH=$torch_root;$prefix/usr" -DTDRL_BUILD_BENCH=OFF \
  -DTDRL_BUILD_EXAMPLES=OFF -DTDRL_WITH_CAIRO=OFF > "$root/build-gpu.configure.log" 2>&1 || {
  tail -n 40 "$root/build-gpu.configure.log" >&2
  exit 1
}
cmake --build "$build" -j "$(nproc)" --target tdrl-train tensordict_tests tdrl_modules_tests \
  tdrl_collectors_tests tdrl_apps_tests tdrl_gpu_timings -- -k 0 \
  > "$root/build-gpu.build.log" 2>&1 || {
  grep -E "error|FAILED" "$root/build-gpu.build.log" | head -n 40 >&2
  exit 1
}
took; build_s=$took_s
echo "gpu_check: built in ${build_s} s (torch $("$python" -c 'import torch; print(torch.__version__)'))"

# ---- the CUDA test cases
status=0
# Each case in a process of its own, so that a crash (the binaries print its backtrace) does not
# hide the cases after it.
for binary in tensordict_tests tdrl_modules_tests tdrl_collectors_tests tdrl_apps_tests; do
  path=$(find "$build/tests" -type f -name "$binary" -perm -u+x | head -n 1)
  while read -r name; do
    "$path" --gtest_filter="$name" --gtest_brief=1 || { status=1; echo "gpu_check: FAILED $name"; }
  done < <("$path" --gtest_list_tests --gtest_filter='*CUDA*' |
           awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }')
done
took; tests_s=$took_s

# ---- timings
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo
echo "GPU: ${gpu_name:-unknown}; $(nproc) CPU cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
"$build/bench/gpu/tdrl_gpu_timings"

# tdrl-train on `device` for $frames frames: the last metrics row's column `want` and, for
# updates/s, updates over the seconds spent optimising.
train_rate() {
  local config=$1 device=$2 runs
  shift 2
  runs=$(mktemp -d "${TMPDIR:-/tmp}/tdrl_gpu_check.XXXXXX")
  "$build/apps/tdrl-train" --config "$root/configs/$config" --set device="$device" \
    --set eval.episodes=1 --set logger.progress=none --set logger.dir="$runs" "$@" \
    > "$runs/out.log" 2>&1 || { cat "$runs/out.log" >&2; return 1; }
  python3 - "$(find "$runs" -name metrics.csv | head -n 1)" << 'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
last = rows[-1]
updates, optimize = float(last["updates"]), float(last["optimize_s"])
print(f'{float(last["fps"]):.0f} {updates / optimize if optimize > 0 else 0:.0f}')
PY
  rm -rf "$runs"
}
sac=(--set collector.init_random_frames=1000 --set collector.total_frames=4000
     --set collector.frames_per_batch=100 --set algo.updates_per_batch=100)
ppo=(--set collector.total_frames="$frames")
read -r sac_cpu_fps sac_cpu_ups <<< "$(train_rate sac_halfcheetah.yaml cpu "${sac[@]}")"
read -r sac_gpu_fps sac_gpu_ups <<< "$(train_rate sac_halfcheetah.yaml cuda "${sac[@]}")"
read -r sac_graph_fps sac_graph_ups <<< "$(train_rate sac_halfcheetah.yaml cuda "${sac[@]}" \
  --set train.cuda_graph=true)"
read -r ppo_cpu_fps _ <<< "$(train_rate ppo_halfcheetah.yaml cpu "${ppo[@]}")"
read -r ppo_gpu_fps _ <<< "$(train_rate ppo_halfcheetah.yaml cuda "${ppo[@]}")"
# The policy copied to a CPU worker thread (the envs step on the CPU), the batch moved once.
read -r ppo_sync_fps _ <<< "$(train_rate ppo_halfcheetah.yaml cuda "${ppo[@]}" \
  --set collector.mode=sync --set collector.num_workers=1)"
echo "| SAC HalfCheetah (configs/sac_halfcheetah.yaml: batch 256, 256x256, twin critics), updates/s while optimising | $sac_cpu_ups | $sac_gpu_ups eager, $sac_graph_ups with train.cuda_graph | 3,000 updates after 1,000 random frames, one update per frame; frames/s with collection: $sac_cpu_fps CPU, $sac_gpu_fps GPU eager, $sac_graph_fps GPU graph |"
echo "| PPO HalfCheetah (configs/ppo_halfcheetah.yaml), frames/s | $ppo_cpu_fps | $ppo_gpu_fps single collector (policy on the GPU), $ppo_sync_fps one sync worker (policy on the CPU) | $frames frames, collection included |"
took; timings_s=$took_s
echo
echo "gpu_check: build ${build_s} s, CUDA tests ${tests_s} s, timings ${timings_s} s"
exit $status
