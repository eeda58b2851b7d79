package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/metrics"
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
		return usagef("--metrics-listen %q: %v: give HOST:PORT, e.g. 127.0.0.1:9464 (this node only) or the node's private address", addr, pathless(err))
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return usagef("--metrics-listen %q: the port %q is not a number from 1 to 65535: give HOST:PORT, e.g. 127.0.0.1:9464", addr, port)
	}
	if host == "" {
		return usagef("--metrics-listen %q: no host: the port would be open on every address of the node; give HOST:PORT, e.g. 127.0.0.1:9464 (this node only) or the node's private address (0.0.0.0:PORT for every address)", addr)
	}
	return nil
}

// metricsFile is where this node writes --metrics-file pattern: %j, %s,
// %N and %n expand as in -o; over several nodes a pattern that names no
// node gets the host before .prom, so that each node writes its own.
func metricsFile(pattern string, names instance.Names, multiNode bool) (string, error) {
	if pattern == "" {
		return "", nil
	}
	file, err := nodePath("--metrics-file", pattern, names, multiNode)
	if err != nil {
		return "", usageError{err}
	}
	return file, nil
}

// lockMetricsFile makes this run the only writer of file: a second
// gpulaunch given the same file (a job submitted twice, a name without
// %j) would replace it every sample with its own run's series, so that
// series come and go and run_finished flips. The lock is an open file
// description lock (the joblog's kind: dropped by the kernel however
// gpulaunch ends, SIGKILL included) on a hidden file beside it,
// .NAME.prom.lock — not on the file itself, which every write replaces —
// which node_exporter ignores (it reads *.prom) and the run removes at
// its end. A file system without locks: the run goes on unlocked, with a
// warning. The returned function releases it; without a file it does
// nothing.
func lockMetricsFile(file string, log *zap.Logger) (func(), error) {
	if file == "" {
		return func() {}, nil
	}
	path := filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".lock")
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, usagef("--metrics-file %s: its lock %s cannot be made: %v; nothing was started", file, path, pathless(err))
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	switch err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); {
	case err == nil:
		return func() { os.Remove(path); f.Close() }, nil
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES):
		f.Close()
		return nil, usagef("--metrics-file %s: another gpulaunch on this node is writing it (it holds %s): give each run its own file, e.g. gpulaunch-%%j.prom; nothing was started", file, path)
	default:
		if statErr != nil {
			os.Remove(path)
		}
		f.Close()
		log.Warn(fmt.Sprintf("--metrics-file %s: this file system does not lock files (%v): a second gpulaunch given the same file would not be refused", file, err))
		return func() {}, nil
	}
}

// promName says why node_exporter's textfile collector would not read
// file: it reads *.prom only.
func promName(file string) error {
	if strings.HasSuffix(filepath.Base(file), ".prom") && filepath.Base(file) != ".prom" {
		return nil
	}
	return fmt.Errorf("node_exporter's textfile collector reads only files named *.prom and would ignore this one: give a name ending in .prom (e.g. gpulaunch-%%j.prom)")
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
		return nil, usagef("--metrics-listen %s: %v: give an address of this node (127.0.0.1:PORT, or its private address): nothing was started", addr, pathless(err))
	}
	return ln, nil
}

// instanceStates are every state a row of the board may show, the values
// of the metrics' state enum.
var instanceStates = []string{launcher.StateStarting, launcher.StateRunning, launcher.StateStopping,
	launcher.StateRestarting, launcher.StateWaiting, launcher.StateExited}

// runMetrics is a run's exposition: its collector, read from the board at
// every collect, written to --metrics-file and served on --metrics-listen.
type runMetrics struct {
	coll  *metrics.Collector
	file  string        // --metrics-file for this node; "" without
	ln    net.Listener  // --metrics-listen's; nil without
	every time.Duration // how often the file is written
	log   *zap.Logger
	// failed: a write failed and was said; the next failure is not.
	failed bool
}

