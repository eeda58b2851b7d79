#!/usr/bin/env bash
# bench-slurm.sh: inside one real allocation of the testbed
# (scripts/slurm-testbed.sh), the wall time to start and finish N
# instances of `true` with gpulaunch against what users write by hand:
# N background `srun --exclusive -n1 … true &` lines and `wait`. Both run
# in the same job, alternately, R times; medians and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${BENCH_RUNS:-7}
ROOT=${TESTBED_ROOT:-/var/lib/gpulaunch-testbed}
GL=${GL:-bin/gpulaunch} # the gpulaunch to measure (make bench builds bin/gpulaunch)
OLD=${OLD:-}            # a gpulaunch to measure beside it, as 'before' (bench.sh's BENCH_AGAINST)
if [ "$(id -u)" != 0 ] || ! sinfo -h -o %T 2>/dev/null | grep -q -E 'idle|mix'; then
  echo "  skipped: needs root and the Slurm testbed (sudo scripts/slurm-testbed.sh up)"
  exit 0
fi
# the jobs' working directories live under $ROOT/work, which a fresh
# testbed has not made yet (only the integration tests make it)
mkdir -p "$ROOT/work"
work=$(mktemp -d "$ROOT/work/bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$GL" "$work/gpulaunch"
cp scripts/bench-job-lib.sh "$work/"
before=:
if [ -n "$OLD" ]; then
  cp "$OLD" "$work/gpulaunch-before"
  before="once old16 $work/gpulaunch-before -n 16 -G 0 -O -- true"
fi
cat >"$work/job.sh" <<JOB
#!/bin/bash
export GPULAUNCH_NODE_FILE=$ROOT/node.json
GL=$work/gpulaunch
. $work/bench-job-lib.sh # now_us, median, once
sruns() { # n gres: the hand-written pattern
  local i
  for ((i = 0; i < \$1; i++)); do srun --exclusive -n1 -c1 --gres=\$2 true & done
  wait
}
for i in \$(seq $R); do
  once gl4 \$GL -n 4 -- true
  once srun4 sruns 4 gpu:1
  once gl16 \$GL -n 16 -G 0 -O -- true
  once srun16 sruns 16 none
  once sh16 sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do /bin/true & done; wait'
  $before
done >"$work/times"
for k in gl4 srun4 gl16 srun16 sh16 old16; do echo "\$k \$(awk -v k=\$k '\$1 == k {print \$2}' "$work/times" | median)"; done
JOB
id=$(sbatch --parsable -D "$work" -o "$work/out" -n16 -c1 --gres=gpu:4 "$work/job.sh")
while squeue -h -j "$id" 2>/dev/null | grep -q .; do sleep 0.2; done
awk '
  { m[$1] = $2 }
  END {
    if (!(("gl4" in m) && ("srun16" in m))) { print "  the benchmark job failed"; exit 1 }
    printf "  %-4s %16s %26s %10s\n", "N", "gpulaunch -n N", "N x srun --exclusive & wait", "speed-up"
    printf "  %-4s %13.1f ms %23.1f ms %9.1fx\n", 4, m["gl4"]/1000, m["srun4"]/1000, m["srun4"]/m["gl4"]
    printf "  %-4s %13.1f ms %23.1f ms %9.1fx  (target >= 30x)\n", 16, m["gl16"]/1000, m["srun16"]/1000, m["srun16"]/m["gl16"]
    printf "  16   no launcher at all (16 x /bin/true & wait, unbound): %.1f ms, %.1fx srun: the most any launcher could show here\n", m["sh16"]/1000, m["srun16"]/m["sh16"]
    if (m["old16"] > 0) printf "  16   before %.1f ms (%.1fx srun): this one takes %.2fx its time\n", m["old16"]/1000, m["srun16"]/m["old16"], m["gl16"]/m["old16"]
  }' "$work/out" || { cat "$work/out"; exit 1; }
