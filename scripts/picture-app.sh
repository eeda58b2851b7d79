#!/bin/sh
# picture-app.sh: a stand-in for a training run with phases, for the
# picture in docs/report.md (make pictures). Each instance loads its data
# (GPU idle), computes (busy, a little more for higher instances), dips
# for a checkpoint, computes again; instance 5 fails once after 4 s and
# is restarted (--restarts 1). On a simulated node it declares its GPU use
# as it goes, as a real code's would show.
i=${GPULAUNCH_INSTANCE:-0}
dir=${GPULAUNCH_SIMULATED_USAGE_DIR:-}
use() { # utilisation %, memory MiB
  [ -n "$dir" ] || return 0
  echo "${GPULAUNCH_GPUS%%,*} $1 $2" >"$dir/$$.tmp" && mv "$dir/$$.tmp" "$dir/$$"
}
fail="${TMPDIR:-/tmp}/picture-app-failed.$PPID"
use 0 1024
sleep 1
use $((70 + 3 * i)) $((4096 + 512 * i))
sleep 3
if [ "$i" = 5 ] && [ ! -e "$fail" ]; then
  touch "$fail"
  echo "instance 5: out of memory (on purpose, to show a restart)" >&2
  exit 1
fi
use 15 $((4096 + 512 * i))
sleep 1
use $((80 + 2 * i)) $((6144 + 512 * i))
sleep 4
rm -f "$fail"
