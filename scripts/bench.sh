#!/usr/bin/env bash
# make bench: every figure is a ratio or score against a baseline run in
# the same invocation, never a timed assertion.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

make -s build >/dev/null
GL=bin/gpulaunch
R=${BENCH_RUNS:-7}
TMPDIR=${TMPDIR:-/tmp}
# BENCH_AGAINST=REV (a commit, tag or branch) builds that revision too and
# runs it beside this one in the plan, start, launch and task-queue sections, so that a
# change is measured against the code before it in the same run.
OLD=
if [ -n "${BENCH_AGAINST:-}" ]; then
  src=$TMPDIR/bench-against
  rm -rf "$src" && mkdir -p "$src"
  git archive "$BENCH_AGAINST" | tar -x -C "$src"
  (cd "$src" && $GO build -o "$TMPDIR/gpulaunch-against" ./cmd/gpulaunch)
  OLD=$TMPDIR/gpulaunch-against
  echo
  echo "== also measuring $BENCH_AGAINST ($(git rev-parse --short "$BENCH_AGAINST")) as 'before'"
fi

echo "== plan time (pkg/binding BenchmarkPlan: N instances on one GPU each, on a node of 16 x N CPUs)"
echo "   per instance against 8 instances' per-instance time: 1.0x is linear; target < 5 ms at 512"
plan_ms() { # dir: ms per plan for 8, 64, 512 instances
  (cd "$1" && $GO test -run '^$' -bench 'BenchmarkPlan/' -benchtime 20x ./pkg/binding) |
    awk '/^BenchmarkPlan/ { split($1, a, "="); sub(/-[0-9]+$/, "", a[2]); print a[2], $3/1e6 }'
}
plan_ms . >"$TMPDIR/bench-plan"
awk 'NR == 1 { base = $2 / $1 } { printf "  %-5s %10.3f ms/plan  %6.1f us/instance  %5.2fx of 8'"'"'s per instance%s\n", $1, $2, 1000*$2/$1, ($2/$1)/base, ($1 == 512 ? ($2 < 5 ? "  (target < 5 ms: met)" : "  (target < 5 ms: NOT met)") : "") }' "$TMPDIR/bench-plan"
if [ -n "$OLD" ]; then
  plan_ms "$TMPDIR/bench-against" | awk -v f="$TMPDIR/bench-plan" 'BEGIN { while ((getline l < f) > 0) { split(l, x, " "); now[x[1]] = x[2] } }
    { printf "  %-5s before %.3f ms/plan: this one takes %.3fx its time\n", $1, $2, now[$1]/$2 }'
fi

echo
echo "== start: gpulaunch's rank mode and version against what they replace (scripts/bench-start.sh)"
if [ -x scripts/bench-start.sh ]; then OLD="$OLD" scripts/bench-start.sh; else echo "  scripts/bench-start.sh: not there"; fi

echo
echo "== NVML only where it adds something: with a stand-in libnvidia-ml costing an H200's 10 ms init + 10 ms shutdown, against none (scripts/bench-nvml.sh)"
echo "   1.0x: the command does not pay for NVML (a run that gives no GPU); info loads it by design"
if [ -x scripts/bench-nvml.sh ]; then OLD="$OLD" scripts/bench-nvml.sh; else echo "  scripts/bench-nvml.sh: not there"; fi

echo
echo "== Lmod: loading gpulaunch's module against a plain module (scripts/bench-lmod.sh); 1.0x: a plain module"
old_lua=
[ -n "$OLD" ] && [ -f "$TMPDIR/bench-against/packaging/lmod/gpulaunch.lua" ] && old_lua=$TMPDIR/bench-against/packaging/lmod/gpulaunch.lua
if [ -x scripts/bench-lmod.sh ]; then OLD_MODULEFILE="$old_lua" scripts/bench-lmod.sh; else echo "  scripts/bench-lmod.sh: not there"; fi

echo
echo "== placement score: share of each instance's CPUs local to its GPU (-n = devices: GPUs up to 8, LUMI's GCDs, Aurora's tiles)"
echo "   gpulaunch against the site-wrapper baseline (GPU i, i-th block of the lowest CPUs)"
printf '  %-16s %10s %10s\n' topology gpulaunch naive
$GO test -run '^$' -bench 'BenchmarkPlacementScore' -benchtime 1x ./pkg/binding |
  awk '/^BenchmarkPlacementScore/ { split($1, a, "/"); sub(/-[0-9]+$/, "", a[2]);
        for (i = 1; i <= NF; i++) { if ($i == "gpulaunch-local%") g = $(i-1); if ($i == "naive-local%") n = $(i-1) }
        printf "  %-16s %9.1f%% %9.1f%%\n", a[2], g, n }' | sort

# ---- supervision (issue 3): gpulaunch against what users write today ----
now_us() { echo $(( $(date +%s%N) / 1000 )); }
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
time_us() { local s e; s=$(now_us); "$@" >/dev/null 2>&1; e=$(now_us); echo $((e - s)); }

