// Package outputs is the rules of the files a run writes, checked before
// anything starts or is opened: what an output flag's file name may hold
// (names.go: "-", srun's patterns, replacement strings), whether a file
// written is a file read or another output of another kind (clash.go,
// with a path's identity from identity_linux.go), and whether it can be
// written at all (writable_linux.go; a document a command writes whole:
// Document); the files a run or a study reads, which no output may be
// (reads.go: Reads); which of a run's files are checked,
// in what order (run_linux.go: RunFiles.Check, a task's files per slot:
// TaskStreams); and how a file is written whole (write.go). The CLI
// collects the flags' values and makes a refusal its usage error (exit
// 2); nothing here changes the disk but WriteWhole.
package outputs
