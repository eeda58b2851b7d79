package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/nodelink"
)

// Two (or three) gpulaunch processes on this machine play the nodes of an
// srun step (srun --nodes=N --ntasks-per-node=1): node 0 holds the queue,
// the others join it over loopback. Every task marks its run in a file
// and then waits for dir/go, so that the test decides when the tasks may
// end — after the nodes it wants have joined — instead of racing them.

// queueNodes is one test's launch: its job, nodes and files.
type queueNodes struct {
	t      *testing.T
	job    string
	nodes  int
	dir    string // marks, go, the joblog
	keys   string // GPULAUNCH_KEY_DIR
	params string
	extra  []string // more of every node's environment
}

func newQueueNodes(t *testing.T, nodes, tasks int) *queueNodes {
	dir := t.TempDir()
	qn := &queueNodes{t: t, job: strconv.Itoa(100000 + os.Getpid()%50000 + len(t.Name())), nodes: nodes, dir: dir,
		keys: filepath.Join(dir, "keys"), params: filepath.Join(dir, "params")}
	var lines []string
	for i := 1; i <= tasks; i++ {
		lines = append(lines, strconv.Itoa(i))
	}
	os.WriteFile(qn.params, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	return qn
}

// nodeTaskScript: $0 the task's line (its number), $1 {%}, $2 the test's
// dir. A task ends at dir/go, or at dir/go.NODE for its node's alone.
const nodeTaskScript = `echo "$0 $SLURMD_NODENAME $1" >>"$2/mark.$0"; while [ ! -e "$2/go" ] && [ ! -e "$2/go.$SLURMD_NODENAME" ]; do sleep 0.01; done`

// env is node's environment in the step, keyed by GPULAUNCH_KEY_DIR dir.
func (qn *queueNodes) env(node int, keyDir string) []string {
	n := strconv.Itoa(node)
	env := append(os.Environ(), "GLTEST_MAIN=1", "SLURM_JOB_ID="+qn.job, "SLURM_STEP_ID=0", "SLURMD_NODENAME=node"+n,
		fmt.Sprintf("SLURM_STEP_NODELIST=node[0-%d]", qn.nodes-1), fmt.Sprintf("SLURM_STEP_TASKS_PER_NODE=1(x%d)", qn.nodes),
		"SLURM_STEP_NUM_TASKS="+strconv.Itoa(qn.nodes), "SLURM_PROCID="+n, "SLURM_NODEID="+n, "SLURM_LOCALID=0", "GPULAUNCH_KEY_DIR="+keyDir)
	return append(env, qn.extra...)
}

// start starts node's gpulaunch; extra flags go before the command.
// succeeded waits for a node's gpulaunch and fails the test, with its
// output, unless it exited 0.
func (qn *queueNodes) succeeded(name string, cmd *exec.Cmd, out *lockedBuffer) {
	qn.t.Helper()
	if err := cmd.Wait(); err != nil {
		qn.t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

func (qn *queueNodes) start(node int, keyDir string, extra ...string) (*exec.Cmd, *lockedBuffer) {
	args := append([]string{"-n", "2", "-G", "0", "-O", "--master-addr", "127.0.0.1", "--each-line", qn.params,
		"--joblog", filepath.Join(qn.dir, "joblog")}, extra...)
	args = append(args, "--", "sh", "-c", nodeTaskScript, "{}", "{%}", qn.dir)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = qn.env(node, keyDir)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		qn.t.Fatal(err)
	}
	return cmd, &out
}

// startAll starts every node's gpulaunch, node 0 first.
func (qn *queueNodes) startAll() ([]*exec.Cmd, []*lockedBuffer) {
	var cmds []*exec.Cmd
	var outs []*lockedBuffer
	for n := range qn.nodes {
		cmd, out := qn.start(n, qn.keys)
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	return cmds, outs
}

// everyNodeRuns: every node's 2 slots have started a task.
func (qn *queueNodes) everyNodeRuns() bool {
	for n := range qn.nodes {
		if qn.ranOn(fmt.Sprint("node", n)) != 2 {
			return false
		}
	}
	return true
}

func (qn *queueNodes) release() { os.WriteFile(filepath.Join(qn.dir, "go"), nil, 0o644) }

// marks are the runs of each task: "node slot" per run.
func (qn *queueNodes) marks() map[int][]string {
	out := map[int][]string{}
	files, _ := filepath.Glob(filepath.Join(qn.dir, "mark.*"))
	for _, f := range files {
		seq, _ := strconv.Atoi(strings.TrimPrefix(filepath.Ext(f), "."))
		data, _ := os.ReadFile(f)
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if _, rest, ok := strings.Cut(l, " "); ok {
				out[seq] = append(out[seq], rest)
			}
		}
	}
	return out
}

// records are the joblog's records by task: the hosts that recorded it.
func (qn *queueNodes) records() map[int][]string {
	out := map[int][]string{}
	data, _ := os.ReadFile(filepath.Join(qn.dir, "joblog"))
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(l, "\t")
		seq, _ := strconv.Atoi(f[0])
		out[seq] = append(out[seq], f[1])
	}
	return out
}

// ranOn counts the marks node's slots left.
func (qn *queueNodes) ranOn(node string) int {
	n := 0
	for _, runs := range qn.marks() {
		for _, r := range runs {
			if strings.HasPrefix(r, node+" ") {
				n++
			}
		}
	}
	return n
}

// One queue over two nodes: every task runs exactly once, both nodes take
// part, the holder alone records them all with the node that ran each,
// and {%} numbers the slots over both nodes.
func TestQueueOverTwoNodes(t *testing.T) {
	qn := newQueueNodes(t, 2, 60)
	holder, hout := qn.start(0, qn.keys)
	node, nout := qn.start(1, qn.keys)
	waitFor(t, "node 1 to join", func() bool { return strings.Contains(hout.String(), "node 1 (node1) joined the queue") })
	waitFor(t, "node 1 to start tasks", func() bool { return qn.ranOn("node1") == 2 })
	// the holder owns the joblog (both were given it; node 1 never locks it)
	if b, _ := os.ReadFile(filepath.Join(qn.dir, "joblog.owner")); !strings.Contains(string(b), fmt.Sprintf("pid %d,", holder.Process.Pid)) {
		t.Errorf("the joblog's owner is %q, want the holder (pid %d)", b, holder.Process.Pid)
	}
	qn.release()
	qn.succeeded("holder", holder, hout)
	qn.succeeded("node 1", node, nout)
	marks, recs := qn.marks(), qn.records()
	slots := map[string]string{}
	for seq := 1; seq <= 60; seq++ {
		if len(marks[seq]) != 1 || len(recs[seq]) != 1 {
			t.Fatalf("task %d ran %q, recorded by %q: want once each", seq, marks[seq], recs[seq])
		}
		host, slot, _ := strings.Cut(marks[seq][0], " ")
		if recs[seq][0] != host {
			t.Errorf("task %d ran on %s, recorded as %s", seq, host, recs[seq][0])
		}
		slots[slot] = host
	}
	if want := map[string]string{"1": "node0", "2": "node0", "3": "node1", "4": "node1"}; fmt.Sprint(slots) != fmt.Sprint(want) {
		t.Errorf("{%%} by node: %v, want %v", slots, want)
	}
	if !strings.Contains(hout.String(), "node 1 (node1): ") || !strings.Contains(nout.String(), "finished on this node") {
		t.Errorf("summaries:\n%s\n%s", hout, nout)
	}
	if _, err := os.Stat(filepath.Join(qn.keys)); err == nil {
		if left, _ := filepath.Glob(filepath.Join(qn.keys, "queue-*")); len(left) > 0 {
			t.Errorf("key files left: %v", left)
		}
	}
}

// A node killed mid-run loses only its running tasks: they go out again,
// the queue finishes on node 0, every task is recorded once, and the exit
// status says a node was lost.
func TestQueueNodeKilled(t *testing.T) {
	qn := newQueueNodes(t, 2, 20)
	holder, hout := qn.start(0, qn.keys)
	node, _ := qn.start(1, qn.keys)
	waitFor(t, "node 1 to start tasks", func() bool { return qn.ranOn("node1") == 2 })
	node.Process.Kill()
	node.Wait()
	waitFor(t, "node 0 to notice", func() bool { return strings.Contains(hout.String(), "node 1 (node1) is lost") })
	qn.release()
	err := holder.Wait()
	if exitStatus(err) != 255 || !strings.Contains(hout.String(), "LOST") {
		t.Fatalf("holder: %v, want exit 255 naming the loss\n%s", err, hout)
	}
	recs := qn.records()
	for seq := 1; seq <= 20; seq++ {
		if len(recs[seq]) != 1 || recs[seq][0] != "node0" {
			t.Errorf("task %d recorded by %q: want once, by node0", seq, recs[seq])
		}
	}
}

// The holder killed: the other node ends its tasks and exits 255;
// --resume then runs what the joblog lacks, and no task is recorded twice.
func TestQueueHolderKilled(t *testing.T) {
	qn := newQueueNodes(t, 2, 20)
	holder, _ := qn.start(0, qn.keys)
	node, nout := qn.start(1, qn.keys)
	waitFor(t, "node 1 to start tasks", func() bool { return qn.ranOn("node1") == 2 })
	holder.Process.Kill()
	holder.Wait()
	if err := node.Wait(); exitStatus(err) != 255 || !strings.Contains(nout.String(), "the queue's holder is lost") {
		t.Fatalf("node 1: %v, want exit 255 and why\n%s", err, nout)
	}
	qn.release()
	resume := exec.Command(os.Args[0], "-n", "2", "-G", "0", "-O", "--each-line", qn.params, "--joblog", filepath.Join(qn.dir, "joblog"),
		"--resume", "--", "sh", "-c", nodeTaskScript, "{}", "{%}", qn.dir)
	resume.Env = append(os.Environ(), "GLTEST_MAIN=1")
	if out, err := resume.CombinedOutput(); err != nil {
		t.Fatalf("--resume: %v\n%s", err, out)
	}
	recs := qn.records()
	for seq := 1; seq <= 20; seq++ {
		if len(recs[seq]) != 1 {
			t.Errorf("task %d recorded %d times", seq, len(recs[seq]))
		}
	}
}

// A tree of node groups (GPULAUNCH_NODE_GROUP=2 over 5 nodes: nodes 1
// and 3 relay for 2 and 4): every task runs once, every node takes part
// and is recorded as itself, and nothing is left behind.
func TestQueueThroughRelays(t *testing.T) {
	qn := newQueueNodes(t, 5, 60)
	qn.extra = []string{"GPULAUNCH_NODE_GROUP=2"}
	type started struct {
		cmd *exec.Cmd
		out *lockedBuffer
	}
	var nodes []started
	for n := 4; n >= 0; n-- { // the nodes of a group first: they wait for their relay
		cmd, out := qn.start(n, qn.keys)
		nodes = append([]started{{cmd, out}}, nodes...)
	}
	waitFor(t, "every node to start tasks", qn.everyNodeRuns)
	qn.release()
	for n, s := range nodes {
		qn.succeeded(fmt.Sprint("node ", n), s.cmd, s.out)
	}
	marks, recs := qn.marks(), qn.records()
	for seq := 1; seq <= 60; seq++ {
		if len(marks[seq]) != 1 || len(recs[seq]) != 1 || !strings.HasPrefix(marks[seq][0], recs[seq][0]+" ") {
			t.Fatalf("task %d ran %q, recorded by %q: want once each, as the node that ran it", seq, marks[seq], recs[seq])
		}
	}
	if !strings.Contains(nodes[0].out.String(), "in groups of 2 behind relays") || !strings.Contains(nodes[3].out.String(), "node 3 relays for nodes 4..4") {
		t.Errorf("the tree is not said:\n%s\n%s", nodes[0].out, nodes[3].out)
	}
	if left, _ := filepath.Glob(filepath.Join(qn.keys, "queue-*")); len(left) > 0 {
		data, _ := os.ReadFile(left[0])
		t.Errorf("key files left: %v: %s", left, data)
	}
}

// A group size that is not one is refused before anything starts: one
// line with the fix, exit 2, no task run, no key file written.
func TestQueueBadGroupSize(t *testing.T) {
	qn := newQueueNodes(t, 3, 4)
	qn.extra = []string{"GPULAUNCH_NODE_GROUP=1"}
	cmd, out := qn.start(0, qn.keys)
	err := cmd.Wait()
	want := "gpulaunch: error: GPULAUNCH_NODE_GROUP=1: give the nodes per relay's group, 2 or more, or 0 for none"
	if exitStatus(err) != exitUsage || !strings.HasPrefix(out.String(), want) || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("%v, want exit 2 and one line %q:\n%s", err, want, out)
	}
	if marks := qn.marks(); len(marks) > 0 {
		t.Errorf("tasks ran: %v", marks)
	}
	if _, err := os.Stat(qn.keys); err == nil {
		t.Errorf("the key directory was made")
	}
}

