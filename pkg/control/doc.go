//go:build linux

// Package control is a running gpulaunch's control socket: a Unix socket
// private to its user through which `gpulaunch status`, `top`, `logs`
// and `signal` talk to it from another shell on the same node.
//
// Privacy has three layers, each enough alone: the socket lives in a
// directory only its owner may enter (0700, checked, never trusted when
// someone else owns it), the socket itself is 0600, and the server checks
// the peer's uid on every connection (SO_PEERCRED), which also stops a
// peer who reaches the socket some other way (a directory made
// accessible by mistake, a descriptor passed on).
//
// Its client side also holds the clients' rules: which running gpulaunch
// a command means (Choose: --pid, --socket, the job's one run), how
// top follows a run to its end (Watch), logs' --tail (Tail) and signal's
// INSTANCE (ParseTarget). A run opens its socket with ListenRun, which
// leaves nothing behind when a run that requires it is refused.
//
// It may touch the socket, its directory and the run's Board (pkg/launcher),
// which it reads and asks to signal; it starts no process.
package control
