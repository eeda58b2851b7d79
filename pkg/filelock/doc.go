// Package filelock is the one file lock gpulaunch takes, for the files
// that one run at a time may own: a task queue's joblog
// (taskqueue.LockJoblog) and a --metrics-file (metrics.LockFile). It is
// an open file description lock (fcntl F_OFD_SETLK, filelock_linux.go):
// the kernel drops it when the file is closed, however gpulaunch ends
// (SIGKILL included), so no stale lock is ever left to clear; and it is
// a POSIX byte-range lock to the file system, which local file systems,
// NFS and GPFS honour across their clients (Lustre with -o flock only).
// Only Linux has it: elsewhere the package is empty.
package filelock
