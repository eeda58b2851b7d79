package main

import (
	"net"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/metrics"
)

// checkMetricsFlags reads --metrics-file and --metrics-listen as given
// (metrics.CheckFlags): what can be told before anything is looked up
// (the file itself is checkOutputs', with the run's other outputs).
func checkMetricsFlags(file, addr string, changed func(string) bool) error {
	return asUsage(metrics.CheckFlags(file, addr, changed))
}

// lockMetricsFile makes this run the only writer of file (metrics.LockFile);
// a file system without locks is a warning.
func lockMetricsFile(file string, log *zap.Logger) (func(), error) {
	release, unlocked, err := metrics.LockFile(file)
	if unlocked != "" {
		log.Warn(unlocked)
	}
	return release, asUsage(err)
}

// listenMetrics opens --metrics-listen's port before anything starts
// (metrics.Listen); nil without.
func listenMetrics(addr string) (net.Listener, error) {
	ln, err := metrics.Listen(addr)
	return ln, asUsage(err)
}

// newRunMetrics is nil when neither flag was given.
func newRunMetrics(l *launch, ln net.Listener, board *launcher.Board, insts []launcher.Instance, log *zap.Logger) *metrics.Exporter {
	if l.metricsFile == "" && ln == nil {
		return nil
	}
	if l.metricsExpanded {
		log.Info("--metrics-file: this node writes " + l.metricsFile)
	}
	// the host is the node's name in the launch (Slurm's, over several
	// nodes), as its output and report files are named
	coll := metrics.BoardCollector(board, insts, l.names.Host)
	return metrics.NewExporter(coll, l.metricsFile, ln, l.monitor, log)
}
