package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/nodelink"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// A task queue over several nodes (pkg/taskqueue/nodes.go has its rules,
// pkg/nodelink its transport): node 0's gpulaunch holds the queue,
// every other node's joins it.

// queueRole is this gpulaunch's part in a queue over several nodes.
type queueRole string

const (
	roleAlone  queueRole = ""       // one node: the queue is all here
	roleHolder queueRole = "holder" // node 0: reads the input, keeps the queue and the joblog
	roleNode   queueRole = "node"   // another node: runs what the holder sends
)

// joinWait bounds how long a node waits for the holder's key file and
// answer, unless GPULAUNCH_JOIN_WAIT says: the holder may still be
// reading a long input.
const joinWait = 2 * time.Minute

// nodeQueue is what a queue over several nodes needs beyond one node's.
type nodeQueue struct {
	role   queueRole
	run    string // the run's id, the same on every node
	keyDir string
	// group is the nodes per relay's group (nodelink.Groups): the
	// holder's choice, which the others read in its key file.
	group  int
	opened bool // the holder's link is open: its Close tells the nodes
	// joinWait is how long another node waits for the holder.
	joinWait time.Duration
}

// newNodeQueue decides this node's part, for a queue over the nodes of g.
func (a *app) newNodeQueue(o *runOptions, g nodegroup.NodeGroup) (nodeQueue, error) {
	if !o.tasks.queueMode() {
		return nodeQueue{}, nil
	}
	if o.flags.ranks == "local" {
		return nodeQueue{}, usagef("--ranks local makes every node a launch of its own: with a task queue every node would run every task; drop --ranks local, and the nodes share one queue")
	}
	if !g.MultiNode() {
		return nodeQueue{}, nil
	}
	run, err := sched.QueueRunID(a.env, g.Source)
	if err != nil {
		return nodeQueue{}, usageError{err}
	}
	dir, err := nodelink.KeyDir(a.env)
	if err != nil {
		return nodeQueue{}, usageError{err}
	}
	group, err := nodelink.ParseGroupSize(a.env["GPULAUNCH_NODE_GROUP"], g.Size)
	if err != nil {
		return nodeQueue{}, usageError{err}
	}
	nq := nodeQueue{role: roleNode, run: run, keyDir: dir, group: group, joinWait: joinWait}
	if g.Rank == 0 {
		nq.role = roleHolder
	}
	// refused on every node, the holder too: the step gives each the same
	if v := a.env["GPULAUNCH_JOIN_WAIT"]; v != "" {
		if nq.joinWait, err = time.ParseDuration(v); err != nil || nq.joinWait <= 0 {
			return nodeQueue{}, usagef("GPULAUNCH_JOIN_WAIT=%s: how long a node waits for the queue's holder (node 0) is a duration, e.g. 10m; nothing was started", v)
		}
	}
	return nq, nil
}

// failed tells the other nodes that the holder stopped before the queue
// began, so that they stop too, with its reason.
func (nq nodeQueue) failed(err error, log *zap.Logger) {
	if nq.role != roleHolder || err == nil || nq.opened {
		return
	}
	if ferr := nodelink.Fail(nq.keyDir, nq.run, err.Error()); ferr != nil {
		log.Warn("the other nodes could not be told that this queue failed (" + ferr.Error() + "); they stop when they give up waiting")
	}
}

// over tells the other nodes the queue is over before it began: the
// holder found every task done (a --resume).
func (nq nodeQueue) over(log *zap.Logger) {
	if nq.role != roleHolder {
		return
	}
	if err := nodelink.Over(nq.keyDir, nq.run); err != nil {
		log.Warn("the other nodes could not be told that the queue has nothing to run (" + err.Error() + "); they stop when they give up waiting")
	}
}