// A relay killed, or stopped alone by a TERM of its own, loses its group
// (rule 5 of nodelink.Groups): the holder names both nodes lost and hands
// their tasks out again, the group's other node ends as one whose holder
// is lost, and every task is still recorded once.
func TestQueueRelayKilled(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { relayKilled(t, sig) })
	}
}

// scancel through a tree: every node's gpulaunch gets a TERM, in no set
// order; every one ends, the holder non-zero (a node whose holder's stop
// came before its own TERM exits 0: the queue's status is the holder's,
// feed rule 6), and no task ended that way is recorded (--resume runs
// them).
func TestQueueThroughRelaysTERMedEverywhere(t *testing.T) {
	qn := newQueueNodes(t, 5, 40)
	qn.extra = []string{"GPULAUNCH_NODE_GROUP=2"}
	cmds, outs := qn.startAll()
	waitFor(t, "every node to start tasks", qn.everyNodeRuns)
	for _, n := range []int{3, 0, 4, 1, 2} {
		cmds[n].Process.Signal(syscall.SIGTERM)
	}
	for n, cmd := range cmds {
		if err := cmd.Wait(); err == nil && n == 0 {
			t.Errorf("the holder exited 0 after a TERM mid-queue\n%s", outs[n])
		}
	}
	if recs := qn.records(); len(recs) > 0 {
		t.Errorf("tasks ended by the TERM were recorded: %v", recs)
	}
}

