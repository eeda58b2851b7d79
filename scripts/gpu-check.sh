#!/usr/bin/env bash
# gpu-check.sh [CHECK…]: gpulaunch against a real NVIDIA GPU (`make gpu-check`).
#
# One script of at most 4 minutes (GPU_CHECK_BUDGET seconds, default 240),
# run from the repository root with bin/gpulaunch already built: a
# bin/gpulaunch that exists is used as it is (a GPU machine may have no Go
# or gcc), and its version is printed beside the tree's commit. The checks,
# in the order they run (give some of their names to run only those):
#
#   info          `gpulaunch info --json` names the GPUs nvidia-smi names (UUID, PCI address)
#   rank-mode     rank mode's start (`exec`, with the driver's files and with a node file)
#                 against the 3-line wrapper, medians of interleaved runs, and whether
#                 NVML was loaded (ld.so's LD_DEBUG): not for -G 0, a node file, or
#                 rank mode where /proc/driver/nvidia names the GPUs
#   telemetry     one instance per GPU busy for GPU_CHECK_BUSY s (default 8): each exits 0
#                 on its own GPU, with GPU use, GPU memory matched to it, no warning
#   pmon          4 instances taking turns on one GPU, busy 100%, 50%, 15% and 0% of
#                 the time: the report's per-instance GPU% (from its processes) ranks
#                 them as they ran and as `nvidia-smi pmon` saw them
#   mps           4 instances per GPU under --mps: nvidia-smi lists them as MPS clients
#                 (M+C), the report's GPU% is the GPU's, no daemon is left
#   mps-fault     4 instances on one GPU under --mps, instance 2 writing through a bad
#                 device pointer (address 0x10) 3 s in, the others busy 8 s: every one
#                 fails, the report's root_cause names instance 2 (where this build's
#                 report has root_cause), and a run right after exits 0 (the GPU's
#                 server recovered); the fault is CuPy's kernel, else a PTX kernel through
#                 the driver's API (ctypes, libcuda.so.1)
#   torchrun-env  the worker environment of the machine's own torchrun
#                 (--standalone --nproc_per_node=1) against `gpulaunch -n 1 --ddp`'s
#   allreduce     an NCCL all_reduce over every GPU through --ddp, and no rank warns
#                 about NCCL_ASYNC_ERROR_HANDLING
#   root-cause    a failed --ddp group (torch's @record on rank 1): its exception in the
#                 summary and the report
#   timeout       --timeout ends an instance holding 1 GiB of GPU memory: exit 143,
#                 no process left on the GPU, the memory back
#   packing       `gpulaunch scale --per-gpu 1,2,4 [--mps]` of small matmuls: a study
#                 with a verdict, its JSON valid (SKIP where scale has no --per-gpu)
#
# The GPU workload is PyTorch's where python3 imports torch with CUDA, else
# CuPy's, else test/gpu/busy.cu built with nvcc (telemetry, mps and timeout
# only); a check that needs what the machine lacks is a SKIP with the reason.
# Each check runs in its own process under timeout(1), bounded by what is
# left of the budget. Prints PASS, FAIL or SKIP per check and a last line
# "gpu-check: N passed, M failed, K skipped".
# Exit 0: every check that ran passed; 1: one failed; 2: no NVIDIA GPU here
# (one line), or nothing to check with (python3, nvidia-smi, gpulaunch).
set -uo pipefail
export LC_ALL=C # one decimal point for every number read
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$self")/.." || exit 2

ALL_CHECKS=(info rank-mode telemetry pmon mps mps-fault torchrun-env allreduce root-cause timeout packing)

# bound_of is the longest a check may take, in seconds, before what is left
# of the budget cuts it shorter.
bound_of() {
  case $1 in
  info | rank-mode) echo 30 ;;
  telemetry | pmon | mps | mps-fault | timeout | torchrun-env | root-cause | allreduce) echo 60 ;;
  packing) echo 120 ;;
  esac
}

# --- verdicts: each check process writes its own into $GC_OUT/NAME.verdict
verdict() { # verdict PASS|FAIL|SKIP NAME TEXT
  echo "$1 $2: $3"
  printf '%s %s\n' "$1" "$3" >"$GC_OUT/$2.verdict"
}

