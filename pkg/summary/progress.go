//go:build linux

package summary

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// Progress keeps one line of a task queue's progress at the bottom of a
// terminal, while the queue runs: its counts (taskqueue.QueueStatus, "left":
// not started), the rate of tasks done and the ETA at that rate.
// Everything else written to the terminal goes through its writers
// (Wrap), which clear the line first; the next update draws it again.
type Progress struct {
	mu      sync.Mutex
	term    io.Writer
	shown   bool
	last    taskqueue.QueueStatus
	drawn   time.Time
	started time.Time
}

type progressWriter struct {
	p *Progress
	w io.Writer
}

func (w progressWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.p.clearLocked()
	return w.w.Write(b)
}

// NewProgress is the line of a queue started at started, drawn on term.
func NewProgress(term io.Writer, started time.Time) *Progress {
	return &Progress{term: term, started: started}
}

// Wrap is w, which clears the line before each write.
func (p *Progress) Wrap(w io.Writer) io.Writer { return progressWriter{p, w} }

func (p *Progress) clearLocked() {
	if p.shown {
		io.WriteString(p.term, "\r\x1b[K")
		p.shown = false
	}
}

// Update takes new counts; the line is redrawn at most ten times a second.
func (p *Progress) Update(qs taskqueue.QueueStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = qs
	if time.Since(p.drawn) >= 100*time.Millisecond {
		p.drawLocked()
	}
}

func (p *Progress) drawLocked() {
	q := p.last
	text := fmt.Sprintf("tasks: %d/%d done", q.Done, q.Total-q.Skipped)
	if q.Skipped > 0 {
		text += fmt.Sprintf(" (+%d from the joblog)", q.Skipped)
	}
	text += fmt.Sprintf(", %d failed, %d running, %d left", q.Failed, q.Running, q.Remaining)
	elapsed := time.Since(p.started)
	if q.Done > 0 && elapsed > 0 {
		rate := float64(q.Done) / elapsed.Seconds()
		eta := time.Duration(float64(q.Remaining+q.Running) / rate * float64(time.Second)).Round(time.Second)
		text += fmt.Sprintf(" · %.1f/s · ETA %s", rate, eta)
	}
	if q.Halted != "" {
		text += " · stopping: " + q.Halted
	}
	io.WriteString(p.term, "\r\x1b[K"+text)
	p.shown, p.drawn = true, time.Now()
}

// Tick redraws now and then, so that the ETA moves while long tasks run.
func (p *Progress) Tick(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

// Done leaves the last counts on their own line.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawLocked()
	io.WriteString(p.term, "\n")
	p.shown = false
}

// Console is where a run writes: gpulaunch's own stdout and stderr or,
// with a progress line, the same around the line kept at the bottom (everything
// else written there goes around it).
type Console struct {
	Stdout, Stderr io.Writer
	Progress       *Progress // nil: none
}

// NewConsole is the console on stdout and stderr, with a progress line
// drawn on stderr from now when progress is set.
func NewConsole(stdout, stderr io.Writer, progress bool) *Console {
	c := &Console{Stdout: stdout, Stderr: stderr}
	if progress {
		c.Progress = NewProgress(stderr, time.Now())
		c.Stdout, c.Stderr = c.Progress.Wrap(stdout), c.Progress.Wrap(stderr)
	}
	return c
}

// Done leaves the progress line's last counts on screen, once.
func (c *Console) Done() {
	if c.Progress != nil {
		c.Progress.Done()
		c.Progress = nil
	}
}