echo
echo "== launch: start and finish N instances of true (median of $R runs)"
printf '  %-4s %14s %14s %8s\n' N gpulaunch 'sh: true &…' ratio
for n in 8 64; do
  "$GL" -n "$n" -G 0 -O -- /bin/true >/dev/null 2>&1 || { echo "  $GL -n $n -G 0 -O -- /bin/true fails: nothing to time"; exit 1; }
  g=$(for _ in $(seq "$R"); do time_us "$GL" -n "$n" -G 0 -O -- /bin/true; done | median)
  s=$(for _ in $(seq "$R"); do time_us sh -c "i=0; while [ \$i -lt $n ]; do /bin/true & i=\$((i+1)); done; wait"; done | median)
  awk -v n="$n" -v g="$g" -v s="$s" 'BEGIN { printf "  %-4s %11.1f ms %11.1f ms %7.2fx  (target <= 2x)\n", n, g/1000, s/1000, g/s }'
  if [ -n "$OLD" ]; then
    # the same run: -O where the old binary knows it (it came with the
    # refusal of more instances than CPUs); a run that fails is not timed,
    # or its refusal would read as a fast launch
    oldO=-O
    "$OLD" -n 1 -G 0 -O -- /bin/true >/dev/null 2>&1 || oldO=
    if ! "$OLD" -n "$n" -G 0 $oldO -- /bin/true >/dev/null 2>&1; then
      echo "  $n    before: not timed, '$OLD -n $n -G 0 $oldO -- /bin/true' fails"
      continue
    fi
    o=$(for _ in $(seq "$R"); do time_us "$OLD" -n "$n" -G 0 $oldO -- /bin/true; done | median)
    awk -v n="$n" -v g="$g" -v o="$o" 'BEGIN { printf "  %-4s before %.1f ms: this one takes %.2fx its time\n", n, o/1000, g/o }'
  fi
done

echo
echo "== labelled output: 8 writers x 250,000 lines, gpulaunch -l to /dev/null vs the same writers through cat"
writer='yes "the quick brown fox jumps over the lazy dog 0123456789" | head -n 250000'
g=$(for _ in $(seq 3); do time_us sh -c "$GL -n 8 -G 0 -O -l -- sh -c '$writer' >/dev/null 2>/dev/null"; done | median)
c=$(for _ in $(seq 3); do time_us sh -c "for i in 1 2 3 4 5 6 7 8; do sh -c '$writer' & done | cat >/dev/null; wait"; done | median)
awk -v g="$g" -v c="$c" 'BEGIN { mb = 8*250000*56/1e6; printf "  gpulaunch -l %.0f MB/s, cat %.0f MB/s: %.2fx of cat (target >= 0.8x)\n", mb/(g/1e6), mb/(c/1e6), c/g }'
if [ -n "$OLD" ]; then
  o=$(for _ in $(seq 3); do time_us sh -c "$OLD -n 8 -G 0 -O -l -- sh -c '$writer' >/dev/null 2>/dev/null"; done | median)
  awk -v o="$o" -v c="$c" -v g="$g" 'BEGIN { printf "  before: %.2fx of cat; this one runs at %.2fx its rate\n", c/o, o/g }'
fi

echo
echo "== supervising 64 sleeping instances for 10 s: gpulaunch's own RSS and CPU"
"$GL" -n 64 -G 0 -O -- sleep 10 >/dev/null 2>&1 &
pid=$!
sleep 1
peak=0
t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
s0=$(now_us)
for _ in $(seq 16); do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  [ "${rss:-0}" -gt "$peak" ] && peak=$rss
  sleep 0.5
done
t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
s1=$(now_us)
wait "$pid" || true
hz=$(getconf CLK_TCK)
awk -v p="$peak" -v t="$((t1 - t0))" -v hz="$hz" -v us="$((s1 - s0))" \
  'BEGIN { printf "  peak RSS %.1f MiB (target <= 30 MiB); CPU %.2f%% of one core over %.1f s while supervising (target <= 1%%)\n", p/1024, 100*t/hz/(us/1e6), us/1e6 }'