// newRunMetrics is nil when neither flag was given.
func newRunMetrics(l *launch, ln net.Listener, board *launcher.Board, insts []launcher.Instance, log *zap.Logger) *runMetrics {
	file, monitor := l.metricsFile, l.monitor
	if file == "" && ln == nil {
		return nil
	}
	// the host is the node's name in the launch (Slurm's, over several
	// nodes), as its output and report files are named
	host := l.names.Host
	read := func() metrics.Snapshot { return metricsSnapshot(board.Snapshot(), insts, host) }
	every := monitor
	if every <= 0 {
		// telemetry off: the states and counts still change
		every = 2 * time.Second
	}
	if l.metricsExpanded {
		log.Info("--metrics-file: this node writes " + file)
	}
	return &runMetrics{coll: metrics.NewCollector(read, instanceStates), file: file, ln: ln, every: every, log: log}
}

// run writes the file at the start and every tick, and serves /metrics,
// until ctx ends (the run's end).
func (m *runMetrics) run(ctx context.Context) {
	if m.ln != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.coll)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(m.ln) }()
		defer srv.Close()
	}
	if m.file == "" {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		m.write()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// write replaces the file whole (a temp file beside it, renamed over it:
// the textfile collector never reads half of one). A failure is said
// once and the run goes on.
func (m *runMetrics) write() {
	if m == nil || m.file == "" {
		return
	}
	if err := writeWhole(m.file, m.coll.Text()); err != nil && !m.failed {
		m.failed = true
		m.log.Warn(fmt.Sprintf("--metrics-file %s: %v: the metrics are not written; the run goes on", m.file, pathless(err)))
	}
}

// metricsSnapshot is the board's table as the collector reads it, with
// each instance's GPUs by UUID from the launch and the node's name.
func metricsSnapshot(s launcher.Snapshot, insts []launcher.Instance, host string) metrics.Snapshot {
	ms := metrics.Snapshot{Job: s.Run.JobID, Step: s.Run.StepID, Host: host, Finished: s.Run.Finished}
	if q := s.Queue; q != nil {
		// Left is every task not finished — waiting, running, or ended
		// unfinished by a signal — as the summary and --resume count them:
		// Remaining + Running would lose the tasks a stop killed.
		ms.Queue = &metrics.Queue{Total: q.Total, Done: q.Done, Failed: q.Failed, Running: q.Running, Left: max(0, q.Total-q.Skipped-q.Done)}
	}
	for i, r := range s.Instances {
		mi := metrics.Instance{Index: r.Index, Rank: r.Rank, State: r.State, CPUSeconds: r.CPUSeconds, RSS: r.RSS, Restarts: r.Restarts}
		// the board keeps a slot's last task after it ended; the metrics
		// name a task only while a process of it lives (the file is kept
		// after the run, and must not show tasks running there)
		if r.State == launcher.StateRunning || r.State == launcher.StateStopping {
			mi.Task = r.Task
		}
		sampled := map[string]launcher.GPUSample{}
		for _, g := range r.GPUSamples {
			sampled[g.UUID] = g
		}
		if i < len(insts) {
			for _, u := range insts[i].GPUUUIDs {
				g, ok := sampled[u]
				mi.GPUs = append(mi.GPUs, metrics.GPU{UUID: u, Sampled: ok, Utilization: ratio(g.Util), MemoryBytes: g.Mem})
			}
		}
		ms.Instances = append(ms.Instances, mi)
	}
	return ms
}

// ratio is a percentage as a ratio; -1 (unknown) stays negative.
func ratio(pct int) float64 {
	if pct < 0 {
		return -1
	}
	return float64(pct) / 100
}

// nodePath is where this node writes the file pattern names: its %j, %s,
// %N, %n expanded; over several nodes a pattern without %N or %n gets the
// host before its extension, so that each node writes its own. %t, an
// instance, is refused: the file is one per node, with every instance in
// it (--report r-%t.json wrote one r-0.json for two instances).
func nodePath(flag, pattern string, names instance.Names, multiNode bool) (string, error) {
	if strings.Contains(strings.ReplaceAll(pattern, "%%", ""), "%t") {
		return "", fmt.Errorf("%s %s: %%t is an instance, but this file is one per node with every instance in it: use %%N or %%n for the node (and %%j for the job)", flag, pattern)
	}
	p, err := instance.ExpandPattern(pattern, 0, names)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	other := names
	other.Host, other.NodeIndex = names.Host+"-other", names.NodeIndex+1
	if q, _ := instance.ExpandPattern(pattern, 0, other); multiNode && q == p {
		ext := filepath.Ext(p)
		p = strings.TrimSuffix(p, ext) + "." + names.Host + ext
	}
	return p, nil
}
