#!/bin/bash
# slurm-testbed.sh — a real Slurm 22.05 cluster with fake GPUs on this one machine,
# for gpulaunch's integration tests (Debian 12, run as root; no systemd needed):
# one node by default, or TESTBED_NODES=N nodes, each slurmd in a network
# namespace of its own with its own address and host name.
#
#   slurm-testbed.sh up      install what is missing, configure, (re)start munged,
#                            slurmctld and slurmd, wait until the node is idle
#   slurm-testbed.sh down    stop the daemons this script started (by their pid files)
#   slurm-testbed.sh status  the daemons and sinfo
#   slurm-testbed.sh env     the variables tests read (TESTBED_ROOT, GPULAUNCH_NODE_FILE, …)
#
# Idempotent: `up` twice restarts slurmctld/slurmd with a clean state (no
# leftover jobs, no drained node); `down` twice is a no-op.
#
# The GPUs are char devices c 195:N (the nvidia major, distinct minors) with
# no driver behind them: opening an allocated one gives ENXIO, one the device
# cgroup denies gives EPERM, so Slurm's ConstrainDevices is real. There is no
# NVML here, so the script also writes a gpulaunch node file
# ($TESTBED_ROOT/node.json, docs/topology.md) describing those devices.
# TESTBED_VENDOR=amd makes them AMD GPUs instead: render nodes
# dev/dri/renderD128+ (c 226:128+N, the DRM major), gres.conf
# Flags=amd_gpu_env as AutoDetect=rsmi would set (Slurm then writes
# ROCR_VISIBLE_DEVICES alone), and a node file with "vendor": "amd".
#
# Knobs (environment):
#   TESTBED_ROOT=/var/lib/gpulaunch-testbed  state, logs, pid files, fake devices
#   TESTBED_GPUS=4                          number of fake GPUs
#   TESTBED_CPUS=fake16|real                fake16: the node is declared 2 sockets × 8 cores
#                                           (config_overrides); real: as `slurmd -C` says
#   TESTBED_CGROUP=1|0                      1: proctrack/cgroup, task/cgroup+affinity with
#                                           ConstrainCores/Devices (cgroup v1); 0: linuxproc
#   TESTBED_NODES=1|N                       N >= 2: nodes gl-node[1-N], each slurmd in its own
#                                           network and UTS namespace (10.77.0.1N on bridge
#                                           glbr0, slurmctld on 10.77.0.1); forces
#                                           TESTBED_CGROUP=0, see docs/testbed.md
#   TESTBED_VENDOR=nvidia|amd               the fake GPUs' vendor (see above)
#   TESTBED_PKGS="…"                        packages to ensure installed
# Every configuration line and trap is explained in docs/testbed.md.
set -euo pipefail

ROOT=${TESTBED_ROOT:-/var/lib/gpulaunch-testbed}
NGPU=${TESTBED_GPUS:-4}
CPUS_MODE=${TESTBED_CPUS:-fake16}
CGROUP=${TESTBED_CGROUP:-1}
PKGS=${TESTBED_PKGS:-"slurm-wlm munge openmpi-bin mpich libpmix-dev libopenmpi-dev tmux parallel iproute2 python3-torch gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static lmod zsh fish man-db prometheus strace bash-completion"}
NODES=${TESTBED_NODES:-1}
VENDOR=${TESTBED_VENDOR:-nvidia}
case $VENDOR in nvidia | amd) ;; *) echo "TESTBED_VENDOR=$VENDOR: nvidia or amd" >&2; exit 2 ;; esac
[[ "$NODES" =~ ^[0-9]+$ ]] && [ "$NODES" -ge 1 ] && [ "$NODES" -le 8 ] || { echo "TESTBED_NODES=$NODES: 1..8" >&2; exit 2; }
# Several slurmds on one machine share its cgroup v1 hierarchy: two nodes'
# steps of one job would meet in the same slurm/uid_0/job_J/step_S cgroup
# (Slurm keys it by node only when built with --enable-multiple-slurmd).
[ "$NODES" -gt 1 ] && CGROUP=0
NET=10.77.0 # multi-node: the bridge is $NET.1, node i is $NET.(10+i)
node_name() { echo "gl-node$1"; }
ETC=/etc/slurm
H=$(hostname -s)
RUN=$ROOT/var/run
LOG=$ROOT/var/log

