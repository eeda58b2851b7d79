#!/usr/bin/env bash
# scripts/notices.sh: writes THIRD_PARTY_NOTICES, the licences of the code
# linked into gpulaunch, which every tarball and `make install` carry in
# share/doc/gpulaunch beside LICENSE (gpulaunch's own: Apache-2.0).
#
# What is linked is what `go list -deps ./cmd/gpulaunch` names: the union of
# the cgo build (go-nvml is in it) and the CGO_ENABLED=0 one — the modules
# `go version -m bin/gpulaunch` lists — and the Go standard library (Go's own
# LICENSE and PATENTS). Modules used only by tests (client_golang,
# client_model, …) are not linked and not listed. For each module: its path,
# version, SPDX licence identifier, and the verbatim text of every licence,
# NOTICE and PATENTS file at its root in the module cache.
#
# Run it after changing go.mod: pkg/buildinfo's TestNoticesCoverLinkedModules
# fails while a linked module (or its version) is missing here.
# Usage: scripts/notices.sh [OUT] (default THIRD_PARTY_NOTICES).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-THIRD_PARTY_NOTICES}
GO=${GO:-go}

# spdx FILE: the licence's SPDX identifier, from words every copy of it has.
spdx() {
	if grep -q 'Apache License' "$1" && grep -q 'Version 2.0' "$1"; then echo Apache-2.0
	elif grep -q 'Permission is hereby granted, free of charge' "$1"; then echo MIT
	elif grep -q 'Neither the name' "$1"; then echo BSD-3-Clause
	elif grep -q 'Redistribution and use in source and binary forms' "$1"; then echo BSD-2-Clause
	else echo "unknown: read $1" >&2; exit 1
	fi
}

# section TITLE DIR: one module's (or Go's) notice files, verbatim.
section() {
	local title=$1 dir=$2 f lic="" files
	files=$(cd "$dir" && ls | grep -E '^(LICENSE|LICENCE|COPYING|NOTICE|PATENTS)' | sort) || true
	[ -n "$files" ] || { echo "scripts/notices.sh: $title has no licence file in $dir" >&2; exit 1; }
	for f in $files; do case $f in LICEN[CS]E*|COPYING*) lic=$(spdx "$dir/$f") ;; esac; done
	printf '================================================================================\n'
	printf '%s (%s)\n' "$title" "$lic"
	for f in $files; do
		printf -- '---- %s ----\n' "$f"
		cat "$dir/$f"
		printf '\n'
	done
}

# A build without cgo cannot take the glibc floor's host linker (the
# Makefile's GOFLAGS, when this runs under make).
mods=$(for cgo in 1 0; do
	goflags=${GOFLAGS:-}
	[ "$cgo" = 1 ] || goflags=${goflags//-ldflags=-linkmode=external/}
	GOFLAGS=$goflags CGO_ENABLED=$cgo $GO list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/gpulaunch
done | sort -u)

{
	cat <<'HEAD'
Third-party notices for gpulaunch

gpulaunch is licensed under the Apache License, Version 2.0 (LICENSE). Its
binaries also contain the code below: the Go standard library and the Go
modules the binary links (`go version -m gpulaunch` lists them; go-nvml is in
the cgo build only). Each one's licence, and its NOTICE and PATENTS files where
it has them, follow verbatim. Written by scripts/notices.sh.

HEAD
	section "Go standard library $($GO env GOVERSION)" "$($GO env GOROOT)"
	while read -r path version dir; do
		section "$path $version" "$dir"
	done <<<"$mods"
} >"$out.tmp"
mv "$out.tmp" "$out"
