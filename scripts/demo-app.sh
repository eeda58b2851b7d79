#!/bin/sh
# The demo app for `make demo`: each instance says what it was given, as it
# sees it from the inside (its environment and /proc/self).
cpus=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
policy=$(awk 'NR == 1 {print $2}' /proc/self/numa_maps 2>/dev/null)
echo "instance $GPULAUNCH_INSTANCE of $GPULAUNCH_NINSTANCES (RANK $RANK): CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
echo "planned CPUs $GPULAUNCH_CPUS; running on CPUs $cpus; memory policy $policy; OMP_NUM_THREADS=$OMP_NUM_THREADS"
# On a simulated node there is no GPU to load: declare the use a real app
# would make, which the simulated NVML then reports (pkg/gpu/declared.go).
if [ -n "${GPULAUNCH_SIMULATED_USAGE_DIR:-}" ] && [ -n "$GPULAUNCH_GPUS" ]; then
  echo "${GPULAUNCH_GPUS%%,*} $((40 + 7 * GPULAUNCH_INSTANCE)) $((2048 * (GPULAUNCH_INSTANCE + 1)))" >"$GPULAUNCH_SIMULATED_USAGE_DIR/$$"
fi
sleep "0.$((5 + GPULAUNCH_INSTANCE % 4))"