// A relay whose own share is done waits for its group's nodes — during
// the holder's drain (HUP), as long as their longest task. That wait
// answers a TERM (issue 34: every wait answers signals; it was a wait
// after the run, whose signals were dropped): the relay cuts its group
// off as its loss would and exits 255, its group's node ends as one whose
// holder is lost, and the holder, draining, leaves their tasks unrecorded
// for --resume.
func TestQueueRelayStoppedWhileItWaitsForItsGroup(t *testing.T) {
	qn := newQueueNodes(t, 5, 40)
	qn.extra = []string{"GPULAUNCH_NODE_GROUP=2"}
	cmds, outs := qn.startAll()
	defer qn.release()
	waitFor(t, "every node to start tasks", qn.everyNodeRuns)
	cmds[0].Process.Signal(syscall.SIGHUP)
	waitFor(t, "every node to stop starting tasks", func() bool { // before a task ends: none starts after it
		for n := 1; n < 5; n++ {
			if !strings.Contains(outs[n].String(), "the queue's holder stops the queue") {
				return false
			}
		}
		return strings.Contains(outs[0].String(), "SIGHUP: the running tasks finish")
	})
	for _, node := range []string{"node0", "node1", "node2", "node3"} { // all but node 4, behind relay 3
		os.WriteFile(filepath.Join(qn.dir, "go."+node), nil, 0o644)
	}
	waitFor(t, "relay 3 to wait for its group", func() bool {
		return strings.Contains(outs[3].String(), "it waits for the nodes it relays for (4..4)")
	})
	cmds[3].Process.Signal(syscall.SIGTERM)
	relay := make(chan error, 1)
	go func() { relay <- cmds[3].Wait() }()
	var err error
	waitFor(t, "relay 3 to end at its TERM, node 4's tasks still running", func() bool {
		select {
		case err = <-relay:
			return true
		default:
			return false
		}
	})
	if exitStatus(err) != 255 || !strings.Contains(outs[3].String(), "SIGTERM: stopped before the nodes it relays for (4..4) were done") {
		t.Fatalf("relay 3: %v, want exit 255 and why\n%s", err, outs[3])
	}
	if err := cmds[4].Wait(); exitStatus(err) != 255 || !strings.Contains(outs[4].String(), "holder is lost") {
		t.Fatalf("node 4: %v, want exit 255 and why\n%s", err, outs[4])
	}
	for _, n := range []int{1, 2} {
		qn.succeeded(fmt.Sprint("node ", n), cmds[n], outs[n])
	}
	if err := cmds[0].Wait(); exitStatus(err) != 255 {
		t.Errorf("holder: %v, want 255 (its drain left node 4's tasks unfinished)\n%s", err, outs[0])
	}
	for seq, recs := range qn.records() {
		if len(recs) != 1 || recs[0] == "node4" {
			t.Errorf("task %d recorded by %q: want once, never by node 4, whose tasks were ended", seq, recs)
		}
	}
	if n := len(qn.records()); n != 8 {
		t.Errorf("%d tasks recorded, want the 8 of nodes 0-3", n)
	}
}

