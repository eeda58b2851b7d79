package nodelink

import (
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

func TestGroupRules(t *testing.T) {
	for _, tc := range []struct {
		name                string
		nodes, size         int
		node                int
		relay               int
		isRelay             bool
		first, last         int // the members of relay's group
		wantSize, sizeNodes int
	}{
		{name: "rule 1: up to DirectNodes others join the holder", nodes: DirectNodes + 1, size: 0, node: 7, relay: 0, first: 1, last: 0, wantSize: 0, sizeNodes: DirectNodes + 1},
		{name: "rule 2: over that, groups of the root of the others", nodes: 10001, size: 100, node: 250, relay: 201, first: 202, last: 300, wantSize: 100, sizeNodes: 10001},
		{name: "rule 2: the root is rounded up", nodes: 1001, size: 32, node: 33, relay: 33, isRelay: true, first: 34, last: 64, wantSize: 32, sizeNodes: 1001},
		{name: "rule 3: the first node of a group is its relay", nodes: 5, size: 2, node: 3, relay: 3, isRelay: true, first: 4, last: 4, wantSize: 0, sizeNodes: 5},
		{name: "rule 3: the last group may be short", nodes: 6, size: 2, node: 5, relay: 5, isRelay: true, first: 6, last: 5, wantSize: 0, sizeNodes: 6},
		{name: "rule 3: the holder has no relay", nodes: 6, size: 2, node: 0, relay: 0, first: 1, last: 0, wantSize: 0, sizeNodes: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Groups{Nodes: tc.nodes, Size: tc.size}
			if got := g.RelayOf(tc.node); got != tc.relay {
				t.Errorf("RelayOf(%d) = %d, want %d", tc.node, got, tc.relay)
			}
			if got := g.IsRelay(tc.node); got != tc.isRelay {
				t.Errorf("IsRelay(%d) = %v", tc.node, got)
			}
			if tc.relay != 0 {
				if first, last := g.Members(tc.relay); first != tc.first || last != tc.last {
					t.Errorf("Members(%d) = %d..%d, want %d..%d", tc.relay, first, last, tc.first, tc.last)
				}
			}
			if got := GroupSize(tc.sizeNodes); got != tc.wantSize {
				t.Errorf("GroupSize(%d) = %d, want %d", tc.sizeNodes, got, tc.wantSize)
			}
		})
	}
}

func TestParseGroupSize(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
		bad   bool
	}{{"", 100, false}, {"0", 0, false}, {"2", 2, false}, {"1", 0, true}, {"-3", 0, true}, {"x", 0, true}} {
		got, err := ParseGroupSize(tc.value, 10001)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseGroupSize(%q) = %d, %v", tc.value, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "GPULAUNCH_NODE_GROUP="+tc.value+": give") {
			t.Errorf("ParseGroupSize(%q): %v", tc.value, err)
		}
	}
}

// tree is a holder of 5 nodes in groups of 2: relays 1 and 3, which
// speak for nodes 2 and 4.
func tree(t *testing.T) (*Holder, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	h, err := Listen(HolderConfig{Run: "job7.0", Nodes: 5, Slots: 2, Host: "127.0.0.1", KeyDir: dir, Beat: testBeat, Group: 2})
	if err != nil {
		t.Fatal(err)
	}
	return h, dir
}

// joinAll joins nodes, all at once: a node of a group waits for its
// relay's key file.
func joinAll(t *testing.T, dir string, nodes ...int) map[int]*Worker {
	t.Helper()
	ws := map[int]*Worker{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := join(dir, n)
			if err != nil {
				t.Errorf("node %d: %v", n, err)
				return
			}
			mu.Lock()
			ws[n] = w
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ws
}

// nodesOf collects the next k messages of kind at the holder, by node.
func nodesOf(t *testing.T, h *Holder, kind taskqueue.MessageKind, k int) []int {
	t.Helper()
	var got []int
	for len(got) < k {
		m := next(t, h.Messages())
		if m.Kind != kind {
			t.Fatalf("want %s, got %+v", kind, m)
		}
		got = append(got, m.Node)
	}
	sort.Ints(got)
	return got
}

// Every node of a tree joins, gets its own tasks and the broadcasts, and
// is reported at the holder as itself (rule 4).
func TestTreeCarriesEveryNode(t *testing.T) {
	h, dir := tree(t)
	defer h.Close()
	ws := joinAll(t, dir, 2, 4, 1, 3)
	if got := nodesOf(t, h, taskqueue.MsgJoined, 4); !equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("joined: %v", got)
	}
	if first, last := ws[3].Relays(); first != 4 || last != 4 {
		t.Fatalf("node 3 relays for %d..%d", first, last)
	}
	for n := 1; n <= 4; n++ {
		h.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgTask, Node: n, Task: &job.Task{Seq: 10 + n}})
	}
	for n, w := range ws {
		if m := next(t, w.Messages()); m.Kind != taskqueue.MsgTask || m.Task.Seq != 10+n {
			t.Fatalf("node %d got %+v", n, m)
		}
		w.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgDone, Node: 9, Record: &job.Record{Seq: 10 + n}})
	}
	for range 4 {
		m := next(t, h.Messages())
		if m.Kind != taskqueue.MsgDone || m.Record.Seq != 10+m.Node {
			t.Fatalf("done: %+v: every node speaks for itself only", m)
		}
	}
	h.Broadcast(taskqueue.NodeMessage{Kind: taskqueue.MsgStatus, Status: &taskqueue.QueueStatus{Total: 7}})
	for n, w := range ws {
		if m := next(t, w.Messages()); m.Kind != taskqueue.MsgStatus || m.Status.Total != 7 {
			t.Fatalf("node %d got %+v", n, m)
		}
	}
	for _, n := range []int{2, 4, 1, 3} { // a relay's Close waits for its group
		ws[n].Close()
	}
}

