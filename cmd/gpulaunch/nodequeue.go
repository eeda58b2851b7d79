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

// nodeQueue is this node's part in a queue over several nodes, and
// what that needs beyond one node's (nodelink.Settings).
type nodeQueue struct {
	role queueRole
	nodelink.Settings
}

// newNodeQueue decides this node's part, for a queue over the nodes of g
// in the environment env.
func newNodeQueue(o *runOptions, g nodegroup.NodeGroup, env sched.Env) (nodeQueue, error) {
	if !o.tasks.queueMode() {
		return nodeQueue{}, nil
	}
	if o.flags.ranks == "local" {
		return nodeQueue{}, usagef("--ranks local makes every node a launch of its own: with a task queue every node would run every task; drop --ranks local, and the nodes share one queue")
	}
	if !g.MultiNode() {
		return nodeQueue{}, nil
	}
	set, err := nodelink.ReadSettings(env, g.Source, g.Size)
	if err != nil {
		return nodeQueue{}, usageError{err}
	}
	nq := nodeQueue{role: roleNode, Settings: set}
	if g.Rank == 0 {
		nq.role = roleHolder
	}
	return nq, nil
}

// failed tells the other nodes that the holder stopped before the queue
// began, so that they stop too, with its reason; unless its link is open
// (linkOpened), whose Close tells them.
func (nq nodeQueue) failed(err error, linkOpened bool, log *zap.Logger) {
	if nq.role != roleHolder || err == nil || linkOpened {
		return
	}
	if ferr := nodelink.Fail(nq.KeyDir, nq.Run, err.Error()); ferr != nil {
		log.Warn("the other nodes could not be told that this queue failed (" + ferr.Error() + "); they stop when they give up waiting")
	}
}

// over tells the other nodes the queue is over before it began: the
// holder found every task done (a --resume).
func (nq nodeQueue) over(log *zap.Logger) {
	if nq.role != roleHolder {
		return
	}
	if err := nodelink.Over(nq.KeyDir, nq.Run); err != nil {
		log.Warn("the other nodes could not be told that the queue has nothing to run (" + err.Error() + "); they stop when they give up waiting")
	}
}

// hold opens the link of a holder, whose queue is every node's
// (queueConfig); pid is this gpulaunch's, for the step's rendezvous port.
func (nq nodeQueue) hold(o *runOptions, l *launch, pid int, log *zap.Logger) (*nodelink.Holder, error) {
	g := l.group
	host, port := o.flags.ddp.masterAddr, o.flags.ddp.masterPort
	if host == "" {
		host = g.Host
	}
	if port == 0 && l.alloc.Sched.LaunchKey != "" {
		// the rendezvous port of the step, free or not: a taken one is
		// left for any free one, which the key file names
		if rv, err := nodegroup.NewRendezvous(nil, l.alloc.Sched, g, host, 0, pid); err == nil && nodegroup.PortFree(rv.Port) == nil {
			port = rv.Port
		}
	}
	h, err := nodelink.Listen(nodelink.HolderConfig{Run: nq.Run, Nodes: g.Size, Slots: len(l.plan.Slots), Host: host, Port: port, KeyDir: nq.KeyDir, Group: nq.Group,
		Refused: nodelink.WarnRefused(log), Stalled: nodelink.WarnStalled(log, g.Size)})
	if err != nil {
		return nil, usagef("a task queue over %d nodes: node 0 cannot open its link on port %d: %v: give --master-port PORT; nothing was started", g.Size, port, err)
	}
	log.Info(fmt.Sprintf("this node holds the queue for %d node(s): the others join at %s:%d (key %s)%s", g.Size, host, h.Port(), h.KeyPath(), nodelink.Groups{Nodes: g.Size, Size: nq.Group}.Note()))
	return h, nil
}

// join makes this node one of the holder's: it waits for the holder
// (until ctx ends: a signal to gpulaunch), and gets a feed for the slots.
func (nq nodeQueue) join(ctx context.Context, o *runOptions, l *launch, log *zap.Logger) (*taskqueue.Feed, *nodelink.Worker, error) {
	g := l.group
	log.Info(fmt.Sprintf("node %d of %d: waiting up to %s for the queue's holder, node 0 (GPULAUNCH_JOIN_WAIT sets how long)", g.Rank, g.Size, nq.JoinWait))
	w, err := nodelink.JoinContext(ctx, nodelink.WorkerConfig{Run: nq.Run, Node: g.Rank, Host: g.Host, Slots: len(l.plan.Slots), KeyDir: nq.KeyDir, Wait: nq.JoinWait, Refused: nodelink.WarnRefused(log), Stalled: nodelink.WarnStalled(log, g.Size)})
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

// open opens the link of a queue over several nodes: the holder
// listens, another node joins it (until ctx ends).
func (nq nodeQueue) open(ctx context.Context, o *runOptions, l *launch, pid int, log *zap.Logger) (nodelink.Peers, error) {
	var p nodelink.Peers
	var err error
	switch nq.role {
	case roleHolder:
		p.Holder, err = nq.hold(o, l, pid, log)
	case roleNode:
		p.Feed, p.Worker, err = nq.join(ctx, o, l, log)
		if err == nil && p.Worker.Relaying() {
			p.Stopped = nodelink.CatchStopSignals()
		}
	}
	return p, err
}
