#!/usr/bin/env bash
# gpu-smoke.sh [SECONDS]: the real-NVML check, on a machine with NVIDIA GPUs.
#
# Runs `gpulaunch info`, then one instance per GPU of a small GPU workload
# through gpulaunch with telemetry every second, prints the run report,
# and checks it: every instance exited 0, its GPUs were busy and held
# memory, and launch verification found nothing. The workload is the
# first of these the machine has: PyTorch, CuPy, or test/gpu/busy.cu built
# with nvcc. Then, where nvidia-cuda-mps-control is installed, the same
# workload 4 times per GPU under --mps: the driver must list the instances
# as MPS clients, and no daemon may be left after the run.
# Exit 0: passed; 1: a check failed; 2: no GPU or no workload.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_BUSY=${1:-15}

if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  echo "gpu-smoke: no NVIDIA GPU on this machine (no /dev/nvidia0…): run it on a GPU node" >&2
  exit 2
fi
export TMPDIR=${TMPDIR:-$PWD/.tmp}
mkdir -p "$TMPDIR"
[ -x bin/gpulaunch ] || make -s build
GL=bin/gpulaunch
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== nvidia-smi"
nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,memory.total --format=csv || true
echo
echo "== gpulaunch version"
"$GL" version
echo
echo "== gpulaunch info"
"$GL" info
echo

py=$(command -v python3 || true)
if [ -n "$py" ] && "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  what="PyTorch matmuls"
  cat >"$out/work.py" <<'PY'
import os, sys, time, torch
seconds = float(sys.argv[1])
props = torch.cuda.get_device_properties(0)
print(f"instance {os.environ.get('GPULAUNCH_INSTANCE')}: {props.name} at {getattr(props, 'pci_bus_id', '?')} "
      f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')})", flush=True)
a = torch.randn(4096, 4096, device="cuda")
end = time.time() + seconds
while time.time() < end:
    a = a @ a
    a = a / a.norm()
    torch.cuda.synchronize()
PY
  work=("$py" "$out/work.py" "$SECONDS_BUSY")
elif [ -n "$py" ] && "$py" -c 'import cupy; cupy.cuda.runtime.getDeviceCount()' 2>/dev/null; then
  what="CuPy matmuls"
  cat >"$out/work.py" <<'PY'
import os, sys, time, cupy
seconds = float(sys.argv[1])
print(f"instance {os.environ.get('GPULAUNCH_INSTANCE')}: CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}", flush=True)
a = cupy.random.rand(4096, 4096, dtype=cupy.float32)
end = time.time() + seconds
while time.time() < end:
    a = a @ a
    a = a / cupy.linalg.norm(a)
    cupy.cuda.Device().synchronize()
PY
  work=("$py" "$out/work.py" "$SECONDS_BUSY")
elif command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  what="test/gpu/busy.cu (nvcc)"
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$nvcc" -O2 -o "$out/busy" test/gpu/busy.cu
  work=("$out/busy" "$SECONDS_BUSY")
else
  echo "gpu-smoke: no GPU workload here: install PyTorch or CuPy for python3, or the CUDA toolkit (nvcc)" >&2
  exit 2
fi

echo "== gpulaunch -l --monitor-interval 1s --report REPORT -- $what for ${SECONDS_BUSY}s (one instance per GPU)"
set +e
"$GL" -l --monitor-interval 1s --report "$out/report.json" -- "${work[@]}"
rc=$?
set -e
echo
echo "== report"
cat "$out/report.json"
echo
echo "== checks"
set +e
python3 - "$out/report.json" "$rc" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
bad = []
if rc != 0:
    bad.append(f"gpulaunch exited {rc}")
if not r["instances"]:
    bad.append("no instance ran")
for i in r["instances"]:
    n = i["instance"]
    if i["exit_code"] != 0:
        bad.append(f"instance {n} exited {i['exit_code']} {i['signal']}")
    if not i["gpus"]:
        bad.append(f"instance {n} had no GPU")
    if i["gpu_util_peak_pct"] <= 0:
        bad.append(f"instance {n}: its GPU never showed utilisation")
    if i["gpu_mem_peak_bytes"] <= 0:
        bad.append(f"instance {n}: no process of it held GPU memory on its GPU (NVML process matching)")
    bad += [f"instance {n}: {w}" for w in i["warnings"]]
    print(f"instance {n}: GPU {','.join(i['gpus'])} CPUs {i['cpus']}: util mean {i['gpu_util_mean_pct']}% peak {i['gpu_util_peak_pct']}%, "
          f"GPU memory peak {i['gpu_mem_peak_bytes'] / 2**20:.0f} MiB, exit {i['exit_code']}")
gpus = [g for i in r["instances"] for g in i["gpus"]]
if len(gpus) != len(set(gpus)):
    bad.append(f"two instances share a GPU: {gpus}")
for b in bad:
    print("FAIL:", b)
print("gpu-smoke: PASS" if not bad else f"gpu-smoke: FAIL ({len(bad)} problem(s))")
sys.exit(1 if bad else 0)
PY
smoke=$?
set -e

# MPS: 4 instances on each GPU under --mps (one control daemon per GPU);
# while they run, the driver's process list must show them as MPS clients
# (type M+C), and after the run no daemon may be left.
echo
if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  echo "== MPS: SKIP: nvidia-cuda-mps-control is not on PATH (Debian: nvidia-cuda-mps)"
  exit $smoke
fi
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
echo "== gpulaunch -n $((4 * ngpu)) -O --mps -- $what for ${SECONDS_BUSY}s (4 instances per GPU under MPS)"
set +e
"$GL" -n $((4 * ngpu)) -O --mps -l --monitor-interval 1s --report "$out/mps.json" -- "${work[@]}" &
glpid=$!
sleep $(( SECONDS_BUSY / 2 ))
nvidia-smi | tee "$out/mps-smi.txt"
wait $glpid
mrc=$?
set -e
clients=$(grep -c 'M+C' "$out/mps-smi.txt" || true)
left=$(pgrep -c -f 'nvidia-cuda-mps-(control|server)' || true)
echo "MPS: gpulaunch exited $mrc; $clients MPS client(s) in nvidia-smi while it ran (want $((4 * ngpu))); $left MPS process(es) left after it"
if [ "$mrc" != 0 ] || [ "$clients" -lt $((4 * ngpu)) ] || [ "$left" != 0 ]; then
  echo "gpu-smoke MPS: FAIL"
  exit 1
fi
echo "gpu-smoke MPS: PASS"
exit $smoke