# problems collected by a check; it passes when there are none
problems=()
problem() {
  problems+=("$*")
  echo "  problem: $*"
}
conclude() { # conclude NAME WHAT-PASSED
  if [ ${#problems[@]} -eq 0 ]; then
    verdict PASS "$1" "$2"
  else
    local joined more=""
    joined=$(printf '%s; ' "${problems[@]:0:3}")
    [ ${#problems[@]} -le 3 ] || more=" (and $((${#problems[@]} - 3)) more above)"
    verdict FAIL "$1" "${joined%; }$more"
  fi
}

# started counts the instances of a -l run whose workload has its GPU: each
# says "instance N: …" first once it has (work.py's busy and hold, busy.cu).
started() { grep -cE '^[0-9]+: instance [0-9]+: ' "$1"; }

# work runs the GPU workload (python3 work.py MODE … for torch and CuPy).
work_cmd() {
  if [ "$GC_BACKEND" = busy ]; then
    echo "$GC_OUT/busy"
  else
    echo "$GC_PY $GC_OUT/work.py"
  fi
}

needs_python_backend() { # a SKIP unless the workload is torch's or CuPy's
  if [ "$GC_BACKEND" != torch ] && [ "$GC_BACKEND" != cupy ]; then
    verdict SKIP "$1" "needs PyTorch or CuPy with CUDA for python3 (the workload here: $GC_BACKEND)"
    return 1
  fi
}

needs_workload() { # a SKIP without any GPU workload
  if [ "$GC_BACKEND" = none ]; then
    verdict SKIP "$1" "no GPU workload here: install PyTorch or CuPy for python3, or the CUDA toolkit (nvcc)"
    return 1
  fi
}

needs_torch() {
  if [ "$GC_BACKEND" != torch ]; then
    verdict SKIP "$1" "needs PyTorch with CUDA for python3 (the workload here: $GC_BACKEND)"
    return 1
  fi
}

# ---------------------------------------------------------------- the checks

check_info() {
  nvidia-smi --query-gpu=index,name,pci.bus_id,uuid --format=csv,noheader >"$GC_OUT/smi.csv" || problem "nvidia-smi --query-gpu failed"
  env -u CUDA_VISIBLE_DEVICES "$GL" info --json >"$GC_OUT/info.json" 2>"$GC_OUT/info.err" || problem "gpulaunch info --json exited $?: $(head -c 300 "$GC_OUT/info.err")"
  env -u CUDA_VISIBLE_DEVICES "$GL" info 2>&1 | sed 's/^/  | /'
  local out
  out=$("$GC_PY" - "$GC_OUT/smi.csv" "$GC_OUT/info.json" <<'PY'
import json, sys
def pci(s):  # "00000000:00:06.0" and "0000:00:06.0" alike: (domain, bus, device, function)
    dom, bus, rest = s.strip().lower().rsplit(":", 2)
    dev, fn = rest.split(".")
    return (int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16))
smi = {}
for line in open(sys.argv[1]):
    if line.strip():
        idx, name, bus, uuid = [f.strip() for f in line.split(",")]
        smi[uuid] = pci(bus)
try:
    info = json.load(open(sys.argv[2]))
except ValueError as e:
    print("problem gpulaunch info --json is no JSON:", e); sys.exit()
gl = {g["uuid"]: pci(g["pci_bus_id"]) for g in info.get("gpus", [])}
print(f"backend {info.get('gpu_backend')}, driver {info.get('driver')}: gpulaunch names {len(gl)} GPU(s), nvidia-smi {len(smi)}")
for u in sorted(set(smi) | set(gl)):
    s, g = smi.get(u), gl.get(u)
    if s is None:
        print(f"problem gpulaunch names {u}, nvidia-smi does not")
    elif g is None:
        print(f"problem nvidia-smi names {u} at {s}, gpulaunch does not")
    elif s != g:
        print(f"problem {u}: nvidia-smi at {s}, gpulaunch at {g}")
if not smi:
    print("problem nvidia-smi names no GPU")
PY
)
  report_lines "$out"
  conclude info "the same $GC_NGPU GPU(s) by UUID and PCI address as nvidia-smi"
}

# report_lines prints an analysis's lines, each "problem …" one a problem.
report_lines() {
  local line
  while IFS= read -r line; do
    case $line in
    "problem "*) problem "${line#problem }" ;;
    "") ;;
    *) echo "  $line" ;;
    esac
  done <<<"$1"
}

check_rank_mode() {
  local n=15 ms
  env -u CUDA_VISIBLE_DEVICES "$GL" info --json >"$GC_OUT/rank-info.json" 2>/dev/null
  "$GC_PY" - "$GC_OUT/rank-info.json" "$GC_OUT/node.json" <<'PY' || problem "no node file from gpulaunch info --json"
import json, sys
info = json.load(open(sys.argv[1]))
gpus = []
for g in info["gpus"]:
    e = {"uuid": g["uuid"], "pci": g["pci_bus_id"], "numa": g.get("numa_node", -1)}
    if g.get("minor", -1) >= 0:
        e["minor"] = g["minor"]
    gpus.append(e)
json.dump({"gpus": gpus}, open(sys.argv[2], "w"))
PY
  cat >"$GC_OUT/select_gpu" <<'SH'
#!/bin/bash
export CUDA_VISIBLE_DEVICES=${SLURM_LOCALID:-0}
exec "$@"
SH
  chmod +x "$GC_OUT/select_gpu"
  local -a names=("wrapper" "exec" "exec --node-file" "-n 4 -G 0")
  run_variant() {
    case $1 in
    0) "$GC_OUT/select_gpu" /bin/true ;;
    1) "$GL" exec -- /bin/true ;;
    2) "$GL" exec --node-file "$GC_OUT/node.json" -- /bin/true ;;
    3) "$GL" -n 4 -G 0 -O -q -- /bin/true ;;
    esac
  }
  # whether each loads libnvidia-ml (ld.so says so under LD_DEBUG=files;
  # a static gpulaunch loads nothing and says nothing). Into files, not
  # through `| grep -q`: under pipefail its early exit would read as "no".
  local dynamic=no i
  LD_DEBUG=files "$GL" version >/dev/null 2>"$GC_OUT/ld.txt"
  grep -q 'file=libc\.so' "$GC_OUT/ld.txt" && dynamic=yes
  : >"$GC_OUT/nvml.txt"
  for i in 1 2 3; do
    LD_DEBUG=files run_variant $i >/dev/null 2>"$GC_OUT/ld.txt"
    if grep -q 'file=libnvidia-ml' "$GC_OUT/ld.txt"; then
      echo "${names[$i]} yes" >>"$GC_OUT/nvml.txt"
    else
      echo "${names[$i]} no" >>"$GC_OUT/nvml.txt"
    fi
  done
  # the clock without a fork: bash 5's EPOCHREALTIME
  now() { if [ -n "${EPOCHREALTIME:-}" ]; then echo "$EPOCHREALTIME"; else date +%s.%N; fi; }
  local -a failures=(0 0 0 0)
  local r t0 t1
  : >"$GC_OUT/times.txt"
  for ((r = 0; r < n; r++)); do
    for i in 0 1 2 3; do
      t0=$(now)
      run_variant $i >/dev/null 2>&1 || failures[i]=$((failures[i] + 1))
      t1=$(now)
      echo "$i $t0 $t1" >>"$GC_OUT/times.txt"
    done
  done
  for i in 0 1 2 3; do
    [ "${failures[i]}" = 0 ] || problem "${names[$i]} failed ${failures[i]} of $n runs"
  done
  local driver_files=no
  compgen -G '/proc/driver/nvidia/gpus/*/information' >/dev/null && driver_files=yes
  ms=$("$GC_PY" - "$GC_OUT/times.txt" "$GC_OUT/nvml.txt" "$dynamic" "$driver_files" <<'PY'
import statistics, sys
names = ["select_gpu (3-line bash wrapper)", "gpulaunch exec -- /bin/true", "gpulaunch exec --node-file -- /bin/true", "gpulaunch -n 4 -G 0 -- /bin/true"]
t = {}
for line in open(sys.argv[1]):
    i, a, b = line.split()
    t.setdefault(int(i), []).append((float(b) - float(a)) * 1000)
nvml = dict(l.rsplit(" ", 1) for l in open(sys.argv[2]).read().splitlines())
dynamic, driver_files = sys.argv[3] == "yes", sys.argv[4] == "yes"
base = statistics.median(t[0])
keys = ["", "exec", "exec --node-file", "-n 4 -G 0"]
for i in sorted(t):
    m = statistics.median(t[i])
    loaded = "" if i == 0 else (f", NVML dlopened: {nvml.get(keys[i], '?')}" if dynamic else ", NVML: none (a static gpulaunch)")
    print(f"{names[i]}: median {m:.1f} ms of {len(t[i])}, {m / base:.1f}x the wrapper{loaded}")
if dynamic:
    if nvml.get("exec --node-file") == "yes":
        print("problem exec --node-file loaded NVML: a node file names the GPUs")
    if nvml.get("-n 4 -G 0") == "yes":
        print("problem -n 4 -G 0 loaded NVML: no instance has a GPU")
    if nvml.get("exec") == "yes" and driver_files:
        print("problem rank mode loaded NVML, though /proc/driver/nvidia names the GPUs")
PY
)
  report_lines "$ms"
  conclude rank-mode "$(grep -m1 'exec -- ' <<<"$ms" | sed 's/^ *//')"
}