func relayKilled(t *testing.T, sig syscall.Signal) {
	qn := newQueueNodes(t, 5, 40)
	qn.extra = []string{"GPULAUNCH_NODE_GROUP=2"}
	cmds, outs := qn.startAll()
	waitFor(t, "nodes 3 and 4 to start tasks", func() bool { return qn.ranOn("node3") == 2 && qn.ranOn("node4") == 2 })
	cmds[3].Process.Signal(sig)
	cmds[3].Wait()
	if err := cmds[4].Wait(); exitStatus(err) != 255 || !strings.Contains(outs[4].String(), "holder is lost") {
		t.Fatalf("node 4: %v, want exit 255 and why\n%s", err, outs[4])
	}
	waitFor(t, "node 0 to notice", func() bool {
		h := outs[0].String()
		return strings.Contains(h, "node 3 (node3) is lost") && strings.Contains(h, "node 4 (node4) is lost (its group's relay, node 3, was lost")
	})
	qn.release()
	if err := cmds[0].Wait(); exitStatus(err) != 255 || !strings.Contains(outs[0].String(), "LOST") {
		t.Fatalf("holder: %v, want exit 255 naming the loss\n%s", err, outs[0])
	}
	for _, n := range []int{1, 2} {
		qn.succeeded(fmt.Sprint("node ", n), cmds[n], outs[n])
	}
	recs := qn.records()
	for seq := 1; seq <= 40; seq++ {
		if len(recs[seq]) != 1 || recs[seq][0] == "node3" || recs[seq][0] == "node4" {
			t.Errorf("task %d recorded by %q: want once, not by the lost group", seq, recs[seq])
		}
	}
}