// A relay whose own run reads nothing for a while (starting its slots)
// does not hold up its group: its reader drops the statuses it has no
// room for, and keeps room for every task its credit allows. It used to
// wait on a full buffer after 256 statuses, and the group heard nothing
// more, its tasks included.
func TestRelaysOwnRunNotReadingDoesNotHoldItsGroup(t *testing.T) {
	h, dir := tree(t)
	defer h.Close()
	ws := joinAll(t, dir, 1, 2)
	nodesOf(t, h, taskqueue.MsgJoined, 2)
	for i := range 2*(ownRoom(2)+statusRoom) + 256 { // node 1's run reads none of them
		h.Broadcast(taskqueue.NodeMessage{Kind: taskqueue.MsgStatus, Status: &taskqueue.QueueStatus{Total: i}})
		if m := next(t, ws[2].Messages()); m.Kind != taskqueue.MsgStatus || m.Status.Total != i {
			t.Fatalf("node 2 got %+v, want status %d", m, i)
		}
	}
	for seq := range 2 * 2 { // node 1's credit: two per slot
		h.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgTask, Node: 1, Task: &job.Task{Seq: seq}})
	}
	h.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgTask, Node: 2, Task: &job.Task{Seq: 99}})
	if m := next(t, ws[2].Messages()); m.Kind != taskqueue.MsgTask || m.Task.Seq != 99 {
		t.Fatalf("node 2 got %+v", m)
	}
	var tasks []int
	for len(tasks) < 4 {
		if m := next(t, ws[1].Messages()); m.Kind == taskqueue.MsgTask {
			tasks = append(tasks, m.Task.Seq)
		}
	}
	if !equal(tasks, []int{0, 1, 2, 3}) {
		t.Errorf("node 1's tasks: %v", tasks)
	}
	ws[2].Close()
	ws[1].Close()
}

// A relay lost is its group lost (rule 5): the holder hears of each node,
// and the group's nodes of their holder's loss.
func TestRelayLostIsItsGroupLost(t *testing.T) {
	h, dir := tree(t)
	defer h.Close()
	ws := joinAll(t, dir, 3, 4)
	nodesOf(t, h, taskqueue.MsgJoined, 2)
	ws[3].c.c.Close() // its gpulaunch killed
	var whys []string
	for range 2 {
		m := next(t, h.Messages())
		if m.Kind != taskqueue.MsgLost {
			t.Fatalf("want lost, got %+v", m)
		}
		whys = append(whys, m.Why)
		if m.Node == 4 && !strings.Contains(m.Why, "its group's relay, node 3, was lost") {
			t.Fatalf("node 4's loss: %q", m.Why)
		}
	}
	if m := next(t, ws[4].Messages()); m.Kind != taskqueue.MsgLost {
		t.Fatalf("node 4 got %+v, not its holder's loss", m)
	}
	// a node of the group that comes late is told why, at once
	k, err := ReadKey(KeyPath(dir, groupRun("job7.0", 3)))
	if err != nil || k.State != StateFailed || !strings.Contains(k.Why, "lost the queue's holder") {
		t.Fatalf("the group's key after its relay lost the holder: %+v %v", k, err)
	}
}