check_telemetry() {
  needs_workload telemetry || return 0
  local rc w
  read -ra w <<<"$(work_cmd)"
  echo "  gpulaunch -l --monitor-interval 500ms --report R -- ${w[*]##*/} busy ${GC_BUSY}s (one instance per GPU)"
  "$GL" -l --monitor-interval 500ms --report "$GC_OUT/telemetry.json" -- "${w[@]}" busy "$GC_BUSY" 1 4096 >"$GC_OUT/telemetry.out" 2>&1
  rc=$?
  sed 's/^/  | /' "$GC_OUT/telemetry.out" | tail -n 20
  [ "$rc" = 0 ] || problem "gpulaunch exited $rc"
  report_lines "$("$GC_PY" - "$GC_OUT/telemetry.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("problem no report:", e); sys.exit()
if not r["instances"]:
    print("problem no instance ran")
gpus = []
for i in r["instances"]:
    n = i["instance"]
    gpus += i["gpus"]
    print(f"instance {n}: GPU {','.join(i['gpus'])}: GPU% mean {i['gpu_util_mean_pct']} peak {i['gpu_util_peak_pct']} "
          f"({i.get('gpu_util_source', 'no gpu_util_source')}), GPU memory peak {i['gpu_mem_peak_bytes'] / 2**20:.0f} MiB, exit {i['exit_code']}")
    if i["exit_code"] != 0:
        print(f"problem instance {n} exited {i['exit_code']} {i['signal']}")
    if not i["gpus"]:
        print(f"problem instance {n} had no GPU")
    if i["gpu_util_peak_pct"] <= 0:
        print(f"problem instance {n}: no GPU use measured")
    if i["gpu_mem_peak_bytes"] <= 0:
        print(f"problem instance {n}: no GPU memory matched to it (NVML's process list)")
    if i.get("gpu_util_source") != "processes":
        print(f"problem instance {n}: gpu_util_source {i.get('gpu_util_source')!r}, want 'processes' (NVML's per-process samples)")
    for w in i["warnings"]:
        print(f"problem instance {n}: {w}")
if len(gpus) != len(set(gpus)):
    print(f"problem two instances share a GPU: {gpus}")
PY
)"
  conclude telemetry "every instance on its own GPU, busy, its memory matched"
}

check_pmon() {
  needs_python_backend pmon || return 0
  local uuid idx rc pid w
  read -r idx uuid < <(nvidia-smi --query-gpu=index,uuid --format=csv,noheader | head -n1 | tr -d ',')
  read -ra w <<<"$(work_cmd)"
  local secs=$((GC_BUSY + 8))
  echo "  CUDA_VISIBLE_DEVICES=$uuid gpulaunch -n 4 --share-gpus -l --monitor-interval 1s -- busy ${secs}s at 100/50/15/0% duty; nvidia-smi pmon -i $idx meanwhile"
  CUDA_VISIBLE_DEVICES=$uuid "$GL" -n 4 --share-gpus -l --monitor-interval 1s --report "$GC_OUT/pmon.json" -- \
    "${w[@]}" busy "$secs" 1,0.5,0.15,0 2048 >"$GC_OUT/pmon.out" 2>&1 &
  pid=$!
  # pmon once all four compute
  local deadline=$((SECONDS + 40))
  while [ "$(started "$GC_OUT/pmon.out")" -lt 4 ] && kill -0 $pid 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  nvidia-smi pmon -i "$idx" -s u -d 1 -c "$GC_BUSY" >"$GC_OUT/pmon.txt" 2>&1
  wait $pid
  rc=$?
  sed 's/^/  | /' "$GC_OUT/pmon.txt"
  [ "$rc" = 0 ] || { problem "gpulaunch exited $rc"; sed 's/^/  | /' "$GC_OUT/pmon.out" | tail -n 20; }
  report_lines "$("$GC_PY" - "$GC_OUT/pmon.json" "$GC_OUT/pmon.txt" <<'PY'
import json, sys
duty = [100, 50, 15, 0]
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("problem no report:", e); sys.exit()
sm, samples = {}, 0
for line in open(sys.argv[2]):
    f = line.split()
    if not f or f[0].startswith("#") or len(f) < 4 or not f[1].isdigit():
        continue
    sm.setdefault(int(f[1]), []).append(0 if f[3] == "-" else int(f[3]))
n = max((len(v) for v in sm.values()), default=0)
pmon = {p: sum(v) / n for p, v in sm.items()}  # a sample without the process: no use then
inst = sorted(r["instances"], key=lambda i: i["instance"])
if len(inst) != 4:
    print(f"problem {len(inst)} instances in the report, want 4"); sys.exit()
fig = {}
for i in inst:
    n_ = i["instance"]
    fig[n_] = i["gpu_util_mean_pct"] or 0
    print(f"instance {n_} (busy {duty[n_]}% of the time): report {i['gpu_util_mean_pct']}% (source {i.get('gpu_util_source', 'none')!r}), "
          f"pmon {pmon.get(i['pid'], 0):.0f}% (pid {i['pid']})")
    if duty[n_] > 0 and i.get("gpu_util_source") != "processes":
        print(f"problem instance {n_}: gpu_util_source {i.get('gpu_util_source')!r}, want 'processes' (taking turns, not MPS)")
if not pmon:
    print("problem nvidia-smi pmon showed no process")
if max(fig.values()) - min(fig.values()) < 15:
    print(f"problem the report's figures {fig} are alike: the GPU's figure, not each instance's")
if max(fig, key=fig.get) != 0:
    print(f"problem the report's busiest is instance {max(fig, key=fig.get)}, not the one busy all the time (0)")
if fig[3] > 5:
    print(f"problem instance 3 computed nothing, and the report says {fig[3]}%")
if pmon:
    top = max(pmon, key=pmon.get)
    if top != inst[0]["pid"]:
        print(f"problem pmon's busiest is pid {top}, the report's instance 0 is pid {inst[0]['pid']}")
    if pmon.get(inst[3]["pid"], 0) > 5:
        print(f"problem pmon gives instance 3, which computed nothing, {pmon[inst[3]['pid']]:.0f}%")
print(f"sum of the report's figures {sum(fig.values()):.0f}%, of pmon's {sum(pmon.values()):.0f}%")
PY
)"
  conclude pmon "each instance's own GPU%, ranked as they ran and as pmon saw them"
}

