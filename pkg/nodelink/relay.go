package nodelink

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// relay is the part of a Worker whose node is the first of a group
// (Groups, rule 3): a holder for its group (its own listener, key file
// and token), whose nodes' messages it sends up its own connection to the
// holder, and the holder's to them down theirs.
type relay struct {
	self  int     // the relay's node
	group *Holder // the group's link: its nodes' connections
	up    *conn   // the connection to the holder, the Worker's own

	mu sync.Mutex
	// there counts the group's nodes joined and not yet gone; changed is
	// signalled when it changes, for Worker.Close, which waits for the
	// last to go before it closes the link they reach the holder by.
	there   int
	changed chan struct{}
	// upLost is closed once the holder's connection is gone and, after
	// it, the group's link (lost).
	upLost   chan struct{}
	lostOnce sync.Once
	// ended: the holder said the queue is over (MsgEnd), so that its
	// connection's end is the queue's, not a loss; stopping: it said to
	// stop (MsgStopSoon, MsgStopNow), so that the group's nodes end
	// their tasks and report them. Set by the Worker's reader, read by
	// Close too.
	ended, stopping atomic.Bool
}

// openRelay opens the group's link of relay node cfg.Node, whose
// connection to the holder is up, and starts carrying messages. Its
// address is the one the holder's connection left by: the nodes of a
// group reach it on the network they reach the holder on, whatever its
// name resolves to.
func openRelay(cfg WorkerConfig, g Groups, up *conn, holderCert string) (*relay, error) {
	host, _, err := net.SplitHostPort(up.c.LocalAddr().String())
	if err != nil {
		return nil, err
	}
	first, last := g.Members(cfg.Node)
	group, err := listen(HolderConfig{Run: groupRun(cfg.Run, cfg.Node), Nodes: g.Nodes, Slots: cfg.Slots, Host: host, KeyDir: cfg.KeyDir, Beat: cfg.Beat,
		Refused: cfg.Refused, Stalled: cfg.Stalled, holderCert: holderCert}, first, last)
	if err != nil {
		return nil, fmt.Errorf("%w: node %d relays for nodes %d..%d, but cannot open their link: %v", errFinal, cfg.Node, first, last, err)
	}
	r := &relay{self: cfg.Node, group: group, up: up, changed: make(chan struct{}, 1), upLost: make(chan struct{})}
	go r.carryUp()
	return r, nil
}

// carryUp sends the group's messages to the holder, the link's news of
// its nodes (joined, lost) included, each with the node it is of.
func (r *relay) carryUp() {
	for {
		select {
		case m := <-r.group.Messages():
			switch m.Kind {
			case taskqueue.MsgJoined:
				r.count(+1)
			case taskqueue.MsgLost:
				r.count(-1)
			}
			r.up.send(frame{NodeMessage: m})
		case <-r.group.done:
			return
		}
	}
}

func (r *relay) count(by int) {
	r.mu.Lock()
	r.there += by
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// down passes on a message of the holder's for the group: to the node it
// is for, or, for all (Broadcast), to every node of the group; true when
// the relay's own node has it too.
func (r *relay) down(f frame) (mine bool) {
	if f.All || f.Node == 0 || f.Node == r.self {
		switch f.Kind {
		case taskqueue.MsgEnd:
			r.ended.Store(true)
		case taskqueue.MsgStopSoon, taskqueue.MsgStopNow:
			r.stopping.Store(true)
		}
	}
	switch {
	case f.All:
		r.group.Broadcast(f.NodeMessage)
		return true
	case f.Node == 0 || f.Node == r.self:
		return true
	}
	r.group.Send(f.NodeMessage)
	return false
}

// lost: the holder's connection is gone. After the queue's end (ended)
// the group's link closes as the holder's does, once what it was sent
// (the end) is written. Otherwise the group is cut off: their connections
// are closed with no word of the queue's end, so each node ends as one
// whose holder is lost, and a node yet to join is told by the group's key
// file.
func (r *relay) lost(why string) {
	r.lostOnce.Do(func() {
		defer close(r.upLost) // after the group's link is closed: drain waits for it
		if r.ended.Load() {
			r.group.Close()
			return
		}
		r.group.abort(fmt.Sprintf("its group's relay, node %d, lost the queue's holder: %s", r.self, why))
	})
}

// drain waits until no node of the group is there, or the holder is
// gone, and then closes the group's link: a relay whose own slots are done
// because the queue ended or is stopping still carries its group's
// reports until their nodes are done. One whose run ended on its own (a
// signal to it alone, a failure of its own) cuts its group off instead,
// as its loss would (Groups, rule 5): waiting, it would leave the holder
// sending it tasks that nobody runs, and its nodes waiting for an end
// that the holder, counting those tasks held, would never send. So does
// one stopped (stop closed: a signal to it) while it waits, which may be
// as long as its group's longest task during a drain; cut says so.
func (r *relay) drain(stop <-chan struct{}) (cut bool) {
	if !r.ended.Load() && !r.stopping.Load() {
		r.group.abort(fmt.Sprintf("its group's relay, node %d, stopped before the queue's end", r.self))
		return false
	}
	for r.present() > 0 {
		select {
		case <-r.changed:
		case <-r.upLost:
			return false // lost closed the group's link
		case <-stop:
			r.group.abort(fmt.Sprintf("its group's relay, node %d, was stopped by a signal while it waited for them", r.self))
			return true
		}
	}
	r.group.Close()
	return false
}

// present is how many of the group's nodes are there.
func (r *relay) present() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.there
}