// A relay whose own run is over because the queue stops still carries
// its group's messages until they are gone: its Close waits for them.
func TestRelayCloseWaitsForItsGroup(t *testing.T) {
	h, dir := tree(t)
	defer h.Close()
	ws := joinAll(t, dir, 1, 2)
	nodesOf(t, h, taskqueue.MsgJoined, 2)
	h.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgStopSoon, Node: 1})
	if m := next(t, ws[1].Messages()); m.Kind != taskqueue.MsgStopSoon {
		t.Fatalf("node 1 got %+v", m)
	}
	closed := make(chan struct{})
	go func() { ws[1].Close(); close(closed) }()
	h.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgTask, Node: 2, Task: &job.Task{Seq: 3}})
	if m := next(t, ws[2].Messages()); m.Kind != taskqueue.MsgTask {
		t.Fatalf("node 2 got %+v while its relay closed", m)
	}
	ws[2].Send(taskqueue.NodeMessage{Kind: taskqueue.MsgDone, Record: &job.Record{Seq: 3}})
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgDone || m.Node != 2 {
		t.Fatalf("holder got %+v", m)
	}
	select {
	case <-closed:
		t.Fatal("the relay closed while a node of its group was there")
	default:
	}
	ws[2].Close()
	<-closed
	// node 2 left, then its relay
	if got := nodesOf(t, h, taskqueue.MsgLost, 2); !equal(got, []int{1, 2}) {
		t.Fatalf("lost: %v", got)
	}
}

// A relay whose run ends on its own, before the queue's end or a stop (a
// signal to it alone), cuts its group off as its loss would: waiting for
// them, it would leave the holder sending it tasks nobody runs, and its
// nodes waiting for an end the holder would never send.
func TestRelayStoppedAloneCutsItsGroup(t *testing.T) {
	h, dir := tree(t)
	defer h.Close()
	ws := joinAll(t, dir, 1, 2)
	nodesOf(t, h, taskqueue.MsgJoined, 2)
	closed := make(chan struct{})
	go func() { ws[1].Close(); close(closed) }()
	if m := next(t, ws[2].Messages()); m.Kind != taskqueue.MsgLost {
		t.Fatalf("node 2 got %+v, not its holder's loss", m)
	}
	<-closed
	if got := nodesOf(t, h, taskqueue.MsgLost, 2); !equal(got, []int{1, 2}) {
		t.Fatalf("lost: %v", got)
	}
	k, err := ReadKey(RelayKeyPath(dir, "job7.0", 1))
	if err != nil || k.State != StateFailed || !strings.Contains(k.Why, "stopped before the queue's end") {
		t.Fatalf("the group's key: %+v %v", k, err)
	}
}

// A group's key file an earlier run with the same id left is not this
// run's: a node of the group waits for its relay's.
func TestEarlierRunsGroupKeyIsNotTaken(t *testing.T) {
	h, dir := tree(t)
	defer h.Close()
	if err := writeKey(RelayKeyPath(dir, "job7.0", 1), Key{Run: groupRun("job7.0", 1), State: StateOver, HolderCert: "an earlier holder's"}); err != nil {
		t.Fatal(err)
	}
	ws := joinAll(t, dir, 2, 1)
	if got := nodesOf(t, h, taskqueue.MsgJoined, 2); !equal(got, []int{1, 2}) {
		t.Fatalf("joined: %v", got)
	}
	ws[2].Close()
	ws[1].Close()
}

// A relay speaks for its own group only, and only for nodes that joined
// there.
func TestRelaySpeaksForItsGroupOnly(t *testing.T) {
	h, dir := tree(t)
	defer h.Close()
	var mu sync.Mutex
	var refused []string
	h.Refused = func(_, why string) { mu.Lock(); refused = append(refused, why); mu.Unlock() }
	ws := joinAll(t, dir, 1)
	defer ws[1].Close()
	nodesOf(t, h, taskqueue.MsgJoined, 1)
	ws[1].c.send(frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgDone, Node: 4, Record: &job.Record{Seq: 1}}})
	ws[1].c.send(frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgDone, Node: 2, Record: &job.Record{Seq: 2}}})
	ws[1].Send(taskqueue.NodeMessage{Kind: taskqueue.MsgReturned, Seqs: []int{5}})
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgReturned || m.Node != 1 {
		t.Fatalf("holder got %+v, not the relay's own message", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 2 || !strings.Contains(refused[0], "node 4, not of its group 2..2") || !strings.Contains(refused[1], "node 2, which has not joined") {
		t.Fatalf("refused: %q", refused)
	}
}

// A relay that cannot join tells its group at once, through its key file.
func TestRelayThatCannotJoinTellsItsGroup(t *testing.T) {
	h, dir := tree(t)
	defer h.Close()
	_, err := Join(WorkerConfig{Run: "job7.0", Node: 1, Host: "n1", Slots: 3, KeyDir: dir, Wait: 5 * time.Second, Beat: testBeat})
	if err == nil {
		t.Fatal("a relay with 3 slots joined a holder of 2")
	}
	_, err = join(dir, 2)
	if err == nil || !strings.Contains(err.Error(), "through node 1") || !strings.Contains(err.Error(), "3 slot(s)") {
		t.Fatalf("node 2: %v", err)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
