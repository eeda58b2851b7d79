package metrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
)

// FileName is where this node writes --metrics-file pattern: %j, %s, %N
// and %n expand as in -o; over several nodes a pattern that names no
// node gets the host before .prom, so that each node writes its own
// (instance.NodePath); "" without a pattern. Its name must end in .prom
// (outputs.PromName, checked with the run's other outputs).
func FileName(pattern string, names instance.Names, multiNode bool) (string, error) {
	if pattern == "" {
		return "", nil
	}
	return instance.NodePath("--metrics-file", pattern, names, multiNode)
}

// Exporter is a run's exposition: its collector, written to
// --metrics-file and served on --metrics-listen.
type Exporter struct {
	coll  *Collector
	file  string        // --metrics-file for this node; "" without
	ln    net.Listener  // --metrics-listen's; nil without
	every time.Duration // how often the file is written
	log   *zap.Logger
	// failed: a write failed and was said; the next failure is not.
	failed bool
}

// NewExporter writes coll to file (none: "") every interval, and serves
// it on ln (none: nil); nil when there is neither. An interval of 0
// (telemetry off) is 2 s: the states and counts still change.
func NewExporter(coll *Collector, file string, ln net.Listener, every time.Duration, log *zap.Logger) *Exporter {
	if file == "" && ln == nil {
		return nil
	}
	if every <= 0 {
		every = 2 * time.Second
	}
	return &Exporter{coll: coll, file: file, ln: ln, every: every, log: log}
}

// Run writes the file at the start and every tick, and serves /metrics,
// until ctx ends (the run's end).
func (m *Exporter) Run(ctx context.Context) {
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
		m.Write()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Write replaces the file whole (outputs.WriteWhole: a temp file beside
// it, renamed over it, so that the textfile collector never reads half of
// one). A failure is said once and the run goes on. A nil Exporter, or
// one without a file, writes nothing.
func (m *Exporter) Write() {
	if m == nil || m.file == "" {
		return
	}
	if err := outputs.WriteWhole(m.file, m.coll.Text()); err != nil && !m.failed {
		m.failed = true
		m.log.Warn(fmt.Sprintf("--metrics-file %s: %v: the metrics are not written; the run goes on", m.file, outputs.Pathless(err)))
	}
}
