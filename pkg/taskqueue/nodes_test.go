package taskqueue

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// holderOf is the holder of a queue of n tasks over this node and others.
func holderOf(n, others int) *Queue {
	c := QueueConfig{Total: n, Tries: 1, OtherNodes: others}
	for i := 1; i <= n; i++ {
		c.Tasks = append(c.Tasks, job.Task{Seq: i, Path: "/bin/true", Command: fmt.Sprintf("task %d", i)})
	}
	return NewQueue(c)
}

// sent lists the outbox as "node:kind[:seq]" words.
func sent(ms []NodeMessage) string {
	var out []string
	for _, m := range ms {
		w := fmt.Sprintf("%d:%s", m.Node, m.Kind)
		if m.Task != nil {
			w += fmt.Sprintf(":%d", m.Task.Seq)
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

func doneMsg(node, seq, exit int) NodeMessage {
	return NodeMessage{Kind: MsgDone, Node: node, Record: &job.Record{Seq: seq, Exit: exit, Host: "forged", Command: fmt.Sprintf("task %d", seq)}}
}

// The holder's rules (nodes.go), step by step: each step is a message
// from a node or a slot of the holder asking for work, and what goes out.
func TestHolderRules(t *testing.T) {
	type step struct {
		msg    *NodeMessage // from a node; nil: the holder's slot 0 takes a task
		out    string       // the outbox after the step
		take   string       // for a take: "task N", "wait" or "done"
		record int          // the task recorded by the step; 0: none
	}
	join := func(node, slots int) *NodeMessage {
		return &NodeMessage{Kind: MsgJoined, Node: node, Host: fmt.Sprintf("n%d", node), Slots: slots}
	}
	msg := func(m NodeMessage) *NodeMessage { return &m }
	cases := []struct {
		name  string
		tasks int
		steps []step
		exit  int
	}{
		{"credit: two per slot, one back per task ended", 8, []step{
			{take: "task 1"},
			{msg: join(1, 2), out: "1:task:2 1:task:3 1:task:4 1:task:5"},
			{msg: msg(doneMsg(1, 3, 0)), out: "1:task:6", record: 3},
			{take: "task 7"},
			{msg: msg(doneMsg(1, 2, 0)), out: "1:task:8", record: 2},
			{take: "wait"}, // nodes hold 4, 5, 6, 8: a loss would hand them back
		}, 255},
		{"over: every node told once, then the holder's slot is done", 3, []step{
			{take: "task 1"},
			{msg: join(1, 1), out: "1:task:2 1:task:3"},
			{take: "wait"},
			{msg: msg(doneMsg(1, 2, 0)), record: 2},
			{msg: msg(doneMsg(1, 3, 1)), out: "1:end", record: 3},
			{take: "done"},
		}, 255}, // task 1 never ended here: unfinished
		{"a lost node's tasks go out first, to whoever asks", 6, []step{
			{msg: join(1, 1), out: "1:task:1 1:task:2"},
			{msg: join(2, 1), out: "2:task:3 2:task:4"},
			{msg: &NodeMessage{Kind: MsgLost, Node: 1, Why: "connection reset"}},
			{take: "task 1"},
			{msg: msg(doneMsg(2, 3, 0)), out: "2:task:2", record: 3},
			{msg: msg(doneMsg(1, 2, 0))}, // the lost node's late report: not recorded twice
		}, 255},
		{"returned tasks go out again", 4, []step{
			{msg: join(1, 1), out: "1:task:1 1:task:2"},
			{msg: &NodeMessage{Kind: MsgReturned, Node: 1, Seqs: []int{2, 1}}, out: "1:task:1 1:task:2"},
			{msg: &NodeMessage{Kind: MsgReturned, Node: 1, Seqs: []int{7}}}, // never held: nothing
		}, 255},
		{"a departure after the end is no loss", 1, []step{
			{msg: join(1, 1), out: "1:task:1"},
			{msg: msg(doneMsg(1, 1, 0)), out: "1:end", record: 1},
			{msg: &NodeMessage{Kind: MsgLost, Node: 1, Why: "EOF"}},
		}, 0},
		{"a node that joins twice is ignored", 2, []step{
			{msg: join(1, 1), out: "1:task:1 1:task:2"},
			{msg: join(1, 4)},
		}, 255},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := holderOf(tc.tasks, 2)
			for k, st := range tc.steps {
				var rec *job.Record
				if st.msg == nil {
					task, next := q.Take(0)
					got := map[job.Then]string{job.Now: fmt.Sprintf("task %d", task.Seq), job.Wait: "wait", job.Done: "done"}[next]
					if got != st.take {
						t.Fatalf("step %d: take: %s, want %s", k, got, st.take)
					}
				} else {
					rec = q.FromNode(*st.msg).Record
				}
				if got := sent(q.DrainOutbox()); got != st.out {
					t.Fatalf("step %d: sent %q, want %q", k, got, st.out)
				}
				if got := map[bool]int{true: 0, false: -1}[rec == nil]; rec != nil {
					got = rec.Seq
					if rec.Host == "forged" {
						t.Fatalf("step %d: the record's host is the node's word, not the holder's", k)
					}
					if got != st.record {
						t.Fatalf("step %d: recorded task %d, want %d", k, got, st.record)
					}
				} else if st.record != 0 {
					t.Fatalf("step %d: recorded nothing, want task %d", k, st.record)
				}
			}
			if got := q.ExitCode(); got != tc.exit {
				t.Errorf("exit %d, want %d (losses %q)", got, tc.exit, q.nodes.losses())
			}
		})
	}
}

// A stop is passed on once per level; a node that joins after it is told.
func TestHolderPassesStopsOn(t *testing.T) {
	q := holderOf(10, 2)
	q.FromNode(NodeMessage{Kind: MsgJoined, Node: 1, Host: "n1", Slots: 1})
	q.DrainOutbox()
	q.Stop("SIGHUP", false)
	q.Stop("SIGHUP", false)
	if got := sent(q.DrainOutbox()); got != "1:stop-soon" {
		t.Errorf("soon: %q", got)
	}
	q.Stop("SIGTERM", true)
	q.Stop("--halt", true)
	if got := sent(q.DrainOutbox()); got != "1:stop-now" {
		t.Errorf("now: %q", got)
	}
	q.FromNode(NodeMessage{Kind: MsgJoined, Node: 2, Host: "n2", Slots: 4})
	if got := sent(q.DrainOutbox()); got != "2:stop-now" {
		t.Errorf("late joiner: %q, want the stop and no task", got)
	}
	// returned while stopping: left for --resume, not handed out
	q.FromNode(NodeMessage{Kind: MsgReturned, Node: 1, Seqs: []int{1, 2}})
	if q.HoldingNodes() || q.Counts(0, 0).Remaining != 8 {
		t.Errorf("holding %v, counts %+v", q.HoldingNodes(), q.Counts(0, 0))
	}
}

// --halt counts the other nodes' failures as the holder's own.
func TestHolderHaltsOnANodesFailure(t *testing.T) {
	q := holderOf(10, 1)
	q.Halt = Halt{When: "now", Kind: "fail", Count: 1}
	q.FromNode(NodeMessage{Kind: MsgJoined, Node: 1, Host: "n1", Slots: 2})
	q.DrainOutbox()
	v := q.FromNode(NodeMessage{Kind: MsgDone, Node: 1, Running: 3, Record: &job.Record{Seq: 2, Exit: 129, Signal: int(syscall.SIGHUP)}})
	if v.StopAll != job.EndedHalt || v.Record == nil || q.ExitCode() == 0 {
		t.Fatalf("job.Verdict %+v, exit %d", v, q.ExitCode())
	}
	if c := q.Counts(1, time.Second); c.Running != 4 || c.Failed != 1 {
		t.Errorf("counts %+v: running here 1 + there 3", c)
	}
	if got := sent(q.DrainOutbox()); got != "1:stop-now" {
		t.Errorf("sent %q: the halt passed on, and no task after it", got)
	}
}

// feedOf is a node's feed with tries and its slots, which follow 4 of
// other nodes: its slot 1 is {%} 6.
func feedOf(tries int) *Feed {
	return &Feed{Tries: tries, Host: "n1", Slots: &Slots{First: 4}}
}

func taskMsg(seq int) NodeMessage {
	return NodeMessage{Kind: MsgTask, Task: &job.Task{Seq: seq, Command: fmt.Sprintf("task %d @{%%}", seq)}}
}

// The other nodes' rules (feed.go).
func TestFeedRules(t *testing.T) {
	ok, failed := job.Exit{Code: 0}, job.Exit{Code: 3}
	cases := []struct {
		name string
		run  func(f *Feed) string // what happened, in words
		want string
	}{
		{"waits for the holder, then runs what it sends, in order", func(f *Feed) string {
			_, first := f.Take(0)
			v1 := f.FromNode(taskMsg(4))
			f.FromNode(taskMsg(2))
			t, now := f.Take(1)
			return fmt.Sprintf("%v %v %s %v", first == job.Wait, v1.Wake, t.Command, now == job.Now)
		}, "true true task 4 @6 true"},
		{"a finished task's record goes to the holder; the slot takes the next", func(f *Feed) string {
			f.FromNode(taskMsg(1))
			f.FromNode(taskMsg(2))
			t, _ := f.Take(0)
			v := f.AfterTaskExit(0, job.OfTask(t), ok)
			return fmt.Sprintf("%s %d %v", sent(f.DrainOutbox()), v.Job.Task.Seq, v.Record != nil)
		}, "0:done 2 true"},
		{"a failure with tries left runs again here, unreported", func(f *Feed) string {
			f.FromNode(taskMsg(1))
			t, _ := f.Take(0)
			v := f.AfterTaskExit(0, job.OfTask(t), failed)
			return fmt.Sprintf("%q %d %d", sent(f.DrainOutbox()), v.Job.Task.Seq, v.Job.Try)
		}, `"" 1 1`},
		{"a task gpulaunch ended goes back", func(f *Feed) string {
			f.FromNode(taskMsg(1))
			t, _ := f.Take(0)
			f.AfterTaskExit(0, job.OfTask(t), job.Exit{Code: -1, Signal: syscall.SIGTERM, By: job.EndedSignalled, Stopping: true})
			m := f.DrainOutbox()
			return fmt.Sprintf("%s %v", sent(m), m[0].Seqs)
		}, "0:returned [1]"},
		{"a stop gives back what did not start; nothing new starts", func(f *Feed) string {
			f.FromNode(taskMsg(1))
			f.FromNode(taskMsg(2))
			v := f.FromNode(NodeMessage{Kind: MsgStopSoon, Why: "--halt"})
			m := f.DrainOutbox()
			_, then := f.Take(0)
			f.FromNode(taskMsg(3))
			late := f.DrainOutbox()
			return fmt.Sprintf("%s %v %v %s %v %d", sent(m), m[0].Seqs, then == job.Done, sent(late), v.StopAll, f.ExitCode())
		}, "0:returned [1 2] true 0:returned  0"},
		{"the holder's now ends what runs here", func(f *Feed) string {
			return string(f.FromNode(NodeMessage{Kind: MsgStopNow, Why: "SIGTERM"}).StopAll)
		}, "queue stopped by its holder"},
		{"the holder lost: end everything, send nothing, exit 255", func(f *Feed) string {
			f.FromNode(taskMsg(1))
			t, _ := f.Take(0)
			v := f.FromNode(NodeMessage{Kind: MsgLost, Why: "EOF"})
			f.AfterTaskExit(0, job.OfTask(t), job.Exit{Code: -1, Signal: syscall.SIGTERM, By: job.EndedHolderLost, Stopping: true})
			return fmt.Sprintf("%s %q %d", v.StopAll, sent(f.DrainOutbox()), f.ExitCode())
		}, `queue holder lost "" 255`},
		{"the end: a waiting slot is done", func(f *Feed) string {
			f.FromNode(NodeMessage{Kind: MsgEnd})
			_, then := f.Take(0)
			return fmt.Sprint(then == job.Done, f.ExitCode())
		}, "true 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run(feedOf(2)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// bytesPerDone is what the holder allocates per task a node reports,
// in a steady queue over nodes (1 slot each): every report gets the node
// its next task.
func bytesPerDone(t *testing.T, nodes int) float64 {
	const reports = 2000
	q := holderOf(2*nodes+reports+1, nodes)
	for n := 1; n <= nodes; n++ {
		q.FromNode(NodeMessage{Kind: MsgJoined, Node: n, Host: fmt.Sprintf("n%d", n), Slots: 1})
	}
	out := q.DrainOutbox()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for k := 0; k < reports; k++ {
		m := out[k]
		q.FromNode(doneMsg(m.Node, m.Task.Seq, 0))
		out = append(out, q.DrainOutbox()...)
	}
	runtime.ReadMemStats(&after)
	if got := len(out); got != 2*nodes+reports {
		t.Fatalf("%d nodes: %d tasks sent, want %d", nodes, got, 2*nodes+reports)
	}
	return float64(after.TotalAlloc-before.TotalAlloc) / reports
}

// A message costs the holder the same with 10,000 nodes as with 10 (the
// ledger walks and sorts no list of nodes per message): measured in the
// bytes it allocates, which a walk's list of nodes shows and a clock's
// noise does not.
func TestHolderWorkPerMessageDoesNotGrowWithNodes(t *testing.T) {
	few, many := bytesPerDone(t, 10), bytesPerDone(t, 10000)
	if many > 2*few+1024 {
		t.Errorf("%.0f bytes per report with 10,000 nodes, %.0f with 10: the holder's work grows with the nodes", many, few)
	}
}