check_mps() {
  if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    verdict SKIP mps "nvidia-cuda-mps-control is not on PATH (Debian: nvidia-cuda-mps)"
    return 0
  fi
  needs_workload mps || return 0
  local before after clients rc pid w want=$((4 * GC_NGPU))
  read -ra w <<<"$(work_cmd)"
  before=$(pgrep -c -f 'nvidia-cuda-mps-(control|server)')
  echo "  gpulaunch -n $want -O --mps --monitor-interval 1s -- busy ${GC_BUSY}s (4 instances per GPU)"
  "$GL" -n "$want" -O --mps -l --monitor-interval 1s --report "$GC_OUT/mps.json" -- "${w[@]}" busy "$GC_BUSY" 1 256 >"$GC_OUT/mps.out" 2>&1 &
  pid=$!
  local deadline=$((SECONDS + 40))
  while [ "$(started "$GC_OUT/mps.out")" -lt "$want" ] && kill -0 $pid 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  nvidia-smi >"$GC_OUT/mps-smi.txt" 2>&1
  wait $pid
  rc=$?
  clients=$(grep -c 'M+C' "$GC_OUT/mps-smi.txt")
  after=$(pgrep -c -f 'nvidia-cuda-mps-(control|server)')
  grep -E 'M\+C|mps' "$GC_OUT/mps-smi.txt" | sed 's/^/  | /'
  echo "  gpulaunch exited $rc; $clients MPS client(s) in nvidia-smi while it ran (want $want); MPS processes $before before, $after after"
  [ "$rc" = 0 ] || { problem "gpulaunch exited $rc"; tail -n 20 "$GC_OUT/mps.out" | sed 's/^/  | /'; }
  [ "$clients" -ge "$want" ] || problem "$clients MPS client(s) listed, want $want"
  [ "$after" -le "$before" ] || problem "$((after - before)) MPS process(es) left after the run"
  report_lines "$("$GC_PY" - "$GC_OUT/mps.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("problem no report:", e); sys.exit()
src = sorted({i.get("gpu_util_source", "none") for i in r["instances"]})
print(f"the report's gpu_util_source: {src}; GPU memory per instance (MiB): {[round(i['gpu_mem_peak_bytes'] / 2**20) for i in r['instances']]}")
if src != ["gpu"]:
    print(f"problem under MPS the instance's GPU% is its GPU's (gpu_util_source 'gpu'), the report says {src}")
PY
)"
  conclude mps "$want MPS clients, the GPU's figure, no daemon left"
}

# check_mps_fault: NVIDIA documents that a fatal fault in one MPS client
# reaches every client of its GPU; the H200 showed it (all 4 exited 1
# within 0.45 s) and that the server serves new clients once all have
# exited. gpulaunch's report names the faulting instance as the cause.
check_mps_fault() {
  if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    verdict SKIP mps-fault "nvidia-cuda-mps-control is not on PATH (Debian: nvidia-cuda-mps)"
    return 0
  fi
  needs_python_backend mps-fault || return 0
  local how
  if ! how=$("$GC_PY" "$GC_OUT/work.py" faultprobe 2>&1); then
    verdict SKIP mps-fault "no way to fault a client here: $how"
    return 0
  fi
  local uuid rc before after faulter=2 after_s=3
  uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n1)
  before=$(pgrep -c -f 'nvidia-cuda-mps-(control|server)')
  echo "  CUDA_VISIBLE_DEVICES=$uuid gpulaunch -n 4 --mps -l --report R -- instance $faulter writes to 0x10 after ${after_s}s ($how), the others busy ${GC_BUSY}s"
  CUDA_VISIBLE_DEVICES=$uuid "$GL" -n 4 --mps -l --monitor-interval 0 --report "$GC_OUT/mps-fault.json" -- \
    "$GC_PY" "$GC_OUT/work.py" mpsfault "$GC_BUSY" "$faulter" "$after_s" 256 >"$GC_OUT/mps-fault.out" 2>&1
  rc=$?
  tail -n 24 "$GC_OUT/mps-fault.out" | sed 's/^/  | /'
  [ "$rc" != 0 ] || problem "gpulaunch exited 0: no instance failed"
  grep -q "^$faulter: instance $faulter: faulting now" "$GC_OUT/mps-fault.out" || problem "instance $faulter never came to its fault"
  if grep -q "^$faulter: gpu-check: the write to 0x10 did not fault" "$GC_OUT/mps-fault.out"; then
    problem "instance $faulter's write through 0x10 did not fault"
  fi
  report_lines "$("$GC_PY" - "$GC_OUT/mps-fault.json" "$faulter" <<'PY'
