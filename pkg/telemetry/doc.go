//go:build linux

// Package telemetry measures a run's instances while they run: the
// Sampler's tick (one /proc scan, one GPU query), each instance's
// GPUWatch (its own use of its GPUs — its processes' SM% where the driver
// samples processes, else its GPUs' figure — and memory, and launch
// verification: a process on another instance's GPU, an instance that did
// not use its GPUs), and its Timeline (the
// samples decimated into a bounded Series, and its events) for the
// report's pictures. It holds no lock and decides nothing about the run:
// the supervisor (pkg/launcher) folds each sample in under its own lock
// and acts on what it says (the memory cap, the warnings).
package telemetry
