package taskqueue

import (
	"fmt"
	"sort"
	"syscall"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// A queue over several nodes (`srun --ntasks-per-node=1 gpulaunch
// --each-line …` on N nodes): the gpulaunch of node 0, the holder, reads
// the input, keeps the queue (Queue) and alone writes the joblog; every
// other node's gpulaunch runs what the holder sends it on its own slots
// (Feed, feed.go) and reports each task's end. The messages travel over a
// NodeLink (pkg/nodelink: TLS over the step's network); the rules of
// who gets what are this file's and feed.go's, pure and tested without a
// network.

// MessageKind says what a NodeMessage is.
type MessageKind string

// The messages. "link" ones are made by the link itself, not sent.
const (
	MsgJoined   MessageKind = "joined"    // link, on the holder: Node (Host, Slots) is in
	MsgLost     MessageKind = "lost"      // link: the node (on the holder) or the holder (elsewhere) is gone; Why
	MsgTask     MessageKind = "task"      // holder → node: run job.Task
	MsgDone     MessageKind = "done"      // node → holder: Record finished there; Running now run there
	MsgReturned MessageKind = "returned"  // node → holder: Seqs did not run to their end there
	MsgStopSoon MessageKind = "stop-soon" // holder → node: start no more; Why
	MsgStopNow  MessageKind = "stop-now"  // holder → node: end what runs too; Why
	MsgEnd      MessageKind = "end"       // holder → node: the queue has nothing more
	MsgStatus   MessageKind = "status"    // holder → node: the whole queue's counts
)

// NodeMessage is one message between the holder and another node.
type NodeMessage struct {
	Kind MessageKind `json:"kind"`
	// Node is the other node's index (its launcher rank): whom the
	// holder sends to, or who sent.
	Node    int          `json:"node"`
	Host    string       `json:"host,omitempty"`
	Slots   int          `json:"slots,omitempty"`
	Task    *job.Task    `json:"task,omitempty"`
	Record  *job.Record  `json:"record,omitempty"`
	Seqs    []int        `json:"seqs,omitempty"`
	Running int          `json:"running,omitempty"`
	Why     string       `json:"why,omitempty"`
	Status  *QueueStatus `json:"status,omitempty"`
}

// NodeLink carries the messages: on the holder to and from every other
// node, elsewhere to and from the holder. Send never blocks (the
// supervisor calls it under its lock) and keeps the order of messages to
// one node.
type NodeLink interface {
	Messages() <-chan NodeMessage
	Send(m NodeMessage)
}

// peerNode is the holder's account of one other node.
type peerNode struct {
	host  string
	slots int
	// credit is how many more tasks the node may be sent: two per slot
	// at first (rule 2), one back for each task it ends.
	credit int
	// holds are the tasks sent to it that it has neither finished nor
	// returned, by number.
	holds   map[int]job.Task
	running int // as it last said
	// inLine: the node is in the ledger's hungry line.
	inLine bool
	done   int // tasks it finished
	failed int
	gone   string // why it was lost; "" while it is there
	left   bool   // it went after the queue was over or stopping
}

// active: the node is there to be sent messages and tasks.
func (n *peerNode) active() bool { return n.gone == "" && !n.left }

// nodeLedger is the holder's side of a queue over several nodes. Every
// message costs it the same however many nodes joined: the nodes with
// credit wait in a line (hungry), and the held and running tasks are
// counted as they change, never by walking the nodes — with 1,000 nodes
// a walk (and a sort) per message held the holder to about 3,700
// tasks/s, 240 µs of its CPU per task, and 10,000 could not join at all
// (scripts/bench-holder.sh; docs/architecture.md, "Scale").
type nodeLedger struct {
	expected int // other nodes that may join
	nodes    map[int]*peerNode
	// hungry are the nodes that may have credit, in the order they got
	// it (rule 2): joined, or a task of theirs ended.
	hungry []int
	held   int // tasks sent to the nodes and not yet ended
	// busy is the tasks the nodes run, as each last said.
	busy int
	// again are tasks a lost node held: handed out before the rest.
	again  []job.Task
	outbox []NodeMessage
}

func newNodeLedger(others int) *nodeLedger {
	return &nodeLedger{expected: others, nodes: map[int]*peerNode{}}
}

// Who gets which task, on the holder. The rules, in order:
//  1. One queue: the holder's own slots and every other node draw from the
//     same list, in input order, the tasks a lost node held first; nobody
//     gets a task twice while it is out.
//  2. A node that joins may be sent two tasks per slot: one to run, one
//     waiting, so that a slot that frees finds its next task there instead
//     of waiting for the network's round trip. A node is sent tasks only
//     while it has credit; each task it ends (finished or returned) gives
//     one back. So a slow node takes fewer tasks, and holds at most one
//     per slot that it has not started. The nodes with credit are served
//     in the order they got it (joined, or a task of theirs ended), each
//     until its credit or the tasks run out.
//  3. A task a node finished counts as one the holder's slots finished:
//     the joblog (Host: that node), the counts, --halt.
//  4. A task a node returns (ended by its gpulaunch, or never started
//     there) is handed out again, unless the queue is stopping; then it
//     stays unfinished, for --resume.
//  5. A node that is lost (its gpulaunch gone, or silent) gets nothing
//     more; what it held is handed out again first. The queue still
//     finishes on the others, and its exit status names the loss.
//  6. The queue is over when nothing is left to hand out and no node
//     holds a task: every node is then told MsgEnd. A holder slot with
//     nothing to run waits while another node holds tasks, since a loss
//     would hand them back.
//  7. A stop (a signal, --halt, SIGHUP) is passed on: "now" ends the
//     tasks running everywhere, "soon" lets them finish.

// joined takes a node in (rule 2): its tasks come from dispatch.
func (l *nodeLedger) joined(node int, host string, slots int) error {
	if _, dup := l.nodes[node]; dup {
		return fmt.Errorf("node %d joined twice", node)
	}
	n := &peerNode{host: host, slots: slots, credit: 2 * slots, holds: map[int]job.Task{}}
	l.nodes[node] = n
	l.line(node, n)
	return nil
}

// line puts a node with credit at the end of the hungry line (rule 2),
// unless it is in it.
func (l *nodeLedger) line(id int, n *peerNode) {
	if !n.inLine && n.credit > 0 && n.active() {
		n.inLine = true
		l.hungry = append(l.hungry, id)
	}
}

// holding: some node holds a task (rule 6).
func (l *nodeLedger) holding() bool {
	return l != nil && l.held > 0
}

// hold records task t as sent to node n.
func (l *nodeLedger) hold(n *peerNode, t job.Task) {
	n.credit--
	n.holds[t.Seq] = t
	l.held++
}

// said is what node n last said it runs.
func (l *nodeLedger) said(n *peerNode, running int) {
	l.busy += running - n.running
	n.running = running
}

// settle removes a task a node ended from its holdings and gives its
// credit back; false when the node did not hold it.
func (l *nodeLedger) settle(node, seq int) (job.Task, bool) {
	n := l.nodes[node]
	if n == nil || n.gone != "" {
		return job.Task{}, false
	}
	t, ok := n.holds[seq]
	if ok {
		delete(n.holds, seq)
		n.credit++
		l.held--
		l.line(node, n)
	}
	return t, ok
}

// lost hands a lost node's tasks back (rule 5): they go out first, in
// task order.
func (l *nodeLedger) lost(node int, why string) []job.Task {
	n := l.nodes[node]
	if n == nil || n.gone != "" {
		return nil
	}
	l.said(n, 0)
	n.gone, n.credit = why, 0
	l.held -= len(n.holds)
	back := make([]job.Task, 0, len(n.holds))
	for _, t := range n.holds {
		back = append(back, t)
	}
	sort.Slice(back, func(i, j int) bool { return back[i].Seq < back[j].Seq })
	n.holds = map[int]job.Task{}
	l.again = append(back, l.again...)
	return back
}

// broadcast queues a message for every node that is there.
func (l *nodeLedger) broadcast(m NodeMessage) {
	for _, node := range l.order() {
		if l.nodes[node].active() {
			m.Node = node
			l.outbox = append(l.outbox, m)
		}
	}
}

// order is the nodes by index, so that messages go out in a stable order.
func (l *nodeLedger) order() []int {
	ids := make([]int, 0, len(l.nodes))
	for id := range l.nodes {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// running is the tasks the other nodes run, as they last said.
func (l *nodeLedger) running() int {
	if l == nil {
		return 0
	}
	return l.busy
}

// losses names the nodes lost, for the summary and the exit status.
func (l *nodeLedger) losses() []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, id := range l.order() {
		if n := l.nodes[id]; n.gone != "" {
			out = append(out, fmt.Sprintf("node %d (%s): %s", id, n.host, n.gone))
		}
	}
	return out
}

// NodeCount is one other node's share of a queue, for the summary.
type NodeCount struct {
	Node         int
	Host         string
	Done, Failed int
	Lost         string // why it was lost; "" when it was not
}

// absent are the nodes that never joined.
func (l *nodeLedger) absent() int {
	if l == nil {
		return 0
	}
	return l.expected - len(l.nodes)
}

// FromNode applies the holder's rules (above) to a message from node
// m.Node.
func (q *Queue) FromNode(m NodeMessage) job.Verdict {
	var v job.Verdict
	l := q.nodes
	switch m.Kind {
	case MsgJoined:
		if err := l.joined(m.Node, m.Host, m.Slots); err != nil {
			v.Say(zap.WarnLevel, "%v: ignored", err)
			return v
		}
		v.Say(zap.InfoLevel, "node %d (%s) joined the queue with %d slot(s)", m.Node, m.Host, m.Slots)
		switch {
		case q.told != "":
			l.outbox = append(l.outbox, NodeMessage{Kind: stopKind(q.told), Node: m.Node, Why: q.halted})
		case q.ended:
			l.outbox = append(l.outbox, NodeMessage{Kind: MsgEnd, Node: m.Node})
		}
	case MsgDone:
		v = q.nodeFinished(m)
		v.Wake = true // the last task a node held may leave a waiting slot done (rule 6)
	case MsgReturned:
		for _, seq := range m.Seqs {
			if t, ok := l.settle(m.Node, seq); ok && q.halted == "" {
				l.again = append(l.again, t)
			}
		}
		sort.Slice(l.again, func(i, j int) bool { return l.again[i].Seq < l.again[j].Seq })
		v.Wake = true
	case MsgLost:
		n := l.nodes[m.Node]
		switch {
		case n == nil || !n.active():
		case len(n.holds) == 0 && (q.ended || q.told != ""):
			n.left = true // told the queue was over or stopping: a departure, not a loss
		default:
			back := l.lost(m.Node, m.Why)
			v.Say(zap.WarnLevel, "node %d (%s) is lost (%s): its %d unfinished task(s) are handed out again; the queue goes on without it and will exit non-zero",
				m.Node, n.host, m.Why, len(back))
			v.Wake = true
		}
	}
	q.dispatch()
	q.endNodes()
	return v
}

// nodeFinished records a task another node finished (rule 3); a report
// of a task the node does not hold (sent twice, or after a loss handed it
// to another) is not recorded again.
func (q *Queue) nodeFinished(m NodeMessage) job.Verdict {
	var v job.Verdict
	n := q.nodes.nodes[m.Node]
	if m.Record == nil || n == nil {
		return v
	}
	if _, ok := q.nodes.settle(m.Node, m.Record.Seq); !ok {
		v.Say(zap.WarnLevel, "node %d reported task %d, which it does not hold: not recorded again", m.Node, m.Record.Seq)
		return v
	}
	q.nodes.said(n, m.Running)
	rec := *m.Record
	rec.Host = n.host
	n.done++
	v.Record = &rec
	if rec.Failed() {
		n.failed++
		v.Say(zap.WarnLevel, "task %d failed on %s: %s: %s", rec.Seq, n.host, recordStatus(rec), rec.Command)
	}
	var halt job.Note
	if v.StopAll, halt = q.finishedNotes(rec); halt.Msg != "" {
		v.Notes = append(v.Notes, halt)
	}
	return v
}

// recordStatus is a record's exit as srun writes it.
func recordStatus(r job.Record) string {
	if r.Signal != 0 {
		return job.SignalName(syscall.Signal(r.Signal))
	}
	return fmt.Sprint(r.Exit)
}

// dispatch sends tasks to the nodes that have credit, in line (rules 1
// and 2); a node leaves the line when its credit runs out, or when it is
// no longer there.
func (q *Queue) dispatch() {
	l := q.nodes
	for len(l.hungry) > 0 {
		id := l.hungry[0]
		n := l.nodes[id]
		for n.active() && n.credit > 0 {
			t, ok := q.nextTask()
			if !ok {
				return
			}
			l.hold(n, t)
			l.outbox = append(l.outbox, NodeMessage{Kind: MsgTask, Node: id, Task: &t})
		}
		n.inLine = false
		l.hungry = l.hungry[1:]
	}
	l.hungry = nil // its array is let go once the line is empty
}

// endNodes tells every node the queue is over, once nothing is left to
// hand out and no node holds a task (rule 6).
func (q *Queue) endNodes() {
	l := q.nodes
	if l == nil || q.ended || q.halted != "" || q.next < len(q.Tasks) || len(l.again) > 0 || l.holding() {
		return
	}
	q.ended = true
	l.broadcast(NodeMessage{Kind: MsgEnd})
}

// tellNodes passes a stop on (rule 7): "soon" once, "now" once.
func (q *Queue) tellNodes(why string, now bool) {
	if q.nodes == nil {
		return
	}
	level := map[bool]string{false: "soon", true: "now"}[now]
	if q.told == level || q.told == "now" {
		return
	}
	q.told = level
	q.nodes.broadcast(NodeMessage{Kind: stopKind(level), Why: why})
}

func stopKind(level string) MessageKind {
	if level == "now" {
		return MsgStopNow
	}
	return MsgStopSoon
}

// NodeCounts are the other nodes' shares of the queue, by node.
func (q *Queue) NodeCounts() []NodeCount {
	if q.nodes == nil {
		return nil
	}
	var out []NodeCount
	for _, id := range q.nodes.order() {
		n := q.nodes.nodes[id]
		out = append(out, NodeCount{Node: id, Host: n.host, Done: n.done, Failed: n.failed, Lost: n.gone})
	}
	return out
}

// AbsentNodes is how many nodes never joined.
func (q *Queue) AbsentNodes() int { return q.nodes.absent() }

// HoldingNodes: another node holds tasks, whose ends the holder awaits.
func (q *Queue) HoldingNodes() bool { return q.nodes.holding() }

// DrainOutbox hands over the messages the rules queued.
func (q *Queue) DrainOutbox() []NodeMessage {
	if q.nodes == nil || len(q.nodes.outbox) == 0 {
		return nil
	}
	out := q.nodes.outbox
	q.nodes.outbox = nil
	return out
}
