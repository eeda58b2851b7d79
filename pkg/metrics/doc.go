// Package metrics is a run's exposition for a site's monitoring: the
// series of a run's live state (a Snapshot, what `gpulaunch status`
// shows) — per instance its state, CPU time, resident memory, restarts,
// and per GPU (label gpu_uuid, the join key with DCGM's and jobstats'
// series) its utilisation and memory; per queue its tasks — and
// Prometheus's text format, which node_exporter's textfile collector
// reads and /metrics serves (metrics.go).
//
// It writes the format itself rather than through client_golang, whose
// package initialisation (its default registry's Go and process
// collectors, procfs, protocol buffers: 4 ms of init in
// GODEBUG=inittrace=1) every start of gpulaunch paid, rank mode's
// included. Measured with scripts/bench-start.sh, before and after in
// one run of 150 interleaved starts on a 2-CPU machine: `gpulaunch
// version` 33.4 → 24.8 ms (0.74×), `gpulaunch exec -- true` 43.7 → 34.7 ms
// (0.79×); the binary 26.2 → 23.0 MB. client_golang stays in the tests,
// which check the text with its parser and promlint.
//
// It keeps no state of its own and samples nothing: the supervisor's
// sampler measures, the board's table becomes a Snapshot by FromBoard's
// rules (board_linux.go). metrics.go is pure; file.go names the
// --metrics-file (FileName) and its Exporter writes it whole
// and serves /metrics on the listener it is given, which flags.go opens
// (Listen) once the flags are checked (CheckFlags); lock_linux.go keeps a
// second gpulaunch off the file (pkg/filelock, the joblog's lock). The
// Linux-only parts (the board, the lock) are the _linux.go files: the
// rest builds everywhere.
package metrics