import json, sys
faulter = int(sys.argv[2])
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("problem no report:", e); sys.exit()
inst = sorted(r["instances"], key=lambda i: i["instance"])
if len(inst) != 4:
    print(f"problem {len(inst)} instances in the report, want 4"); sys.exit()
for i in inst:
    print(f"instance {i['instance']}: exit {i['exit_code']} {i.get('signal') or ''} after {i['wall_seconds']:.2f}s {i.get('mps_fault', '')}".rstrip())
    if i["exit_code"] == 0 and not i.get("signal"):
        who = "the faulting instance" if i["instance"] == faulter else "a neighbour of the faulting instance"
        print(f"problem instance {i['instance']}, {who}, exited 0: under MPS the fault reaches every client of the GPU")
if "root_cause" not in r:
    print("note: this build's report has no root_cause for an --mps run (issue 37, lane G): the cause is not asserted")
else:
    rc = r["root_cause"] or {}
    print(f"root_cause: instance {rc.get('instance')}, exit {rc.get('exit_code')}, mps {rc.get('mps')}")
    if rc.get("instance") != faulter:
        print(f"problem the report's root_cause is {rc or None}, want instance {faulter}, the faulting one")
PY
)"
  # the server serves new clients once every client has exited: a run
  # right after, the same GPU, every instance exits 0
  echo "  right after: CUDA_VISIBLE_DEVICES=$uuid gpulaunch -n 4 --mps -- busy 2s"
  CUDA_VISIBLE_DEVICES=$uuid "$GL" -n 4 --mps -l --monitor-interval 0 -- "$GC_PY" "$GC_OUT/work.py" busy 2 1 256 >"$GC_OUT/mps-after.out" 2>&1
  rc=$?
  [ "$rc" = 0 ] || { problem "the run right after the fault exited $rc"; tail -n 12 "$GC_OUT/mps-after.out" | sed 's/^/  | /'; }
  after=$(pgrep -c -f 'nvidia-cuda-mps-(control|server)')
  [ "$after" -le "$before" ] || problem "$((after - before)) MPS process(es) left after the runs"
  conclude mps-fault "instance $faulter's fault failed its 3 neighbours too, and the GPU served a run right after"
}

check_torchrun_env() {
  needs_torch torchrun-env || return 0
  local rc
  mkdir -p "$GC_OUT/env"
  env -u RANK "$GC_PY" "$GC_OUT/work.py" env "$GC_OUT/env/own" # this shell's environment: what both inherit
  "$GC_PY" -m torch.distributed.run --standalone --nproc_per_node=1 "$GC_OUT/work.py" env "$GC_OUT/env/torchrun" >"$GC_OUT/torchrun.out" 2>&1 ||
    problem "torchrun exited $?: $(tail -n 3 "$GC_OUT/torchrun.out")"
  "$GL" -n 1 --ddp -q -- "$GC_PY" "$GC_OUT/work.py" env "$GC_OUT/env/gpulaunch" >"$GC_OUT/gl-env.out" 2>&1
  rc=$?
  [ "$rc" = 0 ] || problem "gpulaunch -n 1 --ddp exited $rc: $(tail -n 3 "$GC_OUT/gl-env.out")"
  report_lines "$("$GC_PY" - "$GC_OUT/env" <<'PY'
import json, os, sys
d = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(d, name)))
    except (OSError, ValueError):
        return None
own, tr, gl = load("own.x.json"), load("torchrun.0.json"), load("gpulaunch.0.json")
if tr is None or gl is None:
    print("problem a worker wrote no environment"); sys.exit()
set_by_tr = sorted(k for k in tr if own.get(k) != tr[k] and k != "_")
set_by_gl = sorted(k for k in gl if own.get(k) != gl[k] and k != "_")
print("torchrun sets:", " ".join(set_by_tr))
print("gpulaunch sets besides:", " ".join(k for k in set_by_gl if k not in tr))
for k in set_by_tr:
    if k not in gl:
        print(f"problem torchrun gives its worker {k}={tr[k]}, gpulaunch does not")
# (TORCHELASTIC_USE_AGENT_STORE differs by design: torchrun's agent hosts a store, gpulaunch none)
for k in ("TORCHELASTIC_SIGNALS_TO_HANDLE", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "ROLE_NAME", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
    if k in tr and gl.get(k) != tr[k]:
        print(f"problem {k}: torchrun {tr[k]!r}, gpulaunch {gl.get(k)!r}")
if "NCCL_ASYNC_ERROR_HANDLING" in gl and "NCCL_ASYNC_ERROR_HANDLING" not in own:
    print("problem gpulaunch sets NCCL_ASYNC_ERROR_HANDLING, which torch 2.2+ warns about on every rank")
PY
)"
  conclude torchrun-env "every variable torchrun gives its worker, gpulaunch gives (torch $GC_TORCH)"
}

check_allreduce() {
  needs_torch allreduce || return 0
  local rc
  echo "  gpulaunch --ddp -l -- all_reduce over $GC_NGPU GPU(s) (NCCL)"
  "$GL" --ddp -l --monitor-interval 0 -- "$GC_PY" "$GC_OUT/work.py" allreduce >"$GC_OUT/allreduce.out" 2>&1
  rc=$?
  grep -E 'all_reduce|Warning|deprecated' "$GC_OUT/allreduce.out" | sed 's/^/  | /'
  [ "$rc" = 0 ] || { problem "gpulaunch exited $rc"; tail -n 20 "$GC_OUT/allreduce.out" | sed 's/^/  | /'; }
  local ok
  ok=$(grep -c 'all_reduce ok' "$GC_OUT/allreduce.out")
  [ "$ok" = "$GC_NGPU" ] || problem "$ok rank(s) of $GC_NGPU got the right sum"
  if grep -q 'NCCL_ASYNC_ERROR_HANDLING is deprecated' "$GC_OUT/allreduce.out"; then
    problem "a rank warned that NCCL_ASYNC_ERROR_HANDLING is deprecated"
  fi
  conclude allreduce "$GC_NGPU rank(s) summed over NCCL, no deprecation warning"
}

