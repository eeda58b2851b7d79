#!/usr/bin/env bash
# bench-holder.sh: the holder of a task queue over many nodes (issue 26),
# measured by test/scale: the real gpulaunch as node 0 of a queue over
# N+1 nodes, and N simulated nodes (4 slots each) joined through
# pkg/nodelink's real Worker — the real key file, TLS over loopback —
# that answer every task at once. Every figure is printed beside its
# target as a ratio to it; with OLD=BINARY (bench.sh's BENCH_AGAINST
# build) the binary before is measured in the same run, interleaved, and
# each figure is also a ratio to its own.
#
# This machine's CPUs are shared by the holder and the simulated nodes,
# whose side of TLS and JSON costs about as much as the holder's: so the
# holder's own CPU time per task and per join is printed too, and the rate
# it would reach with the CPUs to itself (1e6 / its µs per task).
#
# The harness speaks the link's wire (pkg/nodelink/wire.go), which only a
# gpulaunch of the same form accepts: the binary before is measured with
# the harness of its own tree, OLD_SRC (bench.sh passes the BENCH_AGAINST
# tree), where it has one; a tree before the harness, or before the wire
# form, has its row say why it failed.
#
# Standalone after `make build`: BENCH_HOLDER_NODES (default "1000 10000"),
# BENCH_HOLDER_RUNS (default 1; medians of interleaved runs),
# BENCH_HOLDER_TASKS (default 30 per node, at least 200,000).
# `make bench-scale` runs it with 3 runs.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
GL=${GL:-bin/gpulaunch}
OLD=${OLD:-}
OLD_SRC=${OLD_SRC:-}
NODES=${BENCH_HOLDER_NODES:-1000 10000}
R=${BENCH_HOLDER_RUNS:-1}
JOIN_LIMIT=${BENCH_HOLDER_JOIN_LIMIT:-60s} # a holder that cannot take them all in this long fails the row
TMPDIR=${TMPDIR:-/tmp}
[ -x "$GL" ] || { echo "  $GL is missing: make build first"; exit 1; }
work=$(mktemp -d "$TMPDIR/bench-holder-XXXXXX")
trap 'rm -rf "$work"' EXIT
harness=$work/harness
$GO build -o "$harness" ./test/scale
old_harness=$harness
if [ -n "$OLD" ] && [ -d "$OLD_SRC/test/scale" ]; then
  old_harness=$work/harness-old
  (cd "$OLD_SRC" && $GO build -o "$old_harness" ./test/scale) || old_harness=$harness
fi

field() { sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p"; }
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# ratio VALUE TARGET: "VALUE/TARGET" to two places
ratio() { awk -v v="$1" -v t="$2" 'BEGIN { printf "%.2fx", v / t }'; }

echo "== task queue over many nodes: the holder alone (test/scale; N nodes x 4 slots, loopback TLS, tasks that end at once; median of $R)"
echo "   over 256 nodes they join in groups behind relays (docs/tasks.md); 'direct' is GPULAUNCH_NODE_GROUP=0, every node joining node 0, in the same run"
# one NAME BINARY GROUP N TASKS: a run of the harness into $work/holder-NAME.json
one() {
  h=$harness
  [ "$1" = old ] && h=$old_harness
  "$h" -gpulaunch "$2" -nodes "$4" -tasks "$5" -lose -join-limit "$JOIN_LIMIT" -group "$3" >>"$work/holder-$1.json" 2>"$work/holder-$1.err"
}
m() { field "$1" <"$work/holder-$2.json" | median; }
for n in $NODES; do
  tasks=${BENCH_HOLDER_TASKS:-$(( n * 30 > 200000 ? n * 30 : 200000 ))}
  for f in new direct old group; do : >"$work/holder-$f.json"; done
  for _ in $(seq "$R"); do
    one new "$GL" "" "$n" "$tasks" || { echo "  N=$n: the harness failed: $(grep -v -e '^victim' -e '^$' "$work/holder-new.err" | tail -1)"; exit 1; }
    if [ "$n" -gt 256 ]; then
      one direct "$GL" 0 "$n" "$tasks" || echo '{"failed":1}' >>"$work/holder-direct.json"
    fi
    if [ -n "$OLD" ]; then
      one old "$OLD" "" "$n" "$tasks" || echo '{"failed":1}' >>"$work/holder-old.json"
    fi
  done
  group=$(m group new)
  rate=$(m tasks_per_s new) cpu=$(m cpu_us_per_task new) join=$(m join_s new) jcpu=$(m join_cpu_us_per_node new)
  mem=$(m bytes_per_node new) lost=$(m lost_s new)
  why=$(sed -n 's/.*"lost_why":"\([^"]*\)".*/\1/p' "$work/holder-new.json" | sort | uniq -c | awk '{c=$1; $1=""; printf "%s%s%s", (NR>1 ? "; " : ""), substr($0,2), (c>1 ? " x" c : "")}')
  if [ "${group:-0}" -gt 0 ]; then
    how="in groups of $group behind $(( (n + group - 1) / group )) relays"
  else
    how="every node joining node 0"
  fi
  echo "  N = $n nodes, $tasks tasks, $how"
  awk -v r="$rate" -v c="$cpu" 'BEGIN {
    printf "    %-34s %10.0f tasks/s  = %.2fx target (>= 50,000 at 1,000 nodes)\n", "tasks dispatched and recorded", r, r / 50000
    printf "    %-34s %10.1f us/task  = %.0f tasks/s alone = %.2fx target\n", "  the holder'"'"'s CPU", c, 1e6 / c, 1e6 / c / 50000 }'
  awk -v j="$join" -v c="$jcpu" -v n="$n" 'BEGIN {
    printf "    %-34s %10.2f s        = %.2fx target (<= 10 s for 10,000)\n", "all N join at once", j, j / 10
    printf "    %-34s %10.0f us/node  = %.1f s for 10,000 alone = %.2fx target\n", "  the holder'"'"'s CPU", c, c * 10000 / 1e6, c * 10000 / 1e6 / 10 }'
  if [ "${group:-0}" -gt 0 ]; then
    # a relay's side of the join is one gpulaunch taking in its group: the
    # same code as node 0 taking in that many nodes, measured here alone
    "$harness" -gpulaunch "$GL" -nodes "$group" -tasks 20000 -group 0 >"$work/holder-group.json" 2>"$work/holder-group.err" || echo '{"failed":1}' >"$work/holder-group.json"
    awk -v rj="$(m relays_join_s new)" -v gj="$(m join_s group)" -v g="$group" -v hs=$(( n - (n + group - 1) / group )) 'BEGIN {
      printf "    %-34s %10.2f s        (node 0 takes in the relays)\n", "  the relays joined", rj
      printf "    %-34s %10.2f s        (one gpulaunch taking in %d nodes, alone: each relay, on its own node)\n", "  a group joined its relay", gj, g
      printf "    %-34s %10.2f s        = %.2fx target: relays, then the groups at once, each on its own node\n", "  so, with a node per relay", rj + gj, (rj + gj) / 10
      printf "    %-34s                  (the join above: both sides of the groups'"'"' %d TLS handshakes on this machine'"'"'s 2 CPUs)\n", "", hs }'
  fi
  awk -v b="$mem" 'BEGIN {
    if (b < 0) printf "    %-34s %10s KiB/node   (VmRSS fell: its growth is below the garbage collector'"'"'s noise)\n", "holder memory per node joined", "~0"
    else printf "    %-34s %10.1f KiB/node = %.2fx target (<= 64 KiB)\n", "holder memory per node joined", b / 1024, b / 65536 }'
  awk -v l="$lost" -v why="$why" 'BEGIN { printf "    %-34s %10.3f s        = %.2fx target (<= 1 s; a silent node: 10 beats = 20 s); the holder: %s\n", "lost node: its tasks out again", l, l / 1, why }'
  recs=$(m joblog_records new)
  echo "    joblog: $recs records of $tasks tasks, none lost (written in groups, one write per loop turn, before the holder answers)"
  # compare NAME LABEL: this run against another in the same invocation
  compare() {
    if grep -q failed "$work/holder-$1.json"; then
      echo "    $2: failed at N = $n: $(grep -v -e '^victim' -e '^$' "$work/holder-$1.err" | tail -1 | cut -c1-160)"
      return
    fi
    awk -v r="$rate" -v c="$cpu" -v j="$join" -v jc="$jcpu" -v b="$mem" -v l="$lost" -v label="$2" \
      -v or="$(m tasks_per_s "$1")" -v oc="$(m cpu_us_per_task "$1")" -v oj="$(m join_s "$1")" -v ojc="$(m join_cpu_us_per_node "$1")" -v ob="$(m bytes_per_node "$1")" -v ol="$(m lost_s "$1")" 'BEGIN {
      printf "    %s: %.0f tasks/s (%.1f us/task), join %.2f s (%.0f us/node), %.1f KiB/node, lost %.3f s\n", label, or, oc, oj, ojc, ob / 1024, ol
      printf "      this one: %.2fx the rate, %.2fx the CPU per task, %.2fx the join time, %.2fx the CPU per join, %.2fx the memory, %.2fx the lost-node time\n", r / or, c / oc, j / oj, jc / ojc, b / ob, l / ol }'
  }
  [ "${group:-0}" -gt 0 ] && compare direct "direct (GPULAUNCH_NODE_GROUP=0)"
  [ -n "$OLD" ] && compare old "before ($OLD)"
done