// hold opens the link of a holder, whose queue is every node's
// (queueConfig).
func (a *app) hold(o *runOptions, l *launch, log *zap.Logger) (*nodelink.Holder, error) {
	g := l.group
	host, port := o.flags.ddp.masterAddr, o.flags.ddp.masterPort
	if host == "" {
		host = g.Host
	}
	if port == 0 && l.alloc.Sched.LaunchKey != "" {
		// the rendezvous port of the step, free or not: a taken one is
		// left for any free one, which the key file names
		if rv, err := nodegroup.NewRendezvous(nil, l.alloc.Sched, g, host, 0, a.pid); err == nil && nodegroup.PortFree(rv.Port) == nil {
			port = rv.Port
		}
	}
	h, err := nodelink.Listen(nodelink.HolderConfig{Run: l.nodes.run, Nodes: g.Size, Slots: len(l.plan.Slots), Host: host, Port: port, KeyDir: l.nodes.keyDir, Group: l.nodes.group,
		Refused: warnRefused(log), Stalled: warnStalled(log, g.Size)})
	if err != nil {
		return nil, usagef("a task queue over %d nodes: node 0 cannot open its link on port %d: %v: give --master-port PORT; nothing was started", g.Size, port, err)
	}
	log.Info(fmt.Sprintf("this node holds the queue for %d node(s): the others join at %s:%d (key %s)%s", g.Size, host, h.Port(), h.KeyPath(), treeNote(nodelink.Groups{Nodes: g.Size, Size: l.nodes.group})))
	return h, nil
}

// warnRefused tells the user of a connection the link turned away.
func warnRefused(log *zap.Logger) func(remote, why string) {
	return func(remote, why string) {
		log.Warn(fmt.Sprintf("a connection from %s was refused (%s): only this run's nodes may take tasks", remote, why))
	}
}

// warnStalled tells the user that this node (the holder, or a relay)
// cannot accept the nodes' connections for now.
func warnStalled(log *zap.Logger, nodes int) func(why string) {
	return func(why string) {
		log.Warn(fmt.Sprintf("this node cannot take in more nodes for now (%s): they wait until it can; over many nodes raise the open-file limit (ulimit -n) above the node count (%d)", why, nodes))
	}
}

// treeNote says how the other nodes join: through relays, or not.
func treeNote(g nodelink.Groups) string {
	if !g.On() {
		return ""
	}
	return fmt.Sprintf("; in groups of %d behind relays (nodes 1, %d, %d, …; GPULAUNCH_NODE_GROUP=0: none)", g.Size, 1+g.Size, 1+2*g.Size)
}

// join makes this node one of the holder's: it waits for the holder
// (until ctx ends: a signal to gpulaunch), and gets a feed for the slots.
func (a *app) join(ctx context.Context, o *runOptions, l *launch, log *zap.Logger) (*taskqueue.Feed, *nodelink.Worker, error) {
	g := l.group
	log.Info(fmt.Sprintf("node %d of %d: waiting up to %s for the queue's holder, node 0 (GPULAUNCH_JOIN_WAIT sets how long)", g.Rank, g.Size, l.nodes.joinWait))
	w, err := nodelink.JoinContext(ctx, nodelink.WorkerConfig{Run: l.nodes.run, Node: g.Rank, Host: g.Host, Slots: len(l.plan.Slots), KeyDir: l.nodes.keyDir, Wait: l.nodes.joinWait, Refused: warnRefused(log), Stalled: warnStalled(log, g.Size)})
	if err != nil {
		return nil, nil, err
	}
	log.Info(fmt.Sprintf("node %d of %d joined the queue held by node 0", g.Rank, g.Size))
	if first, last := w.Relays(); first <= last {
		log.Info(fmt.Sprintf("node %d relays for nodes %d..%d: it stays until they are done", g.Rank, first, last))
	}
	files := o.taskFiles(l)
	f := &taskqueue.Feed{Tries: o.tasks.retries, Host: g.Host,
		ForSlot: func(t job.Task, slot int) job.Task {
			return forSlot(t, g.Ranks(slot).Rank, files)
		}}
	return f, w, nil
}

