//go:build linux

// Package summary writes what a user reads on stderr when a run ends: the
// table of a run's instances, of a queue's slots with its tasks' counts,
// or of a node's share of a queue over several; painted for a terminal
// (Paint) or plain; and, while a queue runs on a terminal, its progress
// line (progress.go). It reads outcomes and counts and writes text; it
// decides nothing (the exit status is pkg/launcher's and pkg/taskqueue's).
package summary