// Only the run's own nodes take part: a process of the same user without
// the key's token, and one of another user (who cannot read the key), get
// no task and change nothing.
func TestQueueRefusesIntruders(t *testing.T) {
	qn := newQueueNodes(t, 3, 12) // a launch of 3 nodes; node 2's place is the intruders'
	holder, hout := qn.start(0, qn.keys)
	node, _ := qn.start(1, qn.keys)
	waitFor(t, "node 1 to start tasks", func() bool { return qn.ranOn("node1") == 2 })
	keys, _ := filepath.Glob(filepath.Join(qn.keys, "queue-*.key"))
	if len(keys) != 1 {
		t.Fatalf("key files %v", keys)
	}
	real, err := nodelink.ReadKey(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	// the same user, with a key file of its own making: right address,
	// right certificate, wrong token
	forged := filepath.Join(t.TempDir(), "forged")
	os.Mkdir(forged, 0o700)
	fake := strings.Replace(mustRead(t, keys[0]), real.Token, strings.Repeat("1", 64), 1)
	os.WriteFile(filepath.Join(forged, filepath.Base(keys[0])), []byte(fake), 0o600)
	intruder, iout := qn.start(2, forged)
	if err := intruder.Wait(); err == nil || !strings.Contains(iout.String(), "wrong token") {
		t.Fatalf("the intruder without the token: %v\n%s", err, iout)
	}
	if os.Geteuid() == 0 {
		out := otherUser(t, keys[0], real.Addr, real.Run)
		t.Log(out)
		if !strings.Contains(out, "permission denied") || !strings.Contains(out, `"kind":"refused"`) {
			t.Errorf("another user: %s", out)
		}
	} else {
		t.Log("not root: the other-user intruder is not tried")
	}
	qn.release()
	qn.succeeded("holder", holder, hout)
	node.Wait()
	if strings.Contains(hout.String(), "node 2") && strings.Contains(hout.String(), "joined") {
		t.Errorf("an intruder joined:\n%s", hout)
	}
	if n := strings.Count(hout.String(), "was refused"); n < 1 {
		t.Errorf("refusals not said:\n%s", hout)
	}
	recs, marks := qn.records(), qn.marks()
	for seq := 1; seq <= 12; seq++ {
		if len(recs[seq]) != 1 || len(marks[seq]) != 1 || strings.HasPrefix(marks[seq][0], "node2") {
			t.Errorf("task %d: runs %q, records %q", seq, marks[seq], recs[seq])
		}
	}
}

func mustRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// otherUser runs the intruder helper as uid 65534 (nobody): it tries to
// read the key file, then to join with the hello it can make without it.
func otherUser(t *testing.T, key, addr, run string) string {
	dir, err := os.MkdirTemp("/tmp", "gltest-intruder-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "intruder")
	data, _ := os.ReadFile(os.Args[0])
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "gltest-helper", "intrude", key, addr, run)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("intruder: %v\n%s", err, out)
	}
	return string(out)
}

