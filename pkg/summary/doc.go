//go:build linux

// Package summary writes the tables a user reads: on stderr when a run
// ends, the table of a run's instances, of a queue's slots with its
// tasks' counts, or of a node's share of a queue over several; while a
// queue runs on a terminal, its progress line (progress.go); and the
// live table of `gpulaunch status` and each frame of `top`
// (WriteStatus), fitted to a terminal by pkg/table. Each is painted for
// a terminal (Paint) or plain, by one rule of when (UseColour: a
// terminal, no NO_COLOR, no TERM=dumb); WarningsOnly keeps the warnings
// alone (-q). It reads outcomes, snapshots and counts and writes text;
// it decides nothing (the exit status is pkg/launcher's and
// pkg/taskqueue's).
package summary
