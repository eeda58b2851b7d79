// Package metrics is a run's exposition for a site's monitoring: a
// Prometheus collector that reads the run's live state (a Snapshot, what
// `gpulaunch status` shows) at every collect and turns it into series —
// per instance its state, CPU time, resident memory, restarts, and per
// GPU (label gpu_uuid, the join key with DCGM's and jobstats' series)
// its utilisation and memory; per queue its tasks — and the text format
// that node_exporter's textfile collector reads (metrics.go).
//
// It keeps no state of its own and samples nothing: the supervisor's
// sampler measures, the caller hands over a snapshot. It touches no file
// and no socket (the caller writes the text and serves the registry), so
// it builds everywhere.
package metrics
