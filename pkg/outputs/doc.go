// Package outputs is the rules of the files a run writes, checked before
// anything starts or is opened: what an output flag's file name may hold
// (names.go: "-", srun's patterns, replacement strings), whether a file
// written is a file read or another output of another kind (clash.go,
// with a path's identity from identity_linux.go), and whether it can be
// written at all (writable_linux.go); and how a file is written whole
// (write.go). The CLI collects the flags' values and words the refusal's
// exit; nothing here changes the disk but WriteWhole.
package outputs