echo
echo "== the sampler's own cost: 64 sleeping instances for 20 s at the default --monitor-interval (2s),"
echo "   against the same run with telemetry off, both at once; CPU time from /proc/PID/task/*/schedstat"
# every thread of the process (the Go runtime spreads work over several)
cpu_ns() { cat /proc/$1/task/*/schedstat | awk '{s += $1} END {print s}'; }
"$GL" -n 64 -G 0 -O -- sleep 23 >/dev/null 2>&1 &
on=$!
"$GL" -n 64 -G 0 -O --monitor-interval 0 -- sleep 23 >/dev/null 2>&1 &
off=$!
sleep 1.5
a0=$(cpu_ns $on); b0=$(cpu_ns $off); s0=$(now_us)
sleep 20
a1=$(cpu_ns $on); b1=$(cpu_ns $off); s1=$(now_us)
wait "$on" "$off" || true
awk -v a="$((a1 - a0))" -v b="$((b1 - b0))" -v us="$((s1 - s0))" 'BEGIN {
  w = us * 1000; printf "  with sampler %.3f%%, without %.3f%% of one core: the sampler costs %.3f%% (target < 0.5%%)\n", 100*a/w, 100*b/w, 100*(a-b)/w }'

echo
echo "== task queue: 5,000 tasks of true on 2 slots (one argument each), against xargs -P 2 and GNU parallel -j 2"
seq 5000 >"$TMPDIR/bench-tasks"
# The floor is a small C launcher (a thread per slot, posix_spawn + wait,
# nothing else): no launcher can beat it, so it shows how much of the rate
# the tasks themselves take on this machine. Its bound form pins each
# slot's thread, and so its children, to one CPU, as gpulaunch binds its
# slots: the ceiling for a launcher that binds.
floor=
if cc -O2 -pthread -o "$TMPDIR/floor-launcher" scripts/floor-launcher.c 2>/dev/null; then floor=$TMPDIR/floor-launcher; fi
g=() x=() f=() fb=() o=()
for _ in 1 2 3; do # interleaved, so that all see the same machine
  g+=("$(time_us "$GL" -n 2 -G 0 --each-line "$TMPDIR/bench-tasks" -- true {})")
  [ -z "$OLD" ] || o+=("$(time_us "$OLD" -n 2 -G 0 --each-line "$TMPDIR/bench-tasks" -- true {})")
  x+=("$(time_us sh -c "xargs -P 2 -n 1 true <'$TMPDIR/bench-tasks'")")
  if [ -n "$floor" ]; then
    f+=("$(time_us "$floor" 5000 2 true)")
    fb+=("$(time_us "$floor" 5000 2 true bound)")
  fi
done
g=$(printf '%s\n' "${g[@]}" | median)
x=$(printf '%s\n' "${x[@]}" | median)
awk -v g="$g" -v x="$x" 'BEGIN { printf "  gpulaunch %.0f tasks/s, xargs %.0f tasks/s: %.2fx of xargs (target >= 0.7x)\n", 5000/(g/1e6), 5000/(x/1e6), x/g }'
if [ -n "$OLD" ]; then
  o=$(printf '%s\n' "${o[@]}" | median)
  awk -v g="$g" -v o="$o" 'BEGIN { printf "  before: %.0f tasks/s; this one runs at %.2fx its rate\n", 5000/(o/1e6), o/g }'
fi
if [ -n "$floor" ]; then
  f=$(printf '%s\n' "${f[@]}" | median)
  fb=$(printf '%s\n' "${fb[@]}" | median)
  awk -v g="$g" -v f="$f" -v fb="$fb" 'BEGIN {
    printf "  floor (posix_spawn + wait, nothing else) %.0f tasks/s, bound %.0f tasks/s: gpulaunch reaches %.0f%% and %.0f%% of them\n",
      5000/(f/1e6), 5000/(fb/1e6), 100*f/g, 100*fb/g }'
fi
if command -v parallel >/dev/null; then
  p=$(time_us sh -c "parallel -j 2 true {} <'$TMPDIR/bench-tasks'")
  awk -v g="$g" -v p="$p" 'BEGIN { printf "  GNU parallel %.0f tasks/s: gpulaunch is %.1fx faster (target >= 5x)\n", 5000/(p/1e6), p/g }'
  [ -z "$floor" ] || awk -v f="$f" -v fb="$fb" -v p="$p" 'BEGIN {
    printf "  the floors are %.1fx and, bound, %.1fx GNU parallel: the most a launcher could show on this machine\n", p/f, p/fb }'
else
  echo "  GNU parallel: not installed (apt-get install parallel; scripts/slurm-testbed.sh installs it)"
fi

echo
echo "== inside one Slurm allocation: N instances of true, gpulaunch vs N background srun --exclusive + wait (median of ${BENCH_RUNS:-7})"
OLD="$OLD" scripts/bench-slurm.sh

echo
echo "== a task queue over two nodes: 5,000 tasks of true over 2 nodes x 2 slots, against the same queue on one node's 4 slots and one srun per task"
# It needs the two-node testbed: when this machine runs the one-node one
# (what `scripts/slurm-testbed.sh up` starts), it is switched to two nodes
# for this section and back after it.
switched=
if [ "$(id -u)" = 0 ] && sinfo -h -N -o %N 2>/dev/null | grep -qx vm; then
  if TESTBED_NODES=2 scripts/slurm-testbed.sh up >"$TMPDIR/bench-testbed.log" 2>&1; then
    switched=1
  else
    echo "  the two-node testbed did not come up ($TMPDIR/bench-testbed.log)"
  fi
fi
qrc=0
scripts/bench-queue-nodes.sh || qrc=$?
if [ -n "$switched" ]; then
  scripts/slurm-testbed.sh up >"$TMPDIR/bench-testbed.log" 2>&1 || echo "  the one-node testbed did not come back ($TMPDIR/bench-testbed.log)"
fi
[ "$qrc" = 0 ] || exit "$qrc"

echo
OLD="$OLD" OLD_SRC="${BENCH_AGAINST:+$TMPDIR/bench-against}" scripts/bench-holder.sh
