#!/usr/bin/env bash
# bench-start.sh: gpulaunch's start-up against what it replaces (issue 26).
# Every row is a ratio of medians of interleaved runs (A B A B …, so that a
# burst of load on this shared machine hits both sides alike), with its
# target beside it; never a timed assertion.
#
#   rank mode: `gpulaunch exec -- true` in the environment an srun rank sees,
#              against the 3-line select_gpu wrapper sites use
#              (export ROCR_VISIBLE_DEVICES=$SLURM_LOCALID; exec "$@").
#   version:   `gpulaunch version` against a Go hello world, sizes beside.
#   floors:    the same jobs done by the smallest Go programs, without cgo
#              and with it (scripts/testdata/rankwrap, hello), and hello with
#              cgo and zap, as the design card has gpulaunch (hellozap).
#
# Runs standalone after `make build` (bin/gpulaunch); scripts/bench.sh runs
# it too. OLD=/path/to/gpulaunch adds the same rows for that binary, measured
# in the same interleaving. START_RUNS (default 200) runs per side.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
GL=${GL:-bin/gpulaunch}
OLD=${OLD:-}
N=${START_RUNS:-200}
[ -x "$GL" ] || { echo "bench-start.sh: $GL is missing: run make build first" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-start.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The rank's node: 2 AMD GPUs described by a node file (no GPU here), their
# "device files" plain files that open, so the rank takes exec's normal path
# (node file → reconcile → plan → bind → execve) as on a real node, where
# gpulaunch reads the KFD topology instead of this file.
: >"$work/renderD128"
: >"$work/renderD129"
cat >"$work/node.json" <<JSON
{"vendor": "amd", "gpus": [
  {"pci": "c1:00.0", "numa": 0, "device": "$work/renderD128"},
  {"pci": "c6:00.0", "numa": 0, "device": "$work/renderD129"}]}
JSON
host=$(hostname)
rank_env=(SLURM_JOB_ID=1 SLURM_JOBID=1 SLURM_STEP_ID=0 SLURM_STEPID=0 SLURMD_NODENAME="$host"
  SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NTASKS=2 SLURM_NPROCS=2
  SLURM_STEP_NUM_TASKS=2 SLURM_STEP_NUM_NODES=1 SLURM_STEP_NODELIST="$host" SLURM_STEP_TASKS_PER_NODE=2
  SLURM_JOB_NODELIST="$host" SLURM_TASKS_PER_NODE=2 SLURM_GPUS_ON_NODE=2 SLURM_JOB_GPUS=0,1 SLURM_STEP_GPUS=0,1
  ROCR_VISIBLE_DEVICES=0,1 GPULAUNCH_NODE_FILE="$work/node.json")

cat >"$work/select_gpu" <<'SH'
#!/bin/bash
export ROCR_VISIBLE_DEVICES=$SLURM_LOCALID
exec "$@"
SH
chmod +x "$work/select_gpu"

# The floors: the same jobs done by the smallest Go programs, built
# without cgo and with it (gpulaunch is a cgo binary: go-nvml). A target
# under a floor is out of reach of any Go binary on this machine, and the
# row says so.
for prog in hello rankwrap; do
  CGO_ENABLED=0 $GO build -o "$work/$prog" "./scripts/testdata/$prog"
  CGO_ENABLED=1 $GO build -o "$work/$prog-cgo" "./scripts/testdata/$prog"
done
CGO_ENABLED=1 $GO build -o "$work/hellozap" ./scripts/testdata/hellozap

# us CMD…: the wall time of one run in µs; bash's $EPOCHREALTIME costs no
# fork, so the only process each side pays for is its own.
us() {
  local s=$EPOCHREALTIME
  "$@" >/dev/null 2>&1
  local e=$EPOCHREALTIME
  echo $(((${e/./} - ${s/./})))
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# interleave NAME=CMD…: N rounds, each running every side once in turn;
# writes NAME's times to $work/t.NAME.
interleave() {
  local i side
  for side in "$@"; do : >"$work/t.${side%%=*}"; done
  for ((i = 0; i < N; i++)); do
    for side in "$@"; do
      eval "us ${side#*=}" >>"$work/t.${side%%=*}"
    done
  done
}
med() { median <"$work/t.$1"; }

# Each side must do its job before it is timed: a refusal would read as a
# fast start.
check() {
  if ! out=$(eval "$1" 2>&1); then
    echo "bench-start.sh: '$1' fails: nothing to time: $out" >&2
    exit 1
  fi
}
rank="env ${rank_env[*]@Q}"
check "$rank $GL exec -- true"
check "$rank $work/select_gpu true"
check "$rank $work/rankwrap true"
sides=("gl=$rank $GL exec -- true" "wrap=$rank $work/select_gpu true"
  "gofloor=$rank $work/rankwrap true" "cgofloor=$rank $work/rankwrap-cgo true")
if [ -n "$OLD" ]; then
  if out=$(eval "$rank $OLD exec -- true" 2>&1); then
    sides+=("old=$rank $OLD exec -- true")
  else
    echo "  (before: '$OLD exec -- true' fails in the rank's environment, not timed: $out)"
  fi
fi
echo "== start-up: rank mode, 'gpulaunch exec -- true' as an srun rank (SLURM_LOCALID=0 of 2, a node file of 2 AMD GPUs) vs the select_gpu wrapper (median of $N interleaved runs)"
interleave "${sides[@]}"
awk -v g="$(med gl)" -v w="$(med wrap)" 'BEGIN { printf "  rank mode     %8.2f ms  select_gpu %8.2f ms  %6.2fx  (target <= 1.0x)\n", g/1000, w/1000, g/w }'
if [ -s "$work/t.old" ]; then
  awk -v o="$(med old)" -v g="$(med gl)" -v w="$(med wrap)" 'BEGIN { printf "  before        %8.2f ms  select_gpu %8.2f ms  %6.2fx  (this one: %.2fx the before)\n", o/1000, w/1000, o/w, g/o }'
fi
awk -v f="$(med gofloor)" -v c="$(med cgofloor)" -v w="$(med wrap)" 'BEGIN {
  printf "  floor: the wrapper in Go %.2f ms: %.2fx select_gpu; built with cgo %.2f ms: %.2fx%s\n", f/1000, f/w, c/1000, c/w,
    (f/w > 1.0 ? "  (the target is under what any Go binary takes here)" : "") }'

echo
echo "== start-up: 'gpulaunch version' vs a Go hello world (median of $N interleaved runs)"
check "$GL version"
sides=("glv=$GL version" "hello=$work/hello" "hellocgo=$work/hello-cgo" "hellozap=$work/hellozap")
[ -n "$OLD" ] && sides+=("oldv=$OLD version")
interleave "${sides[@]}"
size() { stat -c %s "$1" | awk '{printf "%.1f MB", $1/1e6}'; }
awk -v g="$(med glv)" -v h="$(med hello)" -v gs="$(size "$GL")" -v hs="$(size "$work/hello")" \
  'BEGIN { printf "  version       %8.2f ms  hello      %8.2f ms  %6.2fx  (target <= 1.5x)  sizes: gpulaunch %s, hello %s\n", g/1000, h/1000, g/h, gs, hs }'
if [ -n "$OLD" ]; then
  awk -v o="$(med oldv)" -v g="$(med glv)" -v h="$(med hello)" -v os="$(size "$OLD")" \
    'BEGIN { printf "  before        %8.2f ms  hello      %8.2f ms  %6.2fx  size %s (this one: %.2fx the before)\n", o/1000, h/1000, o/h, os, g/o }'
fi
awk -v c="$(med hellocgo)" -v z="$(med hellozap)" -v h="$(med hello)" 'BEGIN {
  printf "  floor: a cgo hello world %.2f ms: %.2fx hello%s\n", c/1000, c/h, (c/h > 1.5 ? "  (the target is under what any cgo binary takes here)" : "")
  printf "  floor: one that links zap too (net/http, crypto/tls), as the design card has gpulaunch do, %.2f ms: %.2fx hello%s\n", z/1000, z/h, (z/h > 1.5 ? "  (the target is under it)" : "") }'