log() { printf '[testbed %(%T)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts slurmd); CI runs it as root"

# PID 1 here does not reap orphans, so daemons' intermediate processes stay
# as zombies: a zombie counts as dead.
proc_alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
pid_alive() { [ -s "$1" ] && proc_alive "$(cat "$1")"; }

stop_pidfile() { # pidfile daemon-name
  local f=$1 n=$2 p i
  if pid_alive "$f"; then
    p=$(cat "$f")
    # a stale pid file may name an unrelated process by now
    if grep -q "$n" "/proc/$p/comm" 2>/dev/null; then
      log "stopping $n pid $p"
      kill "$p"
      for i in $(seq 100); do proc_alive "$p" || break; sleep 0.1; done
      if proc_alive "$p"; then log "$n pid $p still alive, SIGKILL"; kill -9 "$p"; fi
    fi
  fi
  rm -f "$f"
}

install_pkgs() {
  local missing=() p
  for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  log "apt-get install ${missing[*]} (log: $ROOT/apt-install.log)"
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d (exit 101) keeps postinst scripts from starting daemons: this script starts them
  if ! apt-get install -y -q -o DPkg::Lock::Timeout=300 "${missing[@]}" >"$ROOT/apt-install.log" 2>&1; then
    log "install failed, retrying after apt-get update"
    apt-get update -q >>"$ROOT/apt-install.log" 2>&1
    apt-get install -y -q -o DPkg::Lock::Timeout=300 "${missing[@]}" >>"$ROOT/apt-install.log" 2>&1 ||
      { tail -20 "$ROOT/apt-install.log" >&2; die "apt-get install failed"; }
  fi
}

start_munge() {
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge /etc/munge
  chmod 0755 /run/munge
  if [ ! -s /etc/munge/munge.key ]; then
    log "creating munge key"
    runuser -u munge -- mungekey --create --keyfile=/etc/munge/munge.key
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
  if pid_alive /run/munge/munged.pid && munge -n </dev/null | unmunge >/dev/null 2>&1; then
    log "munged already running (pid $(cat /run/munge/munged.pid))"
  else
    rm -f /run/munge/munged.pid /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
    # as root munged refuses its munge-owned directories; as the munge user it is happy
    runuser -u munge -- /usr/sbin/munged
    local i
    for i in $(seq 50); do munge -n </dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
    munge -n </dev/null | unmunge >/dev/null || die "munge does not work"
    log "munged started (pid $(cat /run/munge/munged.pid))"
  fi
  cp /run/munge/munged.pid "$RUN/munged.pid"
}

# gpu_dev N: the device file of fake GPU N; gpu_major/gpu_minor N: its numbers.
gpu_dev() { if [ "$VENDOR" = amd ]; then echo "$ROOT/dev/dri/renderD$((128 + $1))"; else echo "$ROOT/dev/nvidia$1"; fi; }
gpu_major() { if [ "$VENDOR" = amd ]; then echo 226; else echo 195; fi; }
gpu_minor() { if [ "$VENDOR" = amd ]; then echo $((128 + $1)); else echo "$1"; fi; }

make_fake_gpus() {
  mkdir -p "$ROOT/dev/dri"
  # the other vendor's devices go: gres.conf must name the only GPUs there are
  if [ "$VENDOR" = amd ]; then rm -f "$ROOT"/dev/nvidia*; else rm -f "$ROOT"/dev/dri/renderD*; fi
  local i dev want
  for ((i = 0; i < NGPU; i++)); do
    # distinct minors matter: ConstrainDevices denies the unallocated major:minor pairs
    dev=$(gpu_dev $i) want=$(printf '%x:%x' "$(gpu_major $i)" "$(gpu_minor $i)")
    if [ ! -c "$dev" ] || [ "$(stat -c '%t:%T' "$dev")" != "$want" ]; then
      rm -f "$dev"
      mknod -m 0666 "$dev" c "$(gpu_major $i)" "$(gpu_minor $i)"
    fi
  done
}

# The node file tells gpulaunch what NVML (or the KFD topology) would: each
# GPU's UUID, PCI address, NUMA node and device file. CPUs come from this
# machine's sysfs. AMD UUIDs are ROCm's: GPU- and 16 hex digits.
write_node_file() {
  local i sep="" numa uuid vendor=""
  [ "$VENDOR" = amd ] && vendor='"vendor": "amd",'
  {
    printf '{\n  "name": "testbed-%s", %s\n  "description": "slurm-testbed.sh fake %s GPUs (char devices, no driver)",\n  "gpus": [\n' "$H" "$vendor" "$VENDOR"
    for ((i = 0; i < NGPU; i++)); do
      numa=null
      [ -d /sys/devices/system/node/node0 ] && numa=0
      uuid=$(printf 'GPU-7e57bed0-0000-4000-8000-%012d' "$i")
      [ "$VENDOR" = amd ] && uuid=$(printf 'GPU-7e57bed0%08x' "$i")
      printf '%s    {"name": "Testbed Fake GPU", "uuid": "%s", "pci": "0000:%02x:00.0", "numa": %s, "minor": %d, "device": "%s", "memory_mib": 1024}' \
        "$sep" "$uuid" $((0x10 + i)) "$numa" "$i" "$(gpu_dev $i)"
      sep=$',\n'
    done
    printf '\n  ]\n}\n'
  } >"$ROOT/node.json"
}

write_config() {
  local node task proctrack extra=""
  if [ "$CPUS_MODE" = real ]; then
    node=$(slurmd -C | head -1 | sed -E 's/^NodeName=[^ ]+ //; s/ UpTime=.*//')
  else
    # more CPUs than the machine has: Slurm schedules 16, the cgroups hold the real 2
    node="CPUs=16 Boards=1 Sockets=2 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=64000"
    extra="SlurmdParameters=config_overrides"
  fi
  if [ "$CGROUP" = 1 ]; then
    task="task/cgroup,task/affinity"
    proctrack="proctrack/cgroup"
  else
    task="task/affinity"
    proctrack="proctrack/linuxproc"
  fi
  local ctld="$H(127.0.0.1)" pidfile="$RUN/slurmd.pid" spool="$ROOT/var/spool" slurmdlog="$LOG/slurmd.log"
  local nodes="NodeName=$H NodeAddr=127.0.0.1 $node Gres=gpu:$NGPU State=UNKNOWN" i
  if [ "$NODES" -gt 1 ]; then
    # every node reaches slurmctld over the bridge; %n keeps each slurmd's files apart
    ctld="$H($NET.1)" pidfile="$RUN/slurmd-%n.pid" spool="$ROOT/var/spool/%n" slurmdlog="$LOG/slurmd-%n.log"
    nodes=""
    for ((i = 1; i <= NODES; i++)); do
      nodes+="NodeName=$(node_name $i) NodeAddr=$NET.$((10 + i)) $node Gres=gpu:$NGPU State=UNKNOWN"$'\n'
    done
  fi
  mkdir -p "$ETC"
  cat >"$ETC/slurm.conf" <<EOF
# generated by gpulaunch scripts/slurm-testbed.sh
ClusterName=testbed
SlurmctldHost=$ctld
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=$proctrack
TaskPlugin=$task
ReturnToService=2
MailProg=/bin/true
KillWait=5
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$pidfile
SlurmdSpoolDir=$spool
StateSaveLocation=$ROOT/var/state
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$slurmdlog
SlurmctldDebug=info
SlurmdDebug=info
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
GresTypes=gpu
$extra
$nodes
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  local gres="Name=gpu File=$ROOT/dev/nvidia[0-$((NGPU - 1))]"
  [ "$VENDOR" = amd ] && gres="Name=gpu File=$ROOT/dev/dri/renderD[128-$((127 + NGPU))] Flags=amd_gpu_env"
  cat >"$ETC/gres.conf" <<EOF
# generated by gpulaunch scripts/slurm-testbed.sh — fake $VENDOR GPUs: char devices $(gpu_major 0):N
AutoDetect=off
$gres
EOF
  cat >"$ETC/cgroup.conf" <<EOF
# generated by gpulaunch scripts/slurm-testbed.sh (read only with a cgroup plugin)
CgroupPlugin=cgroup/v1
CgroupAutomount=no
ConstrainCores=yes
ConstrainDevices=yes
ConstrainRAMSpace=no
EOF
}

stop_slurm() {
  local f
  # whichever layout the last `up` had: one slurmd, or one per namespace
  for f in "$RUN"/slurmd.pid "$RUN"/slurmd-*.pid; do
    [ -e "$f" ] && stop_pidfile "$f" slurmd
  done
  stop_pidfile "$RUN/slurmctld.pid" slurmctld
}

# The nodes' network: a bridge in this namespace, and per node a network
# namespace with a veth on the bridge, its own address and loopback.
net_up() {
  local i ns
  ip link show glbr0 >/dev/null 2>&1 || ip link add glbr0 type bridge
  ip addr show dev glbr0 | grep -q "inet $NET.1/" || ip addr add "$NET.1/24" dev glbr0
  ip link set glbr0 up
  for ((i = 1; i <= NODES; i++)); do
    ns=$(node_name $i)
    ip netns list | grep -qw "$ns" || ip netns add "$ns"
    if ! ip link show "glv$i" >/dev/null 2>&1; then
      ip link add "glv$i" type veth peer name eth0 netns "$ns"
      ip link set "glv$i" master glbr0
    fi
    ip link set "glv$i" up
    ip -n "$ns" addr show dev eth0 | grep -q "inet $NET.$((10 + i))/" || ip -n "$ns" addr add "$NET.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  done
  # node names resolve everywhere (MASTER_ADDR is a node name)
  sed -i '/# gpulaunch-testbed$/d' /etc/hosts
  for ((i = 1; i <= NODES; i++)); do
    echo "$NET.$((10 + i)) $(node_name $i) # gpulaunch-testbed" >>/etc/hosts
  done
  # bridged traffic must not meet a FORWARD DROP policy (br_netfilter)
  if [ "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo 0)" = 1 ]; then
    echo 0 >/proc/sys/net/bridge/bridge-nf-call-iptables || true
  fi
}

net_down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '/^gl-node[0-9]+/ {print $1}'); do
    ip netns del "$ns"
  done
  ip link show glbr0 >/dev/null 2>&1 && ip link del glbr0
  sed -i '/# gpulaunch-testbed$/d' /etc/hosts
  return 0
}

