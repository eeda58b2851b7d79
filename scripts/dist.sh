#!/usr/bin/env bash
# make dist: the release artefacts of this checkout, in $DIST_DIR (dist/):
#
#   gpulaunch-VERSION-linux-amd64.tar.gz         cgo, NVML compiled in
#   gpulaunch-VERSION-linux-arm64.tar.gz         cgo, cross-built with aarch64-linux-gnu-gcc
#   gpulaunch-VERSION-linux-amd64-static.tar.gz  CGO_ENABLED=0: any glibc, no NVML
#   gpulaunch-VERSION-linux-arm64-static.tar.gz
#   gpulaunch-VERSION-src.tar.gz                 the source with its modules vendored (offline builds)
#   SHA256SUMS
#   spack/gpulaunch/package.py                   packaging/spack's recipe with this version's sha256
#   easybuild/gpulaunch-VERSION.eb               packaging/easybuild's easyconfig, its checksums filled in
#
# VERSION is the VERSION file's (make reads it), without a leading "v" in
# the file names; COMMIT is the commit beside it ("+dirty" with uncommitted
# changes). Every tarball has LICENSE (Apache-2.0) and THIRD_PARTY_NOTICES
# (scripts/notices.sh) in share/doc/gpulaunch — the source tarball at its
# top — and the source tarball also the files COMMIT and SOURCE_DATE_EPOCH,
# which make reads where there is no git: it builds the same version,
# commit and date as the binaries.
# Each binary tarball unpacks to gpulaunch-VERSION-linux-ARCH[-static]/ with
# bin/, share/ (man page, completions, modulefile, docs) — the tree `make
# install` makes — and README.txt, which states the binary's glibc floor.
# The cgo binaries need nothing newer than GLIBC_2.28 (RHEL/Rocky 8),
# although built on Debian 12's 2.36: the Makefile builds them with the
# glibc floor (pkg/glibcfloor/pins.h), and each is checked here from its
# symbol versions and libraries (scripts/glibc-floor.sh --check): make dist
# fails when one needs more. The static ones need no glibc.
#
# The tarballs are reproducible: files sorted, owner 0, modes 0644/0755
# whatever the umask (a rebuilder's is not the release's: README.txt, the
# vendored modules; and git archive's 0664), mtimes and the stamped build
# date from SOURCE_DATE_EPOCH (the commit's date), gzip -n.
#
# Needs: go, gcc, gcc-aarch64-linux-gnu (Debian; `make dist` says so when it
# is missing), readelf, sha256sum, tar. Usage: scripts/dist.sh (from make).
set -euo pipefail
cd "$(dirname "$0")/.."

: "${VERSION:?make dist sets VERSION}" "${COMMIT:?}" "${BUILD_DATE:?}" "${SOURCE_DATE_EPOCH:?}"
GO=${GO:-go}
DIST_DIR=${DIST_DIR:-dist}
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
host_arch=$($GO env GOARCH)

die() { echo "make dist: error: $*" >&2; exit 1; }
[ "$host_arch" = amd64 ] || die "the release is built on linux/amd64 (cross-building arm64 with cgo); this is $host_arch"
command -v "$CROSS_CC" >/dev/null || die "$CROSS_CC not found: the arm64 binary is cross-built with cgo; install Debian's gcc-aarch64-linux-gnu (apt-get install gcc-aarch64-linux-gnu)"
command -v readelf >/dev/null || die "readelf not found (binutils): it reads each binary's glibc floor"
[ "${GLIBC_FLOOR_APPLIES:-}" = yes ] || die "the glibc floor is off (GLIBC_FLOOR=off, or \`go env CC\` is not a glibc C compiler for linux/amd64: the Makefile's glibc floor lines): the cgo tarballs must need nothing newer than GLIBC_2.28; run make dist without GLIBC_FLOOR=off, with Debian's gcc"

name_version=${VERSION#v}
case "$COMMIT" in *+dirty) echo "make dist: warning: the tree has uncommitted changes: the binaries have them, the source tarball (HEAD's) does not" >&2 ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/gpulaunch-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$DIST_DIR"
ldflags="-X main.version=$VERSION -X main.commit=$COMMIT -X main.buildDate=$BUILD_DATE"

