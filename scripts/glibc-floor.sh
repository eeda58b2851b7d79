#!/usr/bin/env bash
# The glibc floor of a binary, read from its ELF symbol versions (readelf
# reads any architecture's ELF):
#
#   scripts/glibc-floor.sh BIN          the newest GLIBC_x.y among BIN's needed
#                                       versions, "none" for a static binary
#   scripts/glibc-floor.sh --check BIN  make dist's check of a cgo binary
#                                       (pkg/glibcfloor/pins.h has the rules):
#                                       exit 0 when BIN needs nothing newer
#                                       than GLIBC_2.28 — no symbol, no version
#                                       needed (GLIBC_ABI_DT_RELR) — and loads the libraries
#                                       that hold the pinned symbols there;
#                                       else exit 1, naming each symbol above
#                                       the floor and each library missing
set -euo pipefail

FLOOR=2.28

floor_of() {
	local v
	v=$(readelf -V --wide "$1" 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -u -V | tail -1 || true)
	echo "${v:-none}"
}

# newer VERSION: whether VERSION is newer than the floor.
newer() { [ "$1" != "$FLOOR" ] && [ "$(printf '%s\n%s\n' "$1" "$FLOOR" | sort -V | tail -1)" = "$1" ]; }

check() {
	local bin=$1 problems=() sym ver lib needed
	readelf -h "$bin" >/dev/null 2>&1 || { echo "glibc-floor: $bin is not an ELF file" >&2; exit 2; }
	# Imported symbols: readelf --dyn-syms prints NAME@VERSION in column 8.
	while read -r sym; do
		ver=${sym##*@GLIBC_}
		if newer "$ver"; then problems+=("$sym (newer than GLIBC_$FLOOR: pin it in pkg/glibcfloor/pins.h)"); fi
	done < <(readelf --dyn-syms --wide "$bin" | awk '$7 == "UND" && $8 ~ /@GLIBC_/ { print $8 }' | sort -u)
	# Versions needed (the version-needs section), with or without a symbol
	# at them: the link records some with none, e.g. GLIBC_ABI_DT_RELR for
	# DT_RELR (-z pack-relative-relocs, some toolchains' default), which
	# glibc before 2.36 does not define and so refuses to start the binary.
	while read -r ver; do
		case "$ver" in
		GLIBC_[0-9]*) if newer "${ver#GLIBC_}"; then problems+=("version $ver needed (newer than GLIBC_$FLOOR)"); fi ;;
		*) problems+=("version $ver needed (glibc $FLOOR does not define it; GLIBC_ABI_DT_RELR: link without -z pack-relative-relocs)") ;;
		esac
	done < <(readelf -V --wide "$bin" | sed -n '/^Version needs section/,/^$/s/.*Name: \(GLIBC_[^ ]*\).*/\1/p' | sort -u)
	needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	if grep -qx libc.so.6 <<<"$needed"; then
		for lib in libpthread.so.0 libdl.so.2 libresolv.so.2; do
			grep -qx "$lib" <<<"$needed" || problems+=("no DT_NEEDED $lib (the floor's glibc has the pinned symbols there: pkg/glibcfloor's LDFLAGS)")
		done
	fi
	if [ ${#problems[@]} -gt 0 ]; then
		echo "glibc-floor: $bin needs more than glibc $FLOOR:" >&2
		printf '  %s\n' "${problems[@]}" >&2
		exit 1
	fi
	floor_of "$bin"
}

case "${1:-}" in
--check) [ $# -eq 2 ] || { echo "usage: $0 [--check] BIN" >&2; exit 2; }; check "$2" ;;
-*|'') echo "usage: $0 [--check] BIN" >&2; exit 2 ;;
*) floor_of "$1" ;;
esac
