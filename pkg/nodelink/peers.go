package nodelink

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// Peers is this node's link to the other nodes of a queue over several;
// zero on one node.
type Peers struct {
	Holder *Holder
	Worker *Worker
	Feed   *taskqueue.Feed // a node's: what it runs
	// Stopped is a relay's: closed at its first INT, TERM or QUIT from
	// the start of its run (CatchStopSignals), which its wait for its
	// group at the end answers; nil elsewhere.
	Stopped *StopSignals
}

// Link is the link the supervisor carries messages on; nil on one node.
func (p Peers) Link() taskqueue.NodeLink {
	switch {
	case p.Holder != nil:
		return p.Holder
	case p.Worker != nil:
		return p.Worker
	}
	return nil
}

// Close closes the link: the holder's tells the nodes the queue is over,
// a relay's waits for its group first (closeRelay). A failure is a
// warning.
func (p Peers) Close(log *zap.Logger) {
	var err error
	switch {
	case p.Holder != nil:
		err = p.Holder.Close()
	case p.Stopped != nil:
		p.closeRelay(log)
	case p.Worker != nil:
		err = p.Worker.Close()
	}
	if err != nil {
		log.Warn("closing the link to the other nodes: " + err.Error())
	}
}

// closeRelay closes a relay's link, which first waits for its group's
// nodes to be done (the queue ended, or the holder stops it) — during a
// drain, as long as their longest task. That wait answers signals
// (README's "Signals", rule 7): an INT, TERM or QUIT to the relay, then
// or before it during its run, ends it, cutting the group off as the
// relay's loss would (feed rule 7), and the node exits 255. HUP drains,
// which the wait already is.
func (p Peers) closeRelay(log *zap.Logger) {
	defer p.Stopped.Release()
	first, last := p.Worker.Relays()
	log.Info(fmt.Sprintf("this node's share is done; it waits for the nodes it relays for (%d..%d) to be done", first, last))
	if p.Worker.CloseUnless(p.Stopped.C) {
		why := fmt.Sprintf("%s: stopped before the nodes it relays for (%d..%d) were done, which lost their holder", p.Stopped.by, first, last)
		p.Feed.CutOffGroup(why)
		log.Warn(why)
	}
}

// StopSignals is the first INT, TERM or QUIT to this gpulaunch, caught
// beside the supervisor, which has them too.
type StopSignals struct {
	C    chan struct{} // closed at the first
	by   string        // its name, set before C is closed
	sigs chan os.Signal
	done chan struct{}
}

// CatchStopSignals catches them from now until Release.
func CatchStopSignals() *StopSignals {
	s := &StopSignals{C: make(chan struct{}), sigs: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(s.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	go func() {
		select {
		case sig := <-s.sigs:
			s.by = job.SignalName(sig.(syscall.Signal))
			close(s.C)
		case <-s.done:
		}
	}()
	return s
}

// Release stops catching them.
func (s *StopSignals) Release() {
	signal.Stop(s.sigs)
	close(s.done)
}

// DefaultJoinWait bounds how long a node waits for the holder's key file
// and answer, unless GPULAUNCH_JOIN_WAIT says: the holder may still be
// reading a long input.
const DefaultJoinWait = 2 * time.Minute

// JoinWait is how long a node waits for the holder: GPULAUNCH_JOIN_WAIT's
// value v, a positive duration (time.ParseDuration's); DefaultJoinWait
// when it is unset.
func JoinWait(v string) (time.Duration, error) {
	if v == "" {
		return DefaultJoinWait, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("GPULAUNCH_JOIN_WAIT=%s: how long a node waits for the queue's holder (node 0) is a duration, e.g. 10m; nothing was started", v)
	}
	return d, nil
}

// StatusEvery is how often the holder sends the whole queue's counts to
// the other nodes, for their `gpulaunch status`: twice a second, or
// less often over more than 1,000 nodes, so that these messages stay
// at 2,000 a second in all. Each costs the holder about as much as a task
// (an encoding, a TLS record, a write): sent twice a second to 10,000 nodes
// they took 12 ms of its CPU per node joined while the nodes joined (170 s
// for 10,000 to join) and 120 µs per task after (scripts/bench-holder.sh).
func StatusEvery(nodes int) time.Duration {
	const perSecond = 2000
	return max(500*time.Millisecond, time.Duration(nodes)*time.Second/perSecond)
}

// WarnRefused tells the user, on log, of a connection the link turned
// away (HolderConfig.Refused).
func WarnRefused(log *zap.Logger) func(remote, why string) {
	return func(remote, why string) {
		log.Warn(fmt.Sprintf("a connection from %s was refused (%s): only this run's nodes may take tasks", remote, why))
	}
}

// WarnStalled tells the user, on log, that this node (the holder, or a
// relay) cannot accept the nodes' connections for now
// (HolderConfig.Stalled); nodes: the launch's.
func WarnStalled(log *zap.Logger, nodes int) func(why string) {
	return func(why string) {
		log.Warn(fmt.Sprintf("this node cannot take in more nodes for now (%s): they wait until it can; over many nodes raise the open-file limit (ulimit -n) above the node count (%d)", why, nodes))
	}
}

// Note says how the other nodes join: through relays, or not ("").
func (g Groups) Note() string {
	if !g.On() {
		return ""
	}
	return fmt.Sprintf("; in groups of %d behind relays (nodes 1, %d, %d, …; GPULAUNCH_NODE_GROUP=0: none)", g.Size, 1+g.Size, 1+2*g.Size)
}
