# gpulaunch — the README's two commands are `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin/gpulaunch
# The version, commit and date make stamps into the binary (`gpulaunch
# version`). The version is the VERSION file's: a release needs no tag, and
# a tree without git (the source tarball) knows it. The commit and date are
# git's; the source tarball carries them in the files COMMIT and
# SOURCE_DATE_EPOCH (scripts/dist.sh writes them), which win when present —
# a tarball unpacked inside another checkout (a Spack stage in a home that
# is a git repo) must not take that checkout's commit. The date is the
# commit's (SOURCE_DATE_EPOCH overrides it), not the clock's: the same
# commit builds the same file, and the tarballs of `make dist` the same sums.
VERSION := $(strip $(shell cat VERSION 2>/dev/null))
$(if $(VERSION),,$(error VERSION: the file VERSION (the release number, e.g. 1.0.0) is missing or empty))
ifneq ($(wildcard COMMIT),)
COMMIT := $(strip $(shell cat COMMIT))
SOURCE_DATE_EPOCH ?= $(strip $(shell cat SOURCE_DATE_EPOCH))
# go build asks no git there either: inside another checkout it would
# record that checkout's commit in the binary's build information (`go
# version -m`), and it fails outright where git refuses that checkout
# ("dubious ownership": a tree owned by another user).
BUILDVCS := -buildvcs=false
else
COMMIT := $(shell c=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null && echo $$c || echo $$c+dirty; })
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)
endif
BUILD_DATE := $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
# No -s -w: stripping the symbol table and DWARF makes the file 23% smaller
# (23.0 -> 17.8 MB) but its start not measurably faster (scripts/bench-start.sh,
# two runs of 150-200 interleaved starts: 0.86-0.93x, then 0.98-1.01x; the
# loaded segments are the same), and debuggers and perf need them.
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(BUILD_DATE)
export SOURCE_DATE_EPOCH

# cgo builds get a private temp dir: a stray nvml.h in a shared /tmp is
# picked up by gcc and breaks go-nvml's build. go-nvml's header also warns
# about every deprecated NVML call; those warnings are noise here.
export TMPDIR := $(CURDIR)/.tmp
export CGO_CFLAGS := -Wno-deprecated-declarations
$(shell mkdir -p $(TMPDIR))

