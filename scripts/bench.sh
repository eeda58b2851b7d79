#!/usr/bin/env bash
# make bench: every figure is a ratio or score against a baseline run in
# the same invocation, never a timed assertion.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

echo "== plan time (pkg/binding BenchmarkPlan: 8, 64, 512 instances on one GPU each)"
$GO test -run '^$' -bench 'BenchmarkPlan/' -benchtime 20x ./pkg/binding | awk '/^BenchmarkPlan/ {printf "  %-28s %12.3f ms/plan\n", $1, $3/1e6}'

echo
echo "== placement score: share of each instance's CPUs local to its GPU (-n = GPUs, up to 8)"
echo "   gpulaunch against the site-wrapper baseline (GPU i, i-th block of the lowest CPUs)"
printf '  %-16s %10s %10s\n' topology gpulaunch naive
$GO test -run '^$' -bench 'BenchmarkPlacementScore' -benchtime 1x ./pkg/binding |
  awk '/^BenchmarkPlacementScore/ { split($1, a, "/"); sub(/-[0-9]+$/, "", a[2]);
        for (i = 1; i <= NF; i++) { if ($i == "gpulaunch-local%") g = $(i-1); if ($i == "naive-local%") n = $(i-1) }
        printf "  %-16s %9.1f%% %9.1f%%\n", a[2], g, n }' | sort
