#!/usr/bin/env bash
# bench-nvml.sh: what NVML costs the commands that do not need it (issue 36).
# On a real H200 node NVML cost ~20 ms a process (init 8-10 ms, shutdown
# 9-10 ms; ../shared/research/gpu-h200.md), and `-n 16 -G 0 -- true` took
# 69.6 ms against 25.1 ms with a node file: NVML was loaded for a run that
# gives no instance a GPU. This machine has no driver, so the stand-in
# libnvidia-ml.so.1 (test/nvmlstandin, built here with gcc) plays one that
# costs what the H200's did (NVML_STANDIN_COST_MS=10 in init and in
# shutdown), found first through LD_LIBRARY_PATH as go-nvml's dlopen finds
# the real one.
#
# Each row is a ratio of medians of interleaved runs (with the stand-in,
# without any NVML, A B A B …): 1.0x means the command does not pay for
# NVML; the stand-in's record says whether it was loaded at all. Never a
# timed assertion. OLD=/path/to/gpulaunch adds the same rows for that
# binary. NVML_RUNS (default 21) runs per side.
set -euo pipefail
cd "$(dirname "$0")/.."
GL=${GL:-bin/gpulaunch}
OLD=${OLD:-}
N=${NVML_RUNS:-21}
[ -x "$GL" ] || { echo "bench-nvml.sh: $GL is missing: run make build first" >&2; exit 1; }
command -v gcc >/dev/null || { echo "  bench-nvml.sh: no gcc: the stand-in libnvidia-ml.so.1 cannot be built (skipped)"; exit 0; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-nvml.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/lib"
gcc -Wall -Werror -shared -fPIC -o "$work/lib/libnvidia-ml.so.1" test/nvmlstandin/nvml.c

now_us() { echo $(($(date +%s%N) / 1000)); }
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# row LABEL BINARY ARGS…: the command with the stand-in and without, interleaved.
row() {
  local label=$1 bin=$2
  shift 2
  : >"$work/with" && : >"$work/without" && : >"$work/record"
  for _ in $(seq "$N"); do
    s=$(now_us)
    LD_LIBRARY_PATH="$work/lib" NVML_STANDIN_COST_MS=10 NVML_STANDIN_RECORD="$work/record" "$bin" "$@" >/dev/null 2>&1 || true
    e=$(now_us)
    echo $((e - s)) >>"$work/with"
    s=$(now_us)
    LD_LIBRARY_PATH='' "$bin" "$@" >/dev/null 2>&1 || true
    e=$(now_us)
    echo $((e - s)) >>"$work/without"
  done
  local w wo loaded
  w=$(median <"$work/with")
  wo=$(median <"$work/without")
  loaded=no
  grep -q '^load$' "$work/record" && loaded=yes
  awk -v l="$label" -v w="$w" -v wo="$wo" -v loaded="$loaded" \
    'BEGIN { printf "  %-34s %9.1f ms %9.1f ms %7.2fx  %s\n", l, w / 1000, wo / 1000, w / wo, loaded }'
}

printf '  %-34s %12s %12s %8s  %s\n' command 'with NVML' 'without' ratio 'NVML loaded'
for side in this ${OLD:+before}; do
  bin=$GL
  [ "$side" = before ] && bin=$OLD
  row "$side: -n 16 -G 0 -- true" "$bin" -n 16 -G 0 -O -q --monitor-interval 0 -- true
  row "$side: info" "$bin" info
done