// statusEvery is how often the holder sends the whole queue's counts to
// the other nodes, for their `gpulaunch status`: twice a second, or
// less often over more than 1,000 nodes, so that these messages stay
// at 2,000 a second in all. Each costs the holder about as much as a task
// (an encoding, a TLS record, a write): sent twice a second to 10,000 nodes
// they took 12 ms of its CPU per node joined while the nodes joined (170 s
// for 10,000 to join) and 120 µs per task after (scripts/bench-holder.sh).
func statusEvery(nodes int) time.Duration {
	const perSecond = 2000
	return max(500*time.Millisecond, time.Duration(nodes)*time.Second/perSecond)
}

// tellStatus sends the whole queue's counts to every node every
// statusEvery, for their `gpulaunch status`, until ctx ends.
func tellStatus(ctx context.Context, h *nodelink.Holder, board *launcher.Board) {
	t := time.NewTicker(statusEvery(h.Nodes()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if qs := board.Snapshot().Queue; qs != nil {
				h.Broadcast(taskqueue.NodeMessage{Kind: taskqueue.MsgStatus, Status: qs})
			}
		}
	}
}

// peers is this node's link to the other nodes of a queue over several;
// zero on one node.
type peers struct {
	holder *nodelink.Holder
	worker *nodelink.Worker
	feed   *taskqueue.Feed // a node's: what it runs
	// stopped is a relay's: closed at its first INT, TERM or QUIT from
	// the start of its run (stopSignals), which its wait for its group at
	// the end answers; nil elsewhere.
	stopped *stopSignals
}

// runQueue is a run's queue: the one kept here (nil on a node that is
// not the holder), and the link to the other nodes.
type runQueue struct {
	q *taskqueue.Queue
	peers
}

// work is what the run's slots run: this node's queue, the holder's
// feed on another node, or (neither) their instances.
func (rq runQueue) work() launcher.Work {
	switch {
	case rq.feed != nil:
		return launcher.FeedTasks{Feed: rq.feed}
	case rq.q != nil:
		return launcher.QueueTasks{Queue: rq.q}
	}
	return nil
}

// openPeers opens the link of a queue over several nodes: the holder
// listens, another node joins it (until ctx ends).
func (a *app) openPeers(ctx context.Context, o *runOptions, l *launch, log *zap.Logger) (peers, error) {
	var p peers
	var err error
	switch l.nodes.role {
	case roleHolder:
		p.holder, err = a.hold(o, l, log)
		l.nodes.opened = err == nil
	case roleNode:
		p.feed, p.worker, err = a.join(ctx, o, l, log)
		if err == nil && p.worker.Relaying() {
			p.stopped = catchStopSignals()
		}
	}
	return p, err
}

// stopSignals is the first INT, TERM or QUIT to this gpulaunch, caught
// beside the supervisor, which has them too.
type stopSignals struct {
	c    chan struct{} // closed at the first
	by   string        // its name, set before c is closed
	sigs chan os.Signal
	done chan struct{}
}

func catchStopSignals() *stopSignals {
	s := &stopSignals{c: make(chan struct{}), sigs: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(s.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	go func() {
		select {
		case sig := <-s.sigs:
			s.by = job.SignalName(sig.(syscall.Signal))
			close(s.c)
		case <-s.done:
		}
	}()
	return s
}

// release stops catching them.
func (s *stopSignals) release() {
	signal.Stop(s.sigs)
	close(s.done)
}

func (p peers) link() taskqueue.NodeLink {
	switch {
	case p.holder != nil:
		return p.holder
	case p.worker != nil:
		return p.worker
	}
	return nil
}

func (p peers) close(log *zap.Logger) {
	var err error
	switch {
	case p.holder != nil:
		err = p.holder.Close()
	case p.stopped != nil:
		p.closeRelay(log)
	case p.worker != nil:
		err = p.worker.Close()
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
func (p peers) closeRelay(log *zap.Logger) {
	defer p.stopped.release()
	first, last := p.worker.Relays()
	log.Info(fmt.Sprintf("this node's share is done; it waits for the nodes it relays for (%d..%d) to be done", first, last))
	if p.worker.CloseUnless(p.stopped.c) {
		why := fmt.Sprintf("%s: stopped before the nodes it relays for (%d..%d) were done, which lost their holder", p.stopped.by, first, last)
		p.feed.CutOffGroup(why)
		log.Warn(why)
	}
}