check_root_cause() {
  needs_torch root-cause || return 0
  local rc
  # the ranks' output in files: what the summary says is gpulaunch's alone
  "$GL" -n 2 -G 0 --ddp --monitor-interval 0 -o "$GC_OUT/rank%t.log" --report "$GC_OUT/rootcause.json" -- \
    "$GC_PY" "$GC_OUT/work.py" fail >"$GC_OUT/rootcause.out" 2>&1
  rc=$?
  grep -A4 '^root cause' "$GC_OUT/rootcause.out" | sed 's/^/  | /'
  [ "$rc" = 1 ] || problem "gpulaunch exited $rc, want 1 (rank 1's exit)"
  grep -q '^root cause (first failure): instance 1, rank 1' "$GC_OUT/rootcause.out" || problem "the summary names no root cause in rank 1"
  grep -q 'ValueError: gpu-check: rank 1 cannot go on: bad shard 7' "$GC_OUT/rootcause.out" || problem "the summary lacks rank 1's exception"
  report_lines "$("$GC_PY" - "$GC_OUT/rootcause.json" <<'PY'
import json, sys
try:
    rc = json.load(open(sys.argv[1])).get("root_cause")
except (OSError, ValueError) as e:
    print("problem no report:", e); sys.exit()
if not rc or rc.get("rank") != 1 or rc.get("type") != "ValueError" or "bad shard 7" not in rc.get("message", ""):
    print(f"problem the report's root_cause is {rc}, want rank 1's ValueError")
PY
)"
  conclude root-cause "rank 1's ValueError in the summary and the report (torch $GC_TORCH)"
}

