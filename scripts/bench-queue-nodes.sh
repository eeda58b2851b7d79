#!/usr/bin/env bash
# bench-queue-nodes.sh: inside one allocation of the two-node testbed
# (TESTBED_NODES=2 scripts/slurm-testbed.sh up), the throughput of a task
# queue over two nodes (srun --ntasks-per-node=1 gpulaunch --each-line:
# node 0 holds the queue, both run tasks) against the same queue on one
# node with as many slots, and against one srun per task (xargs -P). All
# three run in the same job, alternately, R times; medians, tasks/s and
# their ratios. Both "nodes" are this machine: the ratio to one node is
# what the network hop, the TLS and the holder cost.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${BENCH_RUNS:-3}
N=${BENCH_TASKS:-5000}
S=${BENCH_SRUNS:-200} # one srun per task is slow: a sample of the tasks
ROOT=${TESTBED_ROOT:-/var/lib/gpulaunch-testbed}
GL=${GL:-bin/gpulaunch}
nodes=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle" && $1 ~ /^gl-node/' | wc -l || true)
if [ "$(id -u)" != 0 ] || [ "${nodes:-0}" -lt 2 ]; then
  echo "  skipped: needs root and the two-node testbed (sudo TESTBED_NODES=2 scripts/slurm-testbed.sh up)"
  exit 0
fi
mkdir -p "$ROOT/work"
work=$(mktemp -d "$ROOT/work/bench-nodes-XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$GL" "$work/gpulaunch"
cp scripts/bench-job-lib.sh "$work/"
seq "$N" >"$work/tasks"
head -n "$S" "$work/tasks" >"$work/sample"
cat >"$work/job.sh" <<JOB
#!/bin/bash
export GPULAUNCH_NODE_FILE=$ROOT/node.json
GL=$work/gpulaunch
. $work/bench-job-lib.sh # now_us, median, once
for i in \$(seq $R); do
  once nodes srun -N2 --ntasks-per-node=1 -c2 \$GL -n 2 -G 0 -O --each-line $work/tasks -- true
  once one srun -N1 -n1 -c4 \$GL -n 4 -G 0 -O --each-line $work/tasks -- true
  once sruns sh -c "xargs -P 4 -I{} srun -N1 -n1 -c1 --exclusive true {} <$work/sample"
done >"$work/times"
for k in nodes one sruns; do echo "\$k \$(awk -v k=\$k '\$1 == k {print \$2}' "$work/times" | median)"; done
JOB
id=$(sbatch --parsable -D "$work" -o "$work/out" -N2 --ntasks-per-node=1 -c4 "$work/job.sh")
while squeue -h -j "$id" 2>/dev/null | grep -q .; do sleep 0.2; done
awk -v n="$N" -v s="$S" '
  { m[$1] = $2 }
  END {
    if (!(("nodes" in m) && ("sruns" in m) && m["nodes"] > 0)) { print "  the benchmark job failed"; exit 1 }
    nodes = n / (m["nodes"] / 1e6); one = n / (m["one"] / 1e6); sruns = s / (m["sruns"] / 1e6)
    printf "  %-44s %10.1f tasks/s\n", "2 nodes x 2 slots (one queue, node 0 holds it)", nodes
    printf "  %-44s %10.1f tasks/s  -> %.2fx  (target >= 0.8x)\n", "1 node x 4 slots", one, nodes / one
    printf "  %-44s %10.1f tasks/s  -> %.1fx  (target >= 20x)\n", "one srun per task (xargs -P 4, " s " tasks)", sruns, nodes / sruns
  }' "$work/out" || { cat "$work/out"; exit 1; }
