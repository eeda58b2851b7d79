package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

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
	// refused on every node, the holder too: the step gives each the same
	wait, err := nodelink.JoinWait(a.env["GPULAUNCH_JOIN_WAIT"])
	if err != nil {
		return nodeQueue{}, usageError{err}
	}
	nq := nodeQueue{role: roleNode, run: run, keyDir: dir, group: group, joinWait: wait}
	if g.Rank == 0 {
		nq.role = roleHolder
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
		Refused: nodelink.WarnRefused(log), Stalled: nodelink.WarnStalled(log, g.Size)})
	if err != nil {
		return nil, usagef("a task queue over %d nodes: node 0 cannot open its link on port %d: %v: give --master-port PORT; nothing was started", g.Size, port, err)
	}
	log.Info(fmt.Sprintf("this node holds the queue for %d node(s): the others join at %s:%d (key %s)%s", g.Size, host, h.Port(), h.KeyPath(), nodelink.Groups{Nodes: g.Size, Size: l.nodes.group}.Note()))
	return h, nil
}

// join makes this node one of the holder's: it waits for the holder
// (until ctx ends: a signal to gpulaunch), and gets a feed for the slots.
func (a *app) join(ctx context.Context, o *runOptions, l *launch, log *zap.Logger) (*taskqueue.Feed, *nodelink.Worker, error) {
	g := l.group
	log.Info(fmt.Sprintf("node %d of %d: waiting up to %s for the queue's holder, node 0 (GPULAUNCH_JOIN_WAIT sets how long)", g.Rank, g.Size, l.nodes.joinWait))
	w, err := nodelink.JoinContext(ctx, nodelink.WorkerConfig{Run: l.nodes.run, Node: g.Rank, Host: g.Host, Slots: len(l.plan.Slots), KeyDir: l.nodes.keyDir, Wait: l.nodes.joinWait, Refused: nodelink.WarnRefused(log), Stalled: nodelink.WarnStalled(log, g.Size)})
	if err != nil {
		return nil, nil, err
	}
	log.Info(fmt.Sprintf("node %d of %d joined the queue held by node 0", g.Rank, g.Size))
	if first, last := w.Relays(); first <= last {
		log.Info(fmt.Sprintf("node %d relays for nodes %d..%d: it stays until they are done", g.Rank, first, last))
	}
	f := &taskqueue.Feed{Tries: o.tasks.retries, Host: g.Host, Slots: o.taskSlots(l)}
	return f, w, nil
}

// tellStatus sends the whole queue's counts to every node every
// statusEvery, for their `gpulaunch status`, until ctx ends.
func tellStatus(ctx context.Context, h *nodelink.Holder, board *launcher.Board) {
	t := time.NewTicker(nodelink.StatusEvery(h.Nodes()))
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

// runQueue is a run's queue: the one kept here (nil on a node that is
// not the holder), and this node's link to the other nodes of a queue
// over several (zero on one node).
type runQueue struct {
	q *taskqueue.Queue
	nodelink.Peers
}

// work is what the run's slots run: this node's queue, the holder's
// feed on another node, or (neither) their instances.
func (rq runQueue) work() launcher.Work {
	switch {
	case rq.Feed != nil:
		return launcher.FeedTasks{Feed: rq.Feed}
	case rq.q != nil:
		return launcher.QueueTasks{Queue: rq.q}
	}
	return nil
}

// openPeers opens the link of a queue over several nodes: the holder
// listens, another node joins it (until ctx ends).
func (a *app) openPeers(ctx context.Context, o *runOptions, l *launch, log *zap.Logger) (nodelink.Peers, error) {
	var p nodelink.Peers
	var err error
	switch l.nodes.role {
	case roleHolder:
		p.Holder, err = a.hold(o, l, log)
		l.nodes.opened = err == nil
	case roleNode:
		p.Feed, p.Worker, err = a.join(ctx, o, l, log)
		if err == nil && p.Worker.Relaying() {
			p.Stopped = nodelink.CatchStopSignals()
		}
	}
	return p, err
}