# The glibc floor: cgo binaries that need nothing newer than GLIBC_2.28
# (RHEL/Rocky 8), built against this machine's newer glibc. Its rules are
# numbered in pkg/glibcfloor/pins.h, the header that pins each symbol newer
# than the floor to its old version; here is only where they apply:
# 1. Every C unit of the build gets the header (CGO_CFLAGS -include:
#    runtime/cgo, net and go-nvml too) and the build the tag glibcfloor,
#    which links pkg/glibcfloor's start path and libraries (crt1's
#    __libc_start_main, DT_NEEDED). Exported, so that make build, make
#    test, make integration's gpulaunch and make dist all build the binary
#    the release ships.
# 2. Only where the pins mean something: cgo for glibc on linux/amd64 or
#    linux/arm64 (`go env`, and the C compiler's -dumpmachine *-linux-gnu:
#    CC=aarch64-linux-gnu-gcc GOARCH=arm64 qualifies). Elsewhere — musl,
#    darwin, another architecture, CGO_ENABLED=0 — or with GLIBC_FLOOR=off
#    the build is the plain one and needs the glibc it was built against;
#    make dist refuses to run without the floor.
# 3. The header's sum is in the flags: go's build cache does not track a
#    forced header, and an edited pin must rebuild what it changes.
# 4. Every link is the host linker's (-linkmode=external in GOFLAGS): go's
#    own linker, which links a program whose only cgo is the standard
#    library's (runtime/cgo, net: most test binaries, test/rendezvous),
#    cannot bind a pinned name ("relocation target
#    pthread_create@GLIBC_2.2.5 not defined"). gpulaunch itself is linked
#    by the host linker anyway (go-nvml is cgo). A CGO_ENABLED=0 go command
#    (make test's second pass) is given GOFLAGS without it (NOFLOOR_GOFLAGS).
GLIBC_FLOOR ?= auto
GLIBC_PINS := $(CURDIR)/pkg/glibcfloor/pins.h
GLIBC_FLOOR_APPLIES := $(if $(filter auto,$(GLIBC_FLOOR)),$(shell set -- $$($(GO) env GOOS GOARCH CGO_ENABLED CC 2>/dev/null); \
  [ $$# -ge 4 ] || exit 0; target="$$1/$$2/$$3"; shift 3; machine=$$("$$@" -dumpmachine 2>/dev/null); \
  case "$$target/$$machine" in (linux/amd64/1/x86_64-*linux-gnu|linux/arm64/1/aarch64-*linux-gnu) echo yes;; esac))
# A make run inside another (the tests') starts from the user's GOFLAGS.
GLIBC_FLOOR_GOFLAGS := -tags=glibcfloor -ldflags=-linkmode=external
NOFLOOR_GOFLAGS := $(strip $(filter-out $(GLIBC_FLOOR_GOFLAGS),$(GOFLAGS)))
export GOFLAGS := $(NOFLOOR_GOFLAGS)
ifeq ($(GLIBC_FLOOR_APPLIES),yes)
CGO_CFLAGS += -include $(GLIBC_PINS) -DGPULAUNCH_GLIBC_PINS=$(shell sha256sum <$(GLIBC_PINS) | cut -c1-16)
GOFLAGS += $(GLIBC_FLOOR_GOFLAGS)
endif
export GLIBC_FLOOR_APPLIES

FUZZTIME ?= 30s
FUZZ_TARGETS := ./pkg/cpuset:FuzzParse ./pkg/gpuvendor:FuzzVisibleDevices ./pkg/sched:FuzzHostlist ./pkg/sched:FuzzCounts \
  ./pkg/gpuvendor:FuzzAMDVisible ./pkg/gpuvendor:FuzzZEMask ./pkg/gpu:FuzzKFDProperties ./pkg/gpu:FuzzIntelUevent \
  ./pkg/taskqueue:FuzzSplitWords ./pkg/taskqueue:FuzzFillTemplate ./pkg/taskqueue:FuzzShellJoin \
  ./cmd/gpulaunch:FuzzParseArgs ./pkg/nodelink:FuzzWire

# Pure packages: no cgo, no Linux specifics outside _linux.go files, so
# they build (and vet) for any GOOS; lint checks them on darwin.
PURE_PKGS := ./pkg/cpuset ./pkg/binding ./pkg/sched ./pkg/cgroup ./pkg/nodegroup ./pkg/discover ./pkg/gpu ./pkg/gpuvendor ./pkg/scaling ./pkg/chart ./pkg/jsonerr ./pkg/privatedir ./pkg/job ./pkg/instance ./pkg/taskqueue ./pkg/nodelink ./pkg/mps ./pkg/metrics ./pkg/table ./pkg/clidoc ./pkg/flagvalue ./pkg/filelock ./pkg/outputs ./pkg/tmux ./pkg/logging ./pkg/fate ./pkg/ddpgroup ./pkg/sitedefaults

.PHONY: build test integration demo bench bench-scale fuzz lint clean pictures stress dist install uninstall gpu-check

build:
	$(GO) build -trimpath $(BUILDVCS) -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/gpulaunch

lint:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	CGO_ENABLED=0 GOFLAGS="$(NOFLOOR_GOFLAGS)" $(GO) vet ./...
	$(GO) vet -tags integration ./test/...
	GOOS=darwin CGO_ENABLED=0 GOFLAGS="$(NOFLOOR_GOFLAGS)" $(GO) vet $(PURE_PKGS)
	$(GO) mod tidy -diff

test: lint
	$(GO) test -race -count=1 ./...
	CGO_ENABLED=0 GOFLAGS="$(NOFLOOR_GOFLAGS)" $(GO) test -count=1 ./...

# Signal sequences to real gpulaunch processes (README.md, "Signals"):
# STRESS_SEQUENCES random ones and the scripted ones, to a normal build and
# to a -race build of gpulaunch (the test binary is the gpulaunch it runs).
# A failure prints the seed that replays it. Measured on a 2-CPU machine:
# 50 sequences, 5 at a time, took 30-50 s (-race: 71 s), so the default
# takes about 8 min + 12 min.
STRESS_SEQUENCES ?= 500
STRESS_PARALLEL ?= 5
stress:
	GPULAUNCH_STRESS_SEQUENCES=$(STRESS_SEQUENCES) GPULAUNCH_STRESS_PARALLEL=$(STRESS_PARALLEL) \
	  $(GO) test -count=1 -timeout 60m -run '^TestSignalSequences$$' -v ./cmd/gpulaunch 2>&1 | grep -v -E '^=== (RUN|PAUSE|CONT)'; exit $${PIPESTATUS[0]}
	GPULAUNCH_STRESS_SEQUENCES=$(STRESS_SEQUENCES) GPULAUNCH_STRESS_PARALLEL=$(STRESS_PARALLEL) \
	  $(GO) test -race -count=1 -timeout 60m -run '^TestSignalSequences$$' -v ./cmd/gpulaunch 2>&1 | grep -v -E '^=== (RUN|PAUSE|CONT)'; exit $${PIPESTATUS[0]}

# Real Slurm 22.05 + OpenMPI + MPICH on this machine (root; see docs/testbed.md).
INTEGRATION_TIMEOUT ?= 15m
integration:
	@if [ "$$(id -u)" != 0 ]; then echo "integration: SKIP: needs root to run slurmctld/slurmd (CI runs it as root)"; exit 0; fi; \
	  echo "== integration, one node"; \
	  scripts/slurm-testbed.sh up && \
	  (cd test/integration && $(GO) test -tags integration -count=1 -v -timeout $(INTEGRATION_TIMEOUT) -skip 'MultiNode|AMD' . 2>&1 | \
	    grep -v -E '^=== (RUN|PAUSE|CONT)'; exit $${PIPESTATUS[0]}) && \
	  echo "== integration, three nodes (each slurmd in its own network namespace)" && \
	  TESTBED_NODES=3 scripts/slurm-testbed.sh up && \
	  (cd test/integration && TESTBED_NODES=3 $(GO) test -tags integration -count=1 -v -timeout $(INTEGRATION_TIMEOUT) -run MultiNode . 2>&1 | \
	    grep -v -E '^=== (RUN|PAUSE|CONT)'; exit $${PIPESTATUS[0]}) && \
	  echo "== integration, AMD GPUs (8 fake render nodes, ROCR_VISIBLE_DEVICES from gres)" && \
	  TESTBED_VENDOR=amd TESTBED_GPUS=8 scripts/slurm-testbed.sh up && \
	  (cd test/integration && $(GO) test -tags integration -count=1 -v -timeout $(INTEGRATION_TIMEOUT) -run AMD . 2>&1 | \
	    grep -v -E '^=== (RUN|PAUSE|CONT)'; exit $${PIPESTATUS[0]})

demo: build
	@echo '$$ gpulaunch plan --simulate dgx-a100 -n 8     # GPU 0 sits on NUMA node 2 on a DGX A100'
	@$(BIN) plan --simulate dgx-a100 -n 8
	@echo
	@echo '$$ gpulaunch plan --simulate lumi-g -n 8       # LUMI-G / Frontier: GCD g on the CCD wired to it'
	@$(BIN) plan --simulate lumi-g -n 8
	@echo
	@echo '$$ gpulaunch -n 8 -l --simulate dgx-h100 --monitor-interval 100ms -- scripts/demo-app.sh'
	@$(BIN) -n 8 -l --simulate dgx-h100 --monitor-interval 100ms -- scripts/demo-app.sh
	@echo
	@echo '$$ gpulaunch -n 2 -G 0 -l -- scripts/demo-app.sh     # this machine: CPU binding really applied'
	@$(BIN) -n 2 -G 0 -l -- scripts/demo-app.sh
	@echo
	@echo '$$ gpulaunch info     # this machine'
	@$(BIN) info

# Release artefacts in dist/ (DIST_DIR=…): tarballs for linux amd64 and
# arm64 (cgo, NVML in) and their -static variants (CGO_ENABLED=0, any
# glibc), the source with its modules vendored, SHA256SUMS, and the Spack
# recipe and easyconfig with their sums filled in (scripts/dist.sh).
# arm64 is cross-built with Debian's gcc-aarch64-linux-gnu.
dist:
	VERSION=$(VERSION) COMMIT=$(COMMIT) BUILD_DATE=$(BUILD_DATE) GO=$(GO) scripts/dist.sh

# make install PREFIX=/usr/local (DESTDIR=… stages it; docs/install.md):
#   PREFIX/bin/gpulaunch                          INSTALL_BIN (default: make build's)
#   PREFIX/share/man/man1/gpulaunch.1             `gpulaunch man`
#   PREFIX/share/bash-completion/completions/gpulaunch, share/zsh/site-functions/_gpulaunch,
#   PREFIX/share/fish/vendor_completions.d/gpulaunch.fish   `gpulaunch completion SHELL`
#   PREFIX/share/doc/gpulaunch/                   README.md, LICENSE, THIRD_PARTY_NOTICES, CHANGELOG.md,
#                                                 docs/*.md, the schemas, pictures
#   MODULEFILES/gpulaunch/VERSION.lua             the Lmod modulefile (packaging/lmod)
# The man page and completions are written by GEN_BIN, a gpulaunch this
# machine runs (make build's); INSTALL_BIN may be another architecture's
# (make dist). Given INSTALL_BIN or GEN_BIN, install builds nothing.
# MODULEFILES defaults to PREFIX/share/lmod/modulefiles, where the
# modulefile finds the tree from its own path, links resolved (the tree can
# move: the release tarballs are this tree; a site's tree may link to it);
# elsewhere it gets PREFIX written into its line `local root = ""`.
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_BIN ?= $(BIN)
GEN_BIN ?= $(BIN)
MODULEFILES ?= $(PREFIX)/share/lmod/modulefiles
MODULE_VERSION := $(patsubst v%,%,$(VERSION))
INSTALL_ROOT = $(DESTDIR)$(PREFIX)
install: $(if $(filter command line,$(origin INSTALL_BIN) $(origin GEN_BIN)),,build)
	@test -x "$(INSTALL_BIN)" || { echo "install: INSTALL_BIN=$(INSTALL_BIN) is not an executable (make build makes bin/gpulaunch)" >&2; exit 2; }
	@"$(GEN_BIN)" version >/dev/null || { echo "install: GEN_BIN=$(GEN_BIN) does not run here: give a gpulaunch built for this machine (make build)" >&2; exit 2; }
	install -d "$(INSTALL_ROOT)/bin" "$(INSTALL_ROOT)/share/man/man1" "$(INSTALL_ROOT)/share/bash-completion/completions" \
	  "$(INSTALL_ROOT)/share/zsh/site-functions" "$(INSTALL_ROOT)/share/fish/vendor_completions.d" \
	  "$(INSTALL_ROOT)/share/doc/gpulaunch/docs" "$(DESTDIR)$(MODULEFILES)/gpulaunch"
	install -m 0755 "$(INSTALL_BIN)" "$(INSTALL_ROOT)/bin/gpulaunch"
	"$(GEN_BIN)" man >"$(INSTALL_ROOT)/share/man/man1/gpulaunch.1"
	"$(GEN_BIN)" completion bash >"$(INSTALL_ROOT)/share/bash-completion/completions/gpulaunch"
	"$(GEN_BIN)" completion zsh >"$(INSTALL_ROOT)/share/zsh/site-functions/_gpulaunch"
	"$(GEN_BIN)" completion fish >"$(INSTALL_ROOT)/share/fish/vendor_completions.d/gpulaunch.fish"
	install -m 0644 README.md LICENSE THIRD_PARTY_NOTICES CHANGELOG.md "$(INSTALL_ROOT)/share/doc/gpulaunch/"
	install -m 0644 $(wildcard docs/*.md docs/*.json docs/*.svg) "$(INSTALL_ROOT)/share/doc/gpulaunch/docs/"
	sed -e 's|@VERSION@|$(MODULE_VERSION)|g' \
	  -e 's|@PREFIX@|$(if $(filter $(PREFIX)/share/lmod/modulefiles,$(MODULEFILES)),,$(PREFIX))|g' \
	  packaging/lmod/gpulaunch.lua >"$(DESTDIR)$(MODULEFILES)/gpulaunch/$(MODULE_VERSION).lua"
	chmod 0644 "$(INSTALL_ROOT)/share/man/man1/gpulaunch.1" "$(INSTALL_ROOT)/share/bash-completion/completions/gpulaunch" \
	  "$(INSTALL_ROOT)/share/zsh/site-functions/_gpulaunch" "$(INSTALL_ROOT)/share/fish/vendor_completions.d/gpulaunch.fish" \
	  "$(DESTDIR)$(MODULEFILES)/gpulaunch/$(MODULE_VERSION).lua"

# make uninstall PREFIX=… (MODULEFILES=…): removes what install wrote.
uninstall:
	rm -f "$(INSTALL_ROOT)/bin/gpulaunch" "$(INSTALL_ROOT)/share/man/man1/gpulaunch.1" \
	  "$(INSTALL_ROOT)/share/bash-completion/completions/gpulaunch" "$(INSTALL_ROOT)/share/zsh/site-functions/_gpulaunch" \
	  "$(INSTALL_ROOT)/share/fish/vendor_completions.d/gpulaunch.fish" "$(DESTDIR)$(MODULEFILES)/gpulaunch/$(MODULE_VERSION).lua"
	rm -rf "$(INSTALL_ROOT)/share/doc/gpulaunch"
	-rmdir "$(DESTDIR)$(MODULEFILES)/gpulaunch" 2>/dev/null

bench:
	@scripts/bench.sh

# The checks of a real NVIDIA GPU, at most 4 minutes (scripts/gpu-check.sh:
# PASS/FAIL per check, "N passed, M failed"); on a machine without one it
# exits 2 with one line. It depends on nothing: a bin/gpulaunch that exists
# is used as it is, never rebuilt with cgo (a GPU machine may have no Go or
# gcc, and the binary was carried there), and the script prints its version
# beside the tree's commit; without one the script runs make build.
gpu-check:
	@scripts/gpu-check.sh

# The holder of a task queue over 1,000 and 10,000 simulated nodes
# (test/scale, scripts/bench-holder.sh), medians of 3 runs: about 10
# minutes on a 2-CPU machine. OLD=BINARY measures a binary before beside it.
BENCH_HOLDER_RUNS ?= 3
bench-scale: build
	BENCH_HOLDER_RUNS=$(BENCH_HOLDER_RUNS) scripts/bench-holder.sh

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# docs' pictures, remade from simulated runs: the scaling study of the
# Amdahl test app (docs/scaling.md) and a run's GPU use (docs/report.md)
pictures: build
	$(BIN) scale -G 1,2,4,8 --repeat 3 --simulate dgx-h100 --monitor-interval 200ms --metric 'throughput: ([0-9.]+)' --unit samples/s \
	  --svg docs/scaling-amdahl.svg -- scripts/amdahl-app.sh
	$(BIN) -n 8 -l --restarts 1 --simulate dgx-h100 --monitor-interval 200ms --report .tmp/picture-run.json -- scripts/picture-app.sh >/dev/null
	$(BIN) report .tmp/picture-run.json --svg docs/report-example.svg

clean:
	rm -rf bin .tmp dist