node_list() {
  if [ "$NODES" -gt 1 ]; then
    local i
    for ((i = 1; i <= NODES; i++)); do node_name $i; done
  else
    echo "$H"
  fi
}

start_slurm() {
  rm -rf "$ROOT/var/state" "$ROOT/var/spool"
  mkdir -p "$ROOT/var/state" "$ROOT/var/spool" "$LOG" "$RUN"
  slurmctld
  local i n st="" all
  if [ "$NODES" -gt 1 ]; then
    for ((i = 1; i <= NODES; i++)); do
      n=$(node_name $i)
      mkdir -p "$ROOT/var/spool/$n"
      # the node's own host name (slurmd finds its NodeName by it) in its own network
      ip netns exec "$n" unshare --uts sh -c "hostname $n && exec slurmd"
    done
  else
    slurmd
  fi
  all=$(node_list | paste -sd,)
  for i in $(seq 300); do
    st=$(sinfo -h -n "$all" -o %T 2>/dev/null | sort -u | paste -sd,)
    [ "$st" = idle ] && break
    for n in $(sinfo -h -N -n "$all" -o '%N %T' 2>/dev/null | awk '$2 ~ /^(drain|down)/ {print $1}'); do
      scontrol update nodename="$n" state=resume 2>/dev/null || true
    done
    sleep 0.1
  done
  if [ "$st" != idle ]; then
    sinfo -R >&2 || true
    tail -20 "$LOG"/slurmd*.log >&2 || true
    die "nodes $all not idle after 30 s (states '$st')"
  fi
  log "slurmctld pid $(cat "$RUN/slurmctld.pid"), nodes $all idle"
}

case ${1:-} in
up)
  mkdir -p "$ROOT" "$RUN" "$LOG"
  install_pkgs
  stop_slurm
  start_munge
  make_fake_gpus
  write_node_file
  write_config
  net_down
  [ "$NODES" -gt 1 ] && net_up
  start_slurm
  sinfo -N -o '%N %T %c %z %m %G'
  ;;
down)
  stop_slurm
  net_down
  stop_pidfile "$RUN/munged.pid" munged
  ;;
status)
  for f in "$RUN"/munged.pid "$RUN"/slurmctld.pid "$RUN"/slurmd*.pid; do
    d=$(basename "$f" .pid)
    if pid_alive "$f"; then echo "$d running pid $(cat "$f")"; else echo "$d not running"; fi
  done
  sinfo -N -o '%N %T %c %z %m %G' 2>&1 || true
  ;;
env)
  echo "TESTBED_ROOT=$ROOT"
  echo "GPULAUNCH_NODE_FILE=$ROOT/node.json"
  echo "TESTBED_NODES=$NODES"
  echo "TESTBED_VENDOR=$VENDOR"
  ;;
*)
  echo "usage: $0 up|down|status|env" >&2
  exit 2
  ;;
esac