// intrude is the other user's attempt (helper "intrude"): read the key
// file, then say hello without its token.
func intrude(key, addr, run string) int {
	_, err := nodelink.ReadKey(key)
	fmt.Println("read:", err)
	raw, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		fmt.Println("dial:", err)
		return 0
	}
	tc := tls.Client(raw, &tls.Config{InsecureSkipVerify: true})
	fmt.Fprintf(tc, `{"kind":"hello","node":2,"host":"intruder","slots":4,"token":"","run":%q}`+"\n", run)
	tc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(tc).ReadString('\n')
	if err != nil && err != io.EOF {
		fmt.Println("answer:", err)
	}
	fmt.Println("answer:", strings.TrimSpace(line))
	return 0
}

// scancel and the time limit TERM every process of a Slurm step, the
// tasks and gpulaunch, in no set order: a task whose TERM is reaped first
// is still ended by the stop, so it is left for --resume, not recorded as
// failed. A task TERMed alone failed, and is recorded.
func TestQueueTaskTERMedWithGpulaunch(t *testing.T) {
	for _, alone := range []bool{false, true} {
		dir := t.TempDir()
		input := filepath.Join(dir, "input")
		os.WriteFile(input, []byte("1\n2\n"), 0o644)
		joblog := filepath.Join(dir, "joblog")
		cmd := exec.Command(os.Args[0], "-n", "1", "-G", "0", "--each-line", input, "--joblog", joblog, "--",
			"sh", "-c", `echo $$ >"$1/pid.$0"; if [ "$0" = 1 ]; then exec sleep 30; fi`, "{}", dir)
		cmd.Env = append(os.Environ(), "GLTEST_MAIN=1")
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var pid int
		waitFor(t, "task 1 to start", func() bool {
			b, err := os.ReadFile(filepath.Join(dir, "pid.1"))
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil && pid > 0
		})
		syscall.Kill(pid, syscall.SIGTERM)
		if !alone {
			// the worst order: the task reaped before gpulaunch's TERM
			waitFor(t, "task 1 to be reaped", func() bool { _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); return err != nil })
			cmd.Process.Signal(syscall.SIGTERM)
		}
		err := cmd.Wait()
		log, _ := os.ReadFile(joblog)
		recorded := strings.Contains(string(log), "\n1\t")
		switch {
		case !alone && (recorded || exitStatus(err) != 255):
			t.Errorf("with gpulaunch's TERM: exit %v, task 1 recorded %v; want 255 and no record\n%s\n%s", err, recorded, log, out.String())
		case alone && (!recorded || !strings.Contains(string(log), "\t143\t15\t") || exitStatus(err) != 1):
			t.Errorf("TERMed alone: exit %v; want task 1 recorded failed (143, signal 15), task 2 run, exit 1\n%s\n%s", err, log, out.String())
		}
	}
}

