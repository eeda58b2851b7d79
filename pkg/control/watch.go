//go:build linux

package control

import (
	"context"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// A Watch follows a run's table for `gpulaunch top`: a frame now, then
// one every interval, until the run has finished or has gone.
type Watch struct {
	c     Client
	tick  *time.Ticker
	final chan launcher.Snapshot // the run's last state, when it ends; nil once none can come
	snap  launcher.Snapshot
	shown bool
	end   End
}

// End is why a Watch has no next frame.
type End int

const (
	// Stopped: the caller's context ended (Ctrl-C).
	Stopped End = iota
	// Finished: the last frame was the run's final state.
	Finished
	// Gone: the run ended between two frames and its final state did
	// not come (a gpulaunch older than this client).
	Gone
)

// Watch follows the run whose table is first. Its rules:
//  1. every 0 is the run's monitor interval, or 2s when it has none.
//  2. The run's last state, with every exit, is asked for at once and
//     answered when the run ends: the socket closes then, and a refresh
//     would find nobody.
//  3. A frame comes every interval, and at once when the last state
//     comes; after a finished frame there is none.
//  4. A refresh that fails is the run's end: its last state, if it
//     comes, is the last frame; else the watch ends Gone.
func (c Client) Watch(ctx context.Context, first launcher.Snapshot, every time.Duration) *Watch {
	w := &Watch{c: c, tick: time.NewTicker(interval(first, every)), final: make(chan launcher.Snapshot, 1), snap: first}
	go func() {
		defer close(w.final)
		if last, err := c.Final(ctx); err == nil && last.Run.Finished {
			w.final <- last
		}
	}()
	return w
}

// interval is how often a Watch refreshes (rule 1).
func interval(first launcher.Snapshot, every time.Duration) time.Duration {
	if every > 0 {
		return every
	}
	if d, err := time.ParseDuration(first.Run.Monitor); err == nil && d > 0 {
		return d
	}
	return 2 * time.Second
}

// Next waits for the next frame (the first at once); false when there
// is none, End saying why.
func (w *Watch) Next(ctx context.Context) bool {
	if !w.shown {
		w.shown = true
		return true
	}
	if w.snap.Run.Finished {
		w.end = Finished
		return false
	}
	select {
	case <-ctx.Done():
		w.end = Stopped
		return false
	case last, ok := <-w.final:
		if ok {
			w.snap = last
			return true
		}
		w.final = nil // no last state to wait for: refresh now
	case <-w.tick.C:
	}
	next, err := w.c.Status()
	if err != nil {
		if w.final != nil { // the run ended between two frames: its last state comes
			if last, ok := <-w.final; ok {
				w.snap = last
				return true
			}
		}
		w.end = Gone
		return false
	}
	w.snap = next
	return true
}

// Snapshot is the frame Next waited for.
func (w *Watch) Snapshot() launcher.Snapshot { return w.snap }

// End is why Next said there is no next frame.
func (w *Watch) End() End { return w.end }

// Stop ends the watch's ticker.
func (w *Watch) Stop() { w.tick.Stop() }