check_timeout() {
  needs_workload timeout || return 0
  local rc w t0 elapsed
  read -ra w <<<"$(work_cmd)"
  nvidia-smi --query-gpu=uuid,memory.used --format=csv,noheader,nounits >"$GC_OUT/mem-before.csv"
  echo "  gpulaunch --timeout 10s -l -- hold 1 GiB for 120 s (one instance per GPU)"
  t0=$SECONDS
  if [ "$GC_BACKEND" = busy ]; then # busy.cu holds 256 MiB while it computes
    "$GL" --timeout 10s -l --monitor-interval 0 --report "$GC_OUT/timeout.json" -- "${w[@]}" 120 >"$GC_OUT/timeout.out" 2>&1
  else
    "$GL" --timeout 10s -l --monitor-interval 0 --report "$GC_OUT/timeout.json" -- "${w[@]}" hold 120 1024 >"$GC_OUT/timeout.out" 2>&1
  fi
  rc=$?
  elapsed=$((SECONDS - t0))
  tail -n 12 "$GC_OUT/timeout.out" | sed 's/^/  | /'
  [ "$rc" = 143 ] || problem "gpulaunch exited $rc, want 143 (an instance ended for --timeout counts as TERMed)"
  [ "$elapsed" -ge 10 ] || problem "it ended after ${elapsed}s, before --timeout's 10s"
  if [ "$GC_BACKEND" != busy ]; then
    local held
    held=$(grep -c ': holding' "$GC_OUT/timeout.out")
    [ "$held" = "$GC_NGPU" ] || problem "$held instance(s) of $GC_NGPU held their memory before the timeout"
  fi
  # The driver frees a context's memory as its process ends; give it 10 s.
  report_lines "$("$GC_PY" - "$GC_OUT/timeout.json" "$GC_OUT/mem-before.csv" <<'PY'
import json, subprocess, sys, time
try:
    pids = {i["pid"] for i in json.load(open(sys.argv[1]))["instances"]}
except (OSError, ValueError) as e:
    print("problem no report:", e); sys.exit()
before = {}
for line in open(sys.argv[2]):
    u, m = [f.strip() for f in line.split(",")]
    before[u] = int(m)
def smi(q):
    out = subprocess.run(["nvidia-smi", f"--query-{q}", "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
    return [[f.strip() for f in l.split(",")] for l in out.splitlines() if l.strip()]
for _ in range(50):
    apps = [int(p) for p, *_ in smi("compute-apps=pid") if p.isdigit()]
    now = {u: int(m) for u, m in smi("gpu=uuid,memory.used")}
    left = pids & set(apps)
    grown = {u: now[u] - before.get(u, 0) for u in now if now[u] - before.get(u, 0) > 64}
    if not left and not grown:
        break
    time.sleep(0.2)
print(f"GPU memory used before {before} MiB, after {now} MiB")
if left:
    print(f"problem process(es) {sorted(left)} of the run are still on the GPU")
if grown:
    print(f"problem GPU memory not given back (MiB more than before): {grown}")
PY
)"
  conclude timeout "ended at ${elapsed}s with 143, the GPU memory back"
}

check_packing() {
  local help
  help=$("$GL" scale --help 2>&1)
  if [[ $help != *--per-gpu* ]]; then
    verdict SKIP packing "gpulaunch scale has no --per-gpu in this build (issue 36's packing study)"
    return 0
  fi
  needs_python_backend packing || return 0
  local rc
  local -a mps=()
  if command -v nvidia-cuda-mps-control >/dev/null 2>&1 && [[ $help == *--mps* ]]; then mps=(--mps); fi
  echo "  gpulaunch scale --per-gpu 1,2,4 ${mps[*]:-} --metric 'throughput: ([0-9.]+)' -- 256x256 matmuls for 3 s"
  "$GL" scale --per-gpu 1,2,4 ${mps[@]+"${mps[@]}"} --metric 'throughput: ([0-9.]+)' --unit matmuls/s --json "$GC_OUT/scale.json" -- \
    "$GC_PY" "$GC_OUT/work.py" busy 3 1 256 >"$GC_OUT/scale.out" 2>"$GC_OUT/scale.err"
  rc=$?
  sed 's/^/  | /' "$GC_OUT/scale.out"
  [ "$rc" = 0 ] || { problem "gpulaunch scale exited $rc: $(tail -n 3 "$GC_OUT/scale.err")"; }
  report_lines "$("$GC_PY" - "$GC_OUT/scale.json" docs/scale.schema.json "${#mps[@]}" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("problem no JSON:", e); sys.exit()
try:
    import jsonschema
    jsonschema.validate(s, json.load(open(sys.argv[2])))
    print("the JSON is valid against docs/scale.schema.json")
except ImportError:
    print("the JSON was not checked against its schema: no jsonschema module for python3")
except jsonschema.ValidationError as e:
    print(f"problem the JSON is not valid against docs/scale.schema.json: {e.message}")
if sys.argv[3] != "0" and "mps" not in json.dumps(s).lower():
    print("problem --mps gave a study that says nothing of MPS")
PY
)"
  local best
  best=$(grep -m1 -iE '×|verdict|best' "$GC_OUT/scale.out" | sed 's/^ *//')
  conclude packing "${best:-a study of 1, 2 and 4 per GPU}"
}

# --------------------------------------------------------------- the workload

write_workload() {
  cat >"$GC_OUT/work.py" <<'PY'
# gpu-check's workload (scripts/gpu-check.sh): work.py MODE ARGS
#   busy SECONDS DUTY[,DUTY…] SIZE  SIZE×SIZE matmuls, busy DUTY of each 0.2 s (instance i: the i-th
#                                   DUTY); prints "busy" as it starts and "throughput: N matmuls/s"
#   hold SECONDS MIB                hold MIB of GPU memory; prints "holding"
#   env PREFIX                      write its environment to PREFIX.<RANK or x>.json (no GPU)
#   allreduce                       NCCL all_reduce over the --ddp group (torch)
#   fail                            @record main: rank 1 raises, the others wait (torch)
#   mpsfault SECONDS N AFTER SIZE   instance N writes through address 0x10 AFTER s in (fault), the
#                                   others are busy SECONDS as busy's
#   faultprobe                      how this machine can fault a client (prints it), without faulting
import json, os, sys, time
mode, args = sys.argv[1], sys.argv[2:]
inst = os.environ.get("GPULAUNCH_INSTANCE", "?")
if mode == "env":
    json.dump(dict(os.environ), open(f"{args[0]}.{os.environ.get('RANK', 'x')}.json", "w"))
    sys.exit(0)

# A kernel that writes through a bad device pointer: CUDA_ERROR_ILLEGAL_ADDRESS,
# sticky to its context and, under MPS, to every client of its GPU. CuPy's
# (what the H200 ran); else hand-written PTX loaded through the driver's own
# API (libcuda.so.1 by ctypes: no toolkit, no torch: torch refuses a tensor
# at an address no allocation owns).
FAULT_CU = 'extern "C" __global__ void fault() { *(volatile int *)0x10 = 1; }'
FAULT_PTX = """.version 6.0
.target %s
.address_size 64
.visible .entry fault()
{
\t.reg .b32 %%r<2>;
\t.reg .b64 %%rd<2>;
\tmov.u32 %%r1, 1;
\tmov.u64 %%rd1, 16;
\tst.volatile.global.u32 [%%rd1], %%r1;
\tret;
}
"""
def faulter():
    """A context on device 0 (an MPS client from here) and a function
    that launches the fault and says what the device said."""
    try:
        import cupy
        k = cupy.RawKernel(FAULT_CU, "fault")
        cupy.zeros(1)
        getattr(k, "compile", lambda: None)()  # NVRTC now, not at the fault
        cupy.cuda.Device().synchronize()
        def fire():
            k((1,), (1,), ())
            cupy.cuda.Device().synchronize()
        return "CuPy's kernel", fire
    except ImportError:
        pass
    import ctypes
    cu = ctypes.CDLL("libcuda.so.1")
    def ck(r, what):
        if r != 0:
            name = ctypes.c_char_p()
            cu.cuGetErrorName(r, ctypes.byref(name))
            raise RuntimeError(f"{what}: {(name.value or b'?').decode()} ({r})")
    ck(cu.cuInit(0), "cuInit")
    dev, major = ctypes.c_int(), ctypes.c_int()
    ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ck(cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev), "compute capability")  # ..._MAJOR
    ctx, mod, fn = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    ck(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    # PTX ISA 6.0 for sm_70 JITs on Volta and every GPU after; sm_50 before
    ptx = FAULT_PTX % ("sm_70" if major.value >= 7 else "sm_50")
    ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx.encode())), "cuModuleLoadData (the PTX)")
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"fault"), "cuModuleGetFunction")
    def fire():
        ck(cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, None, None), "cuLaunchKernel")
        ck(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    return "a PTX kernel through libcuda.so.1 (ctypes)", fire
if mode == "faultprobe":
    try:
        how, _ = faulter()
    except Exception as e:  # what it lacks is the SKIP's reason
        sys.exit(f"neither CuPy nor the driver's API: {e}")
    print(how)
    sys.exit(0)
if mode == "mpsfault":
    seconds, n, after, size = args[0], args[1], float(args[2]), args[3]
    if inst == n:
        how, fire = faulter()
        print(f"instance {inst}: a client; faulting in {after:.0f} s ({how})", flush=True)
        time.sleep(after)
        print(f"instance {inst}: faulting now", flush=True)
        try:
            fire()
        except Exception as e:
            print(f"instance {inst}: CUDA error: {e}", flush=True)
            sys.exit(1)
        print("gpu-check: the write to 0x10 did not fault", flush=True)
        sys.exit(3)
    mode, args = "busy", [seconds, "1", size]
backend = os.environ["GC_BACKEND"]
if backend == "torch":
    import torch
    def rand(n): return torch.randn(n, n, device="cuda")
    def sync(): torch.cuda.synchronize()
    def norm(a): return a / a.norm()
    def zeros(nbytes): return torch.zeros(nbytes // 4, dtype=torch.float32, device="cuda")
else:
    import cupy
    def rand(n): return cupy.random.rand(n, n, dtype=cupy.float32)
    def sync(): cupy.cuda.Device().synchronize()
    def norm(a): return a / cupy.linalg.norm(a)
    def zeros(nbytes): return cupy.zeros(nbytes // 4, dtype=cupy.float32)
if mode == "busy":
    seconds, size = float(args[0]), int(args[2])
    duties = [float(d) for d in args[1].split(",")]
    duty = duties[int(inst) % len(duties)] if inst.isdigit() else duties[0]
    a = rand(size)
    sync()
    print(f"instance {inst}: busy {duty:.0%} of the time for {seconds:.0f} s", flush=True)
    done, start = 0, time.time()
    while time.time() - start < seconds:
        period = time.time()
        while duty > 0 and time.time() - period < 0.2 * duty:
            a = norm(a @ a)
            sync()
            done += 1
        rest = 0.2 - (time.time() - period)
        if rest > 0:
            time.sleep(rest)
    print(f"throughput: {done / (time.time() - start):.1f} matmuls/s", flush=True)
elif mode == "hold":
    seconds, mib = float(args[0]), int(args[1])
    buf = zeros(mib << 20)
    sync()
    print(f"instance {inst}: holding {mib} MiB", flush=True)
    time.sleep(seconds)
elif mode == "allreduce":
    import torch.distributed as dist
    torch.cuda.set_device(0)  # its own GPU: --gpu-visibility own shows it alone
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.full((1 << 20,), float(rank + 1), device="cuda")
    dist.all_reduce(t)
    want = world * (world + 1) / 2
    ok = bool((t == want).all())
    print(f"rank {rank} of {world}: all_reduce {'ok' if ok else 'WRONG'}: {t[0].item()} (want {want})", flush=True)
    dist.destroy_process_group()
    sys.exit(0 if ok else 1)
elif mode == "fail":
    from torch.distributed.elastic.multiprocessing.errors import record
    @record
    def main():
        if os.environ.get("RANK") == "1":
            time.sleep(1)
            raise ValueError("gpu-check: rank 1 cannot go on: bad shard 7")
        time.sleep(60)
    main()
else:
    sys.exit(f"work.py: unknown mode {mode}")
PY
}

# ------------------------------------------------------------------- one check

if [ "${1:-}" = --one ]; then # internal: one check, in its own process under timeout
  "check_${2//-/_}"
  exit 0
fi

# ------------------------------------------------------------------ the setup

if ! compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
  echo "gpu-check: no NVIDIA GPU on this machine (no /dev/nvidia0…): run it on one (make gpu-check)" >&2
  exit 2
fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu-check: nvidia-smi is not on PATH: the checks compare gpulaunch with it" >&2
  exit 2
fi
GC_NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$GC_NGPU" -lt 1 ]; then
  echo "gpu-check: nvidia-smi lists no GPU: $(nvidia-smi -L 2>&1 | tr '\n' ' ')" >&2
  exit 2
fi
GC_PY=$(command -v python3) || {
  echo "gpu-check: python3 is not on PATH: the checks read gpulaunch's JSON with it" >&2
  exit 2
}
checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=("${ALL_CHECKS[@]}")
for c in "${checks[@]}"; do
  [ -n "$(bound_of "$c")" ] || {
    echo "gpu-check: no check $c: the checks are ${ALL_CHECKS[*]}" >&2
    exit 2
  }
done
GL=$PWD/bin/gpulaunch
if [ ! -x "$GL" ]; then
  echo "gpu-check: no bin/gpulaunch: make build"
  make -s build || {
    echo "gpu-check: make build failed: build bin/gpulaunch first" >&2
    exit 2
  }
fi
GC_BUDGET=${GPU_CHECK_BUDGET:-240}
GC_BUSY=${GPU_CHECK_BUSY:-8}
deadline=$((SECONDS + GC_BUDGET))
export TMPDIR=${TMPDIR:-$PWD/.tmp}
mkdir -p "$TMPDIR"
GC_OUT=$(mktemp -d "$TMPDIR/gpu-check.XXXXXX")
[ -n "${GPU_CHECK_KEEP:-}" ] || trap 'rm -rf "$GC_OUT"' EXIT

GC_TORCH=none
if v=$("$GC_PY" -c 'import torch, sys; print(torch.__version__); sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null); then
  GC_BACKEND=torch
  GC_TORCH=$v
elif "$GC_PY" -c 'import cupy; cupy.cuda.runtime.getDeviceCount()' 2>/dev/null; then
  GC_BACKEND=cupy
elif nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null) && timeout 90 "$nvcc" -O2 -o "$TMPDIR/gpu-check-busy" test/gpu/busy.cu; then
  GC_BACKEND=busy
  mv "$TMPDIR/gpu-check-busy" "$GC_OUT/busy"
else
  GC_BACKEND=none
fi
write_workload
export GL GC_PY GC_OUT GC_NGPU GC_BACKEND GC_BUSY GC_TORCH

echo "== gpu-check on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ): budget ${GC_BUDGET}s"
nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,memory.total,driver_version,compute_mode --format=csv | sed 's/^/  /'
glv=$("$GL" version 2>&1)
echo "  $GL:"
mapfile -t lines <<<"$glv"
printf '    %s\n' "${lines[@]}"
if head=$(git rev-parse HEAD 2>/dev/null) && [[ $glv != *"commit:   $head"* ]]; then
  echo "  note: bin/gpulaunch is not built from this tree's commit ($head): make build first if that is not what you mean"
fi
echo "  workload: $GC_BACKEND (torch $GC_TORCH); python3 $("$GC_PY" -V 2>&1)"

passed=0 failed=0 skipped=0
for c in "${checks[@]}"; do
  left=$((deadline - SECONDS - 5)) # timeout's --kill-after comes on top
  bound=$(bound_of "$c")
  [ "$bound" -le "$left" ] || bound=$left
  echo
  echo "== $c (at most ${bound}s)"
  if [ "$bound" -lt 5 ]; then
    echo "FAIL $c: not run: the ${GC_BUDGET}s budget is spent"
    failed=$((failed + 1))
    continue
  fi
  rm -f "$GC_OUT/$c.verdict"
  timeout --kill-after=5 "$bound" "$self" --one "$c"
  rc=$?
  if [ -s "$GC_OUT/$c.verdict" ]; then
    read -r v _ <"$GC_OUT/$c.verdict"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    v=FAIL
    echo "FAIL $c: took longer than ${bound}s"
  else
    v=FAIL
    echo "FAIL $c: ended with $rc and no verdict"
  fi
  case $v in
  PASS) passed=$((passed + 1)) ;;
  SKIP) skipped=$((skipped + 1)) ;;
  *) failed=$((failed + 1)) ;;
  esac
done
echo
echo "gpu-check: $passed passed, $failed failed, $skipped skipped (${SECONDS}s)"
[ "$failed" = 0 ]
