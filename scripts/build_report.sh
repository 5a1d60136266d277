#!/usr/bin/env bash
# Where a build's time went, from its folder's .ninja_log: steps, wall and CPU seconds, the
# slowest steps, and (with --memory) the peak memory of the slowest compile, re-run once.
#   scripts/build_report.sh                       # build/
#   scripts/build_report.sh build-sanitize-thread --top 20
#   scripts/build_report.sh build --memory        # also re-runs the slowest compile
# The figures are per ninja invocation and summed over the invocations the log holds (a build
# interrupted and resumed counts both parts). A step's seconds are its wall time; a compile or
# link uses one core, so their sum is the build's CPU seconds to within the scheduler's noise.
# Prints a Markdown table (docs/performance.md#build-time uses it). Exits 2 on bad arguments,
# 1 when the folder has no .ninja_log.
set -euo pipefail
source "$(dirname "$0")/common.sh"

dir="$TDRL_ROOT/build"
top=10
memory=0
while (($#)); do
  case "$1" in
    --top) top=${2:?--top takes a count}; shift 2 ;;
    --memory) memory=1; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "build_report.sh: unknown option '$1' (use --top N, --memory or a build folder)" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
if ! [[ "$top" =~ ^[0-9]+$ ]]; then
  echo "build_report.sh: --top takes a whole number, got '$top'" >&2
  exit 2
fi
if [[ ! -f "$dir/.ninja_log" ]]; then
  echo "build_report.sh: no $dir/.ninja_log (build with Ninja first: scripts/test.sh or scripts/run.sh)" >&2
  exit 1
fi

exec python3 - "$dir" "$top" "$memory" <<'EOF'
import json, os, shlex, subprocess, sys

build_dir, top, memory = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
with open(os.path.join(build_dir, ".ninja_log")) as f:
    header = f.readline()
    if not header.startswith("# ninja log v"):
        sys.exit(f"build_report.sh: {build_dir}/.ninja_log does not start with '# ninja log v'")
    rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]

# Each ninja invocation restarts its clock; lines are appended as steps finish, so a finish
# time lower than the one before starts a new invocation. One step can write several outputs
# (one line each, same times): counted once.
invocations, steps, last_end = [], {}, None
for start, end, _mtime, output, cmdhash in rows:
    start, end = int(start), int(end)
    if last_end is None or end < last_end:
        invocations.append(0)
    last_end = end
    invocations[-1] = max(invocations[-1], end)
    steps[(len(invocations), start, end, cmdhash)] = output
durations = sorted(((end - start) / 1000.0, output) for (_, start, end, _), output in steps.items())
durations.reverse()
wall = sum(invocations) / 1000.0
cpu = sum(d for d, _ in durations)
compiles = [(d, o) for d, o in durations if o.endswith(".o")]

print(f"Build folder: {build_dir} ({len(invocations)} ninja invocation(s) in its log)\n")
print("| what | value |")
print("| --- | --- |")
print(f"| steps | {len(durations)} ({len(compiles)} compiles) |")
print(f"| wall seconds | {wall:.0f} |")
print(f"| CPU seconds (sum of steps) | {cpu:.0f} |")
if compiles:
    print(f"| compile seconds | {sum(d for d, _ in compiles):.0f} (mean {sum(d for d, _ in compiles) / len(compiles):.1f} a compile) |")
print()
print(f"Slowest {min(top, len(durations))} steps:\n")
print("| seconds | output |")
print("| --- | --- |")
for d, o in durations[:top]:
    print(f"| {d:.1f} | {o} |")

if memory and compiles:
    # Re-run the slowest compile as compile_commands.json gives it, under GNU time.
    slowest = compiles[0][1]
    try:
        with open(os.path.join(build_dir, "compile_commands.json")) as f:
            commands = json.load(f)
    except OSError:
        sys.exit(f"build_report.sh: --memory needs {build_dir}/compile_commands.json")
    def output_of(e):
        if "output" in e:
            return e["output"]
        argv = shlex.split(e["command"])
        return argv[argv.index("-o") + 1] if "-o" in argv else None
    entry = next((e for e in commands if output_of(e) == slowest), None)
    if entry is None:
        sys.exit(f"build_report.sh: {slowest} is not in compile_commands.json")
    argv = shlex.split(entry["command"])
    argv[argv.index("-o") + 1] = os.devnull
    argv = [a for a in argv if not a.endswith("ccache")]
    result = subprocess.run(["/usr/bin/time", "-f", "%M %e"] + argv, cwd=entry["directory"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    if result.returncode != 0:
        sys.exit(f"build_report.sh: re-running {slowest} failed:\n{result.stderr}")
    kb, seconds = result.stderr.strip().splitlines()[-1].split()
    print(f"\nPeak memory of the slowest compile ({slowest}, re-run alone): "
          f"{int(kb) / 1024:.0f} MiB, {float(seconds):.1f} s")
EOF
