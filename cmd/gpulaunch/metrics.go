package main

import (
	"errors"
	"net"
	"strconv"
	"syscall"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/metrics"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
)

// checkMetricsFlags reads --metrics-file and --metrics-listen as given:
// what can be told before anything is looked up (the file itself is
// checkOutputs', with the run's other outputs).
func checkMetricsFlags(file, addr string, changed func(string) bool) error {
	if changed("metrics-file") && file == "" {
		return usagef(`--metrics-file "": give the .prom file to write the run's metrics to (in node_exporter's textfile directory), or drop the flag`)
	}
	if !changed("metrics-listen") {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--metrics-listen %q: %v: give HOST:PORT, e.g. 127.0.0.1:9464 (this node only) or the node's private address", addr, outputs.Pathless(err))
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return usagef("--metrics-listen %q: the port %q is not a number from 1 to 65535: give HOST:PORT, e.g. 127.0.0.1:9464", addr, port)
	}
	if host == "" {
		return usagef("--metrics-listen %q: no host: the port would be open on every address of the node; give HOST:PORT, e.g. 127.0.0.1:9464 (this node only) or the node's private address (0.0.0.0:PORT for every address)", addr)
	}
	return nil
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

// listenMetrics opens --metrics-listen's port before anything starts, so
// that an address in use is refused with nothing started; nil without.
func listenMetrics(addr string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err // "bind: …", without the address said already
	}
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, usagef("--metrics-listen %s: the port is in use (another gpulaunch on this node? each run needs its own port): give another port: nothing was started", addr)
	case err != nil:
		return nil, usagef("--metrics-listen %s: %v: give an address of this node (127.0.0.1:PORT, or its private address): nothing was started", addr, outputs.Pathless(err))
	}
	return ln, nil
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
