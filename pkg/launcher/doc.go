//go:build linux

// Package launcher is the supervisor of a run: it starts each slot of a
// binding.Plan on a thread bound to the slot (pkg/process), follows the
// exits, and carries out what its mode's rules say of them — a run of
// instances (instanceMode and Policy's rules: restarts, -K, -W, the memory
// cap), a --ddp group (groupMode), a task queue or a node's share of one
// (queueMode, feedMode over pkg/taskqueue); it also holds what a run
// publishes (Board for the control socket, Outcome and the exit status,
// the samples pkg/telemetry takes, folded in), and the rules of a run's
// shape among nodes (shape.go) and of its policy's values (policy.go). It
// may touch processes (through pkg/process), signals, timers and the GPU
// source it is given; its rules (mode.go, group.go, policy.go, signals.go,
// outcome.go, shape.go) touch none of them.
package launcher
