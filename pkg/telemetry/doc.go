//go:build linux

// Package telemetry measures a run's instances while they run: the
// Sampler's tick (one /proc scan, one GPU query), each instance's
// GPUWatch (its GPUs' use and memory, and launch verification: a process
// on another instance's GPU, GPUs that sat idle), and its Timeline (the
// samples decimated into a bounded Series, and its events) for the
// report's pictures. It holds no lock and decides nothing about the run:
// the supervisor (pkg/launcher) folds each sample in under its own lock
// and acts on what it says (the memory cap, the warnings).
package telemetry
