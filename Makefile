# gpulaunch — the README's two commands are `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin/gpulaunch
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)

# cgo builds get a private temp dir: a stray nvml.h in a shared /tmp is
# picked up by gcc and breaks go-nvml's build. go-nvml's header also warns
# about every deprecated NVML call; those warnings are noise here.
export TMPDIR := $(CURDIR)/.tmp
export CGO_CFLAGS := -Wno-deprecated-declarations
$(shell mkdir -p $(TMPDIR))

FUZZTIME ?= 30s
FUZZ_TARGETS := ./pkg/cpuset:FuzzParse ./pkg/binding:FuzzVisibleDevices ./pkg/binding:FuzzHostlist ./pkg/binding:FuzzCounts \
  ./pkg/binding:FuzzAMDVisible ./pkg/binding:FuzzZEMask ./pkg/gpu:FuzzKFDProperties ./pkg/gpu:FuzzIntelUevent \
  ./pkg/taskqueue:FuzzSplitWords ./pkg/taskqueue:FuzzFillTemplate ./cmd/gpulaunch:FuzzShellJoin \
  ./cmd/gpulaunch:FuzzParseArgs

# Pure packages: no cgo, no Linux specifics outside _linux.go files, so
# they build (and vet) for any GOOS; lint checks them on darwin.
PURE_PKGS := ./pkg/cpuset ./pkg/binding ./pkg/gpu ./pkg/scaling ./pkg/chart ./pkg/jsonerr ./pkg/privatedir ./pkg/job ./pkg/instance ./pkg/taskqueue ./pkg/nodelink ./pkg/mps ./pkg/metrics

.PHONY: build test integration demo bench fuzz lint clean pictures stress

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/gpulaunch

lint:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet ./...
	$(GO) vet -tags integration ./test/...
	GOOS=darwin CGO_ENABLED=0 $(GO) vet $(PURE_PKGS)
	$(GO) mod tidy -diff

test: lint
	$(GO) test -race -count=1 ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./...

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
	  echo "== integration, two nodes (each slurmd in its own network namespace)" && \
	  TESTBED_NODES=2 scripts/slurm-testbed.sh up && \
	  (cd test/integration && TESTBED_NODES=2 $(GO) test -tags integration -count=1 -v -timeout $(INTEGRATION_TIMEOUT) -run MultiNode . 2>&1 | \
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

bench:
	@scripts/bench.sh

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
	rm -rf bin .tmp
