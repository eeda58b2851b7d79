#!/usr/bin/env bash
# gpu-smoke.sh [SECONDS]: the first real-NVML check, now part of
# scripts/gpu-check.sh (`make gpu-check`), which runs its checks: gpulaunch
# info against nvidia-smi, one instance per GPU busy for SECONDS (default 8)
# with telemetry and its report checked, and 4 instances per GPU under MPS.
# Exit 0: passed; 1: a check failed; 2: no GPU.
GPU_CHECK_BUSY=${1:-8} exec "$(dirname "$0")/gpu-check.sh" info telemetry mps