// A node that comes after the holder finished (a short queue, a slow
// node) has nothing to do: it stops at once, with exit 0.
func TestQueueNodeAfterTheEnd(t *testing.T) {
	qn := newQueueNodes(t, 2, 3)
	qn.release()
	holder, hout := qn.start(0, qn.keys)
	qn.succeeded("holder", holder, hout)
	node, nout := qn.start(1, qn.keys)
	if err := node.Wait(); err != nil || !strings.Contains(nout.String(), "ended the queue before this node joined") {
		t.Fatalf("late node: %v\n%s", err, nout)
	}
	if !strings.Contains(hout.String(), "1 node(s) never joined") {
		t.Errorf("holder summary:\n%s", hout)
	}
}

// --halt and --retries keep their meaning over the nodes: a failure on
// node 1 (task 3: the holder's own slots take tasks 1 and 2 before any
// node can join) is retried there, then recorded by the holder, whose
// --halt now ends the tasks running on both nodes; the exit status is the
// failed task's, as on one node.
func TestQueueHaltAcrossNodes(t *testing.T) {
	qn := newQueueNodes(t, 2, 12)
	script := `echo "$0 $SLURMD_NODENAME $1" >>"$2/mark.$0"; if [ "$0" = 3 ]; then exit 4; fi; while [ ! -e "$2/go" ]; do sleep 0.01; done`
	start := func(node int) (*exec.Cmd, *lockedBuffer) {
		cmd := exec.Command(os.Args[0], "-n", "2", "-G", "0", "-O", "--master-addr", "127.0.0.1", "--each-line", qn.params,
			"--joblog", filepath.Join(qn.dir, "joblog"), "--halt", "now,fail=1", "--retries", "2", "--", "sh", "-c", script, "{}", "{%}", qn.dir)
		cmd.Env = qn.env(node, qn.keys)
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	holder, hout := start(0)
	node, nout := start(1)
	herr, nerr := holder.Wait(), node.Wait()
	recs, runs := qn.records(), qn.marks()
	if exitStatus(herr) != 4 || nerr != nil {
		t.Fatalf("holder %v, node %v; want 4 (the failed task's status) and 0\n%s\n%s", herr, nerr, hout, nout)
	}
	if len(runs[3]) != 2 || !strings.HasPrefix(runs[3][0], "node1 ") {
		t.Errorf("task 3 ran %q: want twice (--retries 2), on node 1", runs[3])
	}
	if len(recs) != 1 || len(recs[3]) != 1 || recs[3][0] != "node1" {
		t.Errorf("records %v: want task 3 alone, by node1 (the others were ended by the halt)", recs)
	}
}
