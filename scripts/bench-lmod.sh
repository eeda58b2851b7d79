#!/usr/bin/env bash
# bench-lmod.sh: what loading gpulaunch's module costs (issue 38). Every
# batch script loads it, so a load should cost what a plain module's does:
# the modulefile used to source its completion script with source_sh, which
# starts a bash on every load and unload (5 cycles: 1.58 s against 0.34 s
# for a plain module, measured when the issue was filed).
#
# Each row: a fresh bash sources Lmod's init and does 5 module load/unload
# cycles; medians of LMOD_RUNS interleaved runs (gpulaunch's module, a
# module with one setenv, …), as a ratio to the plain module's: 1.0x is a
# plain module. OLD_MODULEFILE=FILE adds that modulefile (e.g. an older
# revision's packaging/lmod/gpulaunch.lua) in the same tree. Never a timed
# assertion. Needs Lmod (/usr/share/lmod) and bin/gpulaunch.
set -euo pipefail
cd "$(dirname "$0")/.."
GL=${GL:-bin/gpulaunch}
N=${LMOD_RUNS:-11}
LMOD_INIT=${LMOD_INIT:-/usr/share/lmod/lmod/init/bash}
[ -x "$GL" ] || { echo "bench-lmod.sh: $GL is missing: run make build first" >&2; exit 1; }
[ -r "$LMOD_INIT" ] || { echo "  bench-lmod.sh: no Lmod ($LMOD_INIT): skipped"; exit 0; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-lmod.XXXXXX")
trap 'rm -rf "$work"' EXIT
make --no-print-directory -s install PREFIX="$work/tree" INSTALL_BIN="$GL" GEN_BIN="$GL" >/dev/null
tree=$work/tree/share/lmod/modulefiles
mods=(gpulaunch plain/1)
mkdir -p "$tree/plain" && echo 'setenv("PLAIN_MODULE", "1")' >"$tree/plain/1.lua"
if [ -n "${OLD_MODULEFILE:-}" ]; then
  sed -e 's/@VERSION@/0.0.0-before/g' -e 's/@PREFIX@//g' "$OLD_MODULEFILE" >"$tree/gpulaunch/0.0.0-before.lua"
  mods+=(gpulaunch/0.0.0-before)
fi
# the installed version is the default gpulaunch (the highest version)
mods[0]=gpulaunch/$(basename "$(ls "$tree"/gpulaunch/[0-9]*.lua | grep -v before | head -1)" .lua)

cycles_ms() { # module
  local s e
  s=$(date +%s%N)
  env -u MANPATH -u XDG_DATA_DIRS -u FPATH -u LOADEDMODULES -u _LMFILES_ -u MODULEPATH \
    bash --norc --noprofile -c "source $LMOD_INIT; module use $tree; for i in 1 2 3 4 5; do module load $1; module unload $1; done" >/dev/null 2>&1
  e=$(date +%s%N)
  echo $(((e - s) / 1000000))
}
for _ in $(seq "$N"); do
  for m in "${mods[@]}"; do echo "$m $(cycles_ms "$m")"; done
done >"$work/times"
median() { awk -v m="$1" '$1 == m { print $2 }' "$work/times" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
plain=$(median plain/1)
for m in "${mods[@]}"; do
  t=$(median "$m")
  printf '  %-26s %6d ms for 5 load/unload cycles  %5.2fx a plain module\n' "$m" "$t" "$(awk -v a="$t" -v b="$plain" 'BEGIN { print a / b }')"
done
