#!/bin/sh
# amdahl-app.sh: a stand-in for a GPU code whose scaling is known, for
# `gpulaunch scale` (docs/scaling.md). A fraction AMDAHL_SERIAL (default
# 0.1) of its work does not parallelise, so on G GPUs it runs
# 1 / (f + (1 - f) / G) times as fast as on one: 1.82 on 2, 3.08 on 4,
# 4.71 on 8. Rank 0 prints "throughput: X samples/s" (1000 on one GPU).
# G is what it was given: its own GPUs (GPULAUNCH_GPUS) times the
# data-parallel ranks (WORLD_SIZE). On a simulated node it declares its
# GPUs busy by the parallel part's share, as a real code's would show.
f=${AMDAHL_SERIAL:-0.1}
own=$(echo "${GPULAUNCH_GPUS:-}" | awk -F, '{print NF}')
g=$((own * ${WORLD_SIZE:-1}))
[ "$g" -ge 1 ] || g=1
if [ -n "${GPULAUNCH_SIMULATED_USAGE_DIR:-}" ] && [ -n "${GPULAUNCH_GPUS:-}" ]; then
  util=$(awk -v f="$f" -v g="$g" 'BEGIN { printf "%d", 100 * (1 - f) / g / (f + (1 - f) / g) }')
  for uuid in $(echo "$GPULAUNCH_GPUS" | tr , ' '); do
    echo "$uuid $util 4096"
  done >"$GPULAUNCH_SIMULATED_USAGE_DIR/$$"
fi
sleep "${AMDAHL_SECONDS:-1}"
if [ "${RANK:-0}" = 0 ]; then
  awk -v f="$f" -v g="$g" 'BEGIN { printf "throughput: %.1f samples/s\n", 1000 / (f + (1 - f) / g) }'
fi