# The host binary writes the man page and completions for every tarball:
# they are the same for every architecture.
gen="$work/gen/gpulaunch"
CGO_ENABLED=1 $GO build -trimpath -ldflags "$ldflags" -o "$gen" ./cmd/gpulaunch

# glibc_floor BIN CGO: the newest GLIBC_x.y among BIN's symbol versions,
# "none" for a static binary; a cgo one that needs more than GLIBC_2.28 (or
# lacks the libraries the pins need) stops make dist, naming the symbols.
glibc_floor() {
	if [ "$2" = 1 ]; then
		scripts/glibc-floor.sh --check "$1" || die "$1 breaks the glibc floor (above); the release's cgo binaries run on glibc 2.28"
	else
		scripts/glibc-floor.sh "$1"
	fi
}

# build NAME GOARCH CGO CC
build() {
	local name=$1 arch=$2 cgo=$3 cc=$4
	local stage="$work/$name"
	local bin="$work/bin-$name/gpulaunch"
	local goflags=${GOFLAGS:-}
	echo "== $name"
	# The static builds have no C: the floor's build tag and host linker
	# (the Makefile's GLIBC_FLOOR_GOFLAGS) are not theirs.
	if [ "$cgo" != 1 ]; then
		goflags=${goflags//-tags=glibcfloor/}
		goflags=${goflags//-ldflags=-linkmode=external/}
	fi
	GOFLAGS=$goflags CGO_ENABLED=$cgo GOOS=linux GOARCH=$arch CC=$cc $GO build -trimpath -ldflags "$ldflags" -o "$bin" ./cmd/gpulaunch
	make --no-print-directory install PREFIX="$stage" DESTDIR= INSTALL_BIN="$bin" GEN_BIN="$gen" >/dev/null
	floor=$(glibc_floor "$bin" "$cgo")
	echo "   glibc floor: $floor"
	readme "$name" "$arch" "$cgo" "$floor" >"$stage/README.txt"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mode=u+rwX,go=rX --mtime="@$SOURCE_DATE_EPOCH" \
		-C "$work" -cf - "$name" | gzip -n -9 >"$DIST_DIR/$name.tar.gz"
}

# readme NAME ARCH CGO FLOOR: what the tarball's user needs before running it.
readme() {
	local name=$1 arch=$2 cgo=$3 floor=$4 needs what
	if [ "$floor" = none ]; then
		needs="nothing: it is a static binary (CGO_ENABLED=0) and runs on any Linux $arch"
	else
		needs="glibc 2.28 or newer (RHEL/Rocky 8; SLES 15 and HPE Cray OS have 2.31): the newest symbol version the binary needs is GLIBC_$floor (readelf -V bin/gpulaunch), held at or below 2.28 by the build"
	fi
	if [ "$cgo" = 1 ]; then
		what="NVML compiled in: NVIDIA GPUs, their utilisation telemetry and MIG through libnvidia-ml.so.1 where a driver is installed (without one gpulaunch reads sysfs and says so)."
	else
		what="No NVML (CGO_ENABLED=0): NVIDIA GPUs are read from /proc/driver/nvidia and sysfs — placement and binding are the same — but there is no NVML utilisation telemetry, no GPU processes in the summary, and no MIG. AMD and Intel GPUs are the same as in the cgo build (no vendor library is used for them)."
	fi
	cat <<EOF
gpulaunch $VERSION for linux/$arch (commit $COMMIT, built $BUILD_DATE)

Needs: $needs.
$what

Install: unpack anywhere and put bin/ on PATH, e.g.
  mkdir -p \$HOME/.local && tar -xzf $name.tar.gz -C \$HOME/.local
  export PATH=\$HOME/.local/$name/bin:\$PATH MANPATH=\$HOME/.local/$name/share/man:\$MANPATH
or load its Lmod module:
  module use \$HOME/.local/$name/share/lmod/modulefiles && module load gpulaunch
Completions: share/bash-completion/completions/gpulaunch (source it), share/zsh/site-functions/_gpulaunch,
share/fish/vendor_completions.d/gpulaunch.fish; or \`gpulaunch completion bash|zsh|fish\`.

Check: gpulaunch version; gpulaunch info; gpulaunch plan --simulate dgx-h100 -n 8
Docs: share/doc/gpulaunch/README.md, man gpulaunch.
Licence: Apache-2.0, share/doc/gpulaunch/LICENSE; the code linked into the binary, with its
licences: share/doc/gpulaunch/THIRD_PARTY_NOTICES. Changes: share/doc/gpulaunch/CHANGELOG.md.
Verify: in the directory of the downloads, sha256sum -c --ignore-missing SHA256SUMS (it checks
the tarballs that are there). The tarballs are reproducible: make dist of commit $COMMIT
gives the same SHA256SUMS. They are not signed.
EOF
}

# src: the source at this commit with its modules vendored, for builds that
# cannot reach the module proxy (Spack's and EasyBuild's build nodes).
src() {
	local name="gpulaunch-$name_version-src"
	echo "== $name"
	git archive --format=tar --prefix="$name/" HEAD | tar -C "$work" -xf -
	(cd "$work/$name" && $GO mod vendor)
	# the commit and date git would give make (the Makefile reads these
	# where they exist); HEAD's, as the files are HEAD's
	git rev-parse HEAD >"$work/$name/COMMIT"
	echo "$SOURCE_DATE_EPOCH" >"$work/$name/SOURCE_DATE_EPOCH"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mode=u+rwX,go=rX --mtime="@$SOURCE_DATE_EPOCH" \
		-C "$work" -cf - "$name" | gzip -n -9 >"$DIST_DIR/$name.tar.gz"
}

# recipes: packaging/'s Spack recipe and easyconfig with this release's
# version and sums, beside the tarballs they name; the recipe's url (from
# which Spack derives other versions' URLs) names this release.
recipes() {
	local sum_src sum_amd64 sum_arm64
	sum_src=$(sha256sum <"$DIST_DIR/gpulaunch-$name_version-src.tar.gz" | cut -d' ' -f1)
	sum_amd64=$(sha256sum <"$DIST_DIR/gpulaunch-$name_version-linux-amd64.tar.gz" | cut -d' ' -f1)
	sum_arm64=$(sha256sum <"$DIST_DIR/gpulaunch-$name_version-linux-arm64.tar.gz" | cut -d' ' -f1)
	mkdir -p "$DIST_DIR/spack/gpulaunch" "$DIST_DIR/easybuild"
	awk -v line="    version(\"$name_version\", sha256=\"$sum_src\")" \
		'{ print } /^    # versions \(make dist adds/ { print line }' \
		packaging/spack/gpulaunch/package.py |
		sed "s|/releases/download/v[^/\"]*/gpulaunch-[^/\"]*-src\.tar\.gz\"|/releases/download/v$name_version/gpulaunch-$name_version-src.tar.gz\"|" \
		>"$DIST_DIR/spack/gpulaunch/package.py"
	sed -e "s/@VERSION@/$name_version/g" -e "s/@SHA256_AMD64@/$sum_amd64/" -e "s/@SHA256_ARM64@/$sum_arm64/" \
		-e "s/@GLIBC_AMD64@/$glibc_amd64/" -e "s/@GLIBC_ARM64@/$glibc_arm64/" \
		-e '/^# EasyBuild easyconfig/,/^easyblock/{/^#/d}' \
		packaging/easybuild/gpulaunch.eb.in >"$DIST_DIR/easybuild/gpulaunch-$name_version.eb"
}

build "gpulaunch-$name_version-linux-amd64" amd64 1 gcc
glibc_amd64=$floor
build "gpulaunch-$name_version-linux-arm64" arm64 1 "$CROSS_CC"
glibc_arm64=$floor
build "gpulaunch-$name_version-linux-amd64-static" amd64 0 gcc
build "gpulaunch-$name_version-linux-arm64-static" arm64 0 gcc
src
(cd "$DIST_DIR" && sha256sum gpulaunch-"$name_version"-*.tar.gz >SHA256SUMS)
recipes
echo "== $DIST_DIR:"
(cd "$DIST_DIR" && cat SHA256SUMS)
