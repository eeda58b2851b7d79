package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gpulaunch/gpulaunch/test/mpsstandin"
)

// faultApp is instance 2 faulting 300 ms in, once its server has all 4
// clients (so that the fault reaches the 3 others, however fast they
// started), the others working 5 s: the H200's case (gpu-h200.md).
const faultApp = `if [ "$GPULAUNCH_INSTANCE" = 2 ]; then exec mpsclient fault 300ms; fi; exec mpsclient run 5s`

// faultReport is what the acceptance reads of a --report.
type faultReport struct {
	ExitCode  int `json:"exit_code"`
	Instances []struct {
		Instance int    `json:"instance"`
		ExitCode int    `json:"exit_code"`
		Restarts int    `json:"restarts"`
		MPSFault string `json:"mps_fault"`
	} `json:"instances"`
	RootCause *struct {
		Instance int `json:"instance"`
		ExitCode int `json:"exit_code"`
		MPS      *struct {
			ServerLog  string `json:"server_log"`
			PIDs       []int  `json:"pids"`
			NamedBy    string `json:"named_by"`
			FailedWith []int  `json:"failed_with"`
			Said       string `json:"said"`
		} `json:"mps"`
	} `json:"root_cause"`
}

func readFaultReport(t *testing.T, path string) faultReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	validateAgainstSchema(t, "report", data)
	var r faultReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Issue 37's acceptance: 4 instances on one GPU under --mps, instance 2
// faulting first and the others failing with the sticky error (the
// stand-in's server.log as the H200's): the run fails, and the summary
// and the report's root_cause name instance 2 and the sticky error, the
// others as failed with their GPU's MPS server. Before, four independent
// EXIT 1 and no cause.
func TestMPSFaultNamesTheCause(t *testing.T) {
	b := newMPSBed(t)
	report := filepath.Join(t.TempDir(), "r.json")
	out, err := b.cmd(t, []string{mpsstandin.FaultClientsEnv + "=4"}, "-n", "4", "-O", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0",
		"--report", report, "--", "sh", "-c", faultApp).CombinedOutput()
	if code := exitStatus(err); code != 1 {
		t.Fatalf("exit %d, want 1 (instance 2's):\n%s", code, out)
	}
	r := readFaultReport(t, report)
	rc := r.RootCause
	if rc == nil || rc.MPS == nil {
		t.Fatalf("no root cause under MPS in the report:\n%s", out)
	}
	with := slices.Clone(rc.MPS.FailedWith)
	slices.Sort(with)
	if rc.Instance != 2 || rc.ExitCode != 1 || !strings.Contains(rc.MPS.ServerLog, "The following client process have a sticky error set:") ||
		len(rc.MPS.PIDs) != 4 || rc.MPS.NamedBy != "list_order" || !slices.Equal(with, []int{0, 1, 3}) || rc.MPS.Said != mpsstandin.ErrFault {
		t.Errorf("root cause %+v, mps %+v\n%s", *rc, *rc.MPS, out)
	}
	for _, in := range r.Instances {
		want := "failed with GPU 0's MPS server (instance 2's fault), not on its own"
		if in.Instance == 2 {
			want = "the fault's cause"
		}
		if !strings.Contains(in.MPSFault, want) {
			t.Errorf("instance %d: mps_fault %q, want %q", in.Instance, in.MPSFault, want)
		}
	}
	for _, want := range []string{"root cause (listed first by the MPS server): instance 2, GPU 0's MPS client, exit 1\n", "  it said: " + mpsstandin.ErrFault + "\n",
		"instance(s) 0,1,3 failed with the server, not on their own", "the server's log lists every client with the sticky error, not which one faulted",
		"MPS: instance 1: failed with GPU 0's MPS server (instance 2's fault)", "instances 0,1,2,3 (GPU 0) share a fate"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}

// With --restarts 1 and the fault once, the GPU's 4 instances restart
// together once all have exited and the server has recovered, and the
// run exits 0, each with one restart, and the report says why each
// restarted. Before, each restarted alone after its own backoff: one
// restarted while a neighbour still held the sticky server met Error 807
// (the stand-in's clients notice within 20 ms, so they all had exited).
func TestMPSFaultRestartsTheGPUsInstancesTogether(t *testing.T) {
	b := newMPSBed(t)
	report := filepath.Join(t.TempDir(), "r.json")
	once := filepath.Join(t.TempDir(), "faulted")
	out, err := b.cmd(t, []string{mpsstandin.FaultClientsEnv + "=4", mpsstandin.FaultOnceEnv + "=" + once}, "-n", "4", "-O", "--node-file", nodeFile(t, 1), "--mps",
		"--monitor-interval", "0", "--restarts", "1", "--report", report, "--", "sh", "-c", faultApp).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r := readFaultReport(t, report)
	for _, in := range r.Instances {
		if in.ExitCode != 0 || in.Restarts != 1 || !strings.Contains(in.MPSFault, "restarted with GPU 0's instances after its MPS server's fault (instance 2's)") {
			t.Errorf("instance %d: exit %d after %d restart(s), %q; want 0 after 1, restarted with its GPU's instances\n%s", in.Instance, in.ExitCode, in.Restarts, in.MPSFault, out)
		}
	}
	if r.RootCause != nil || strings.Contains(string(out), mpsstandin.ErrNotReady) {
		t.Errorf("a root cause, or a client refused by the sticky server:\n%s", out)
	}
}

// A queue under --mps with one faulting task: only that task fails (its
// record, exit 1); the tasks it took down are given back and run again,
// and succeed; the joblog has one record per task. Before, every task of
// the GPU running at the fault was recorded as failed.
func TestMPSFaultInAQueue(t *testing.T) {
	b := newMPSBed(t)
	joblog := filepath.Join(t.TempDir(), "joblog")
	app := `if [ {} = 3 ]; then exec mpsclient fault 300ms; fi; exec mpsclient run 1s`
	out, err := b.cmd(t, []string{mpsstandin.FaultClientsEnv + "=4"}, "-n", "4", "-O", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0",
		"--joblog", joblog, "--each-line", seqInput(t, 8), "--", "sh", "-c", app).CombinedOutput()
	if code := exitStatus(err); code != 1 {
		t.Fatalf("exit %d, want 1 (one task failed):\n%s", code, out)
	}
	recs := joblogRecords(t, joblog)
	seen := map[int]int{}
	for _, r := range recs {
		seen[r.seq]++
		if (r.exit != 0) != (r.seq == 3) {
			t.Errorf("task %d: exit %d; only task 3 fails\n%s", r.seq, r.exit, out)
		}
	}
	for seq := 1; seq <= 8; seq++ {
		if seen[seq] != 1 {
			t.Errorf("task %d: %d joblog record(s), want 1\n%s", seq, seen[seq], out)
		}
	}
	if !strings.Contains(string(out), "failed with its GPU's MPS server") {
		t.Errorf("no task was given back:\n%s", out)
	}
}

// status says it while the run goes on: GPU 0's instances (0 and 2) fail
// with instance 2's fault, GPU 1's (1 and 3) run on; `status --json` and
// `status` name instance 2 as the cause and instance 0 as failed with its
// GPU's MPS server, and GPU 1's instances as untouched.
func TestMPSFaultInStatus(t *testing.T) {
	b := newMPSBed(t)
	cmd := b.cmd(t, []string{mpsstandin.FaultClientsEnv + "=2"}, "-n", "4", "-O", "--node-file", nodeFile(t, 2), "--mps", "--monitor-interval", "0",
		"--", "sh", "-c", `if [ "$GPULAUNCH_INSTANCE" = 2 ]; then exec mpsclient fault 200ms; fi; exec mpsclient run 1m`)
	var errb lockedBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait() }()
	var snap struct {
		Instances []struct {
			Instance int    `json:"instance"`
			MPSFault string `json:"mps_fault"`
		} `json:"instances"`
	}
	waitFor(t, "status to name the cause", func() bool {
		got, err := b.cmd(t, nil, "status", "--json").Output()
		if err != nil || json.Unmarshal(got, &snap) != nil || len(snap.Instances) != 4 {
			return false
		}
		validateAgainstSchema(t, "status", got)
		// instance 0 reads "failing with …" until its own exit, then "failed with …"
		return strings.Contains(snap.Instances[2].MPSFault, "the fault's cause") && strings.HasPrefix(snap.Instances[0].MPSFault, "failed with")
	})
	if !strings.Contains(snap.Instances[0].MPSFault, "failed with GPU 0's MPS server (instance 2's fault)") || snap.Instances[1].MPSFault != "" || snap.Instances[3].MPSFault != "" {
		t.Errorf("status --json: %+v\n%s", snap.Instances, errb.String())
	}
	text, _ := b.cmd(t, nil, "status").Output()
	if !strings.Contains(string(text), "MPS: instance 2: its client listed first by GPU 0's MPS server (the faulting one where the server's order is the H200's): the fault's cause") {
		t.Errorf("status:\n%s", text)
	}
}

// wrappedFault is a faulting client that is a child of its instance, not
// the instance itself: a wrapper run.sh that runs python without exec.
// Its wrapper exits after its neighbours have (they fail at their next
// call, within 20 ms), so the cause can be named only by knowing the
// client's pid while it lived.
const wrappedFault = `mpsclient fault 300ms; rc=$?; sleep 0.3; exit $rc`

// Issue 37's sweep, item 1: the faulting client a child of its instance.
// The report's root cause is instance 2, named by the server's list
// (its client listed first), not the neighbour that exited first. Before,
// the pids an instance was known by came only from the sampler's scans
// (none with --monitor-interval 0), the list's first pid mapped to no
// instance, and the first exit handled — a neighbour's — was named.
func TestMPSFaultOfAWrappedClientNamesItsInstance(t *testing.T) {
	b := newMPSBed(t)
	report := filepath.Join(t.TempDir(), "r.json")
	app := `if [ "$GPULAUNCH_INSTANCE" = 2 ]; then ` + wrappedFault + `; fi; exec mpsclient run 5s`
	out, err := b.cmd(t, []string{mpsstandin.FaultClientsEnv + "=4"}, "-n", "4", "-O", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0",
		"--report", report, "--", "sh", "-c", app).CombinedOutput()
	if code := exitStatus(err); code != 1 {
		t.Fatalf("exit %d, want 1 (instance 2's):\n%s", code, out)
	}
	rc := readFaultReport(t, report).RootCause
	if rc == nil || rc.MPS == nil || rc.Instance != 2 || rc.MPS.NamedBy != "list_order" {
		t.Fatalf("root cause %+v, want instance 2 named by the list's order:\n%s", rc, out)
	}
}

// The same in a queue (the case): task 3's client is a child of
// its task's wrapper script; only task 3 fails, the tasks it took down
// run again and succeed, one joblog record per task. Before, task 3 was
// given back as collateral again and again, took every other task down
// with it, and the run exited 8 with all 8 failed.
func TestMPSFaultOfAWrappedTaskInAQueue(t *testing.T) {
	b := newMPSBed(t)
	joblog := filepath.Join(t.TempDir(), "joblog")
	wrapper := filepath.Join(t.TempDir(), "taskw.sh")
	script := "#!/bin/sh\nif [ \"$1\" = 3 ]; then " + wrappedFault + "; fi\nexec mpsclient run 1s\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := b.cmd(t, []string{mpsstandin.FaultClientsEnv + "=4"}, "-n", "4", "-O", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0",
		"--joblog", joblog, "--each-line", seqInput(t, 8), "--", wrapper, "{}").CombinedOutput()
	if code := exitStatus(err); code != 1 {
		t.Fatalf("exit %d, want 1 (only task 3 failed):\n%s", code, out)
	}
	seen := map[int]int{}
	for _, r := range joblogRecords(t, joblog) {
		seen[r.seq]++
		if (r.exit != 0) != (r.seq == 3) {
			t.Errorf("task %d: exit %d; only task 3 fails\n%s", r.seq, r.exit, out)
		}
	}
	for seq := 1; seq <= 8; seq++ {
		if seen[seq] != 1 {
			t.Errorf("task %d: %d joblog record(s), want 1\n%s", seq, seen[seq], out)
		}
	}
}

// Issue 37's sweep, item 2: under --mps an exit's time is taken when it
// is reaped, not after gpulaunch has read the server's log, and a
// process that was never an MPS client (its daemon logged none of its
// tree) is handled at once. A queue's `sh -c "exit 3"` tasks have their
// own runtime in the joblog (GNU parallel's JobRuntime); a client that
// failed on its own (`mpsclient run 100ms; exit 3`) its own wall in the
// report; -K ends the others without the log's wait. Before, each of
// them took faultWait (2 s) more: JobRuntime 2.001, wall 2.1 s. (A
// bound of 1.5 s: the wait was 2 s on top of the process's own time.)
func TestMPSExitTimesAreTheirOwn(t *testing.T) {
	b := newMPSBed(t)
	joblog := filepath.Join(t.TempDir(), "joblog")
	out, err := b.cmd(t, nil, "-n", "2", "-O", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0",
		"--joblog", joblog, "--each-line", seqInput(t, 2), "--", "sh", "-c", "exit 3").CombinedOutput()
	if code := exitStatus(err); code != 2 {
		t.Fatalf("exit %d, want 2 (two tasks failed):\n%s", code, out)
	}
	data, _ := os.ReadFile(joblog)
	for n, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		cols := strings.Split(line, "\t")
		if rt, err := strconv.ParseFloat(strings.TrimSpace(cols[3]), 64); err != nil || rt >= 1.5 {
			t.Errorf("record %d: JobRuntime %q, want the task's own (under 1.5 s)\n%s", n+1, cols[3], data)
		}
	}
	for _, c := range []struct{ name, app string }{
		{"a client that failed on its own", `if [ "$GPULAUNCH_INSTANCE" = 0 ]; then mpsclient run 100ms; exit 3; fi; exec sleep 30`},
		{"never a client, with -K", `if [ "$GPULAUNCH_INSTANCE" = 0 ]; then exit 3; fi; exec sleep 30`},
	} {
		report := filepath.Join(t.TempDir(), "r.json")
		out, err := b.cmd(t, nil, "-n", "2", "-O", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0", "-K",
			"--report", report, "--", "sh", "-c", c.app).CombinedOutput()
		if code := exitStatus(err); code != 3 {
			t.Fatalf("%s: exit %d, want 3:\n%s", c.name, code, out)
		}
		var r struct {
			Instances []struct {
				Wall float64 `json:"wall_seconds"`
			} `json:"instances"`
		}
		data, _ := os.ReadFile(report)
		if err := json.Unmarshal(data, &r); err != nil || len(r.Instances) != 2 {
			t.Fatalf("%s: report %v:\n%s", c.name, err, data)
		}
		if c.name == "never a client, with -K" && r.Instances[1].Wall >= 1.5 {
			t.Errorf("%s: instance 1 ended by -K after %.2f s, want at once (under 1.5 s)\n%s", c.name, r.Instances[1].Wall, out)
		}
		if r.Instances[0].Wall >= 1.5 {
			t.Errorf("%s: instance 0's wall %.2f s, want its own (under 1.5 s)\n%s", c.name, r.Instances[0].Wall, out)
		}
	}
}

// Issue 37's sweep, item 3: a run stopped (SIGTERM) while its GPU's
// instances wait to restart together after the server's fault failed
// with that fault: the report's root_cause names instance 2 and the
// summary has its root-cause block, as when no restarts are left.
// Instance 3 holds the wait (it ignores TERM, and exits once the test
// has seen gpulaunch take the signal), so the stop comes during it
// without timing. Before, root_cause was null.
func TestMPSFaultStoppedDuringTheRestartKeepsTheCause(t *testing.T) {
	b := newMPSBed(t)
	report := filepath.Join(t.TempDir(), "r.json")
	once := filepath.Join(t.TempDir(), "faulted")
	goOn := filepath.Join(t.TempDir(), "go")
	app := `case $GPULAUNCH_INSTANCE in
2) exec mpsclient fault 300ms;;
3) trap "" TERM; mpsclient run 5s; while [ ! -e "$GOON" ]; do sleep 0.05; done; exit 1;;
esac
exec mpsclient run 5s`
	cmd := b.cmd(t, []string{mpsstandin.FaultClientsEnv + "=4", mpsstandin.FaultOnceEnv + "=" + once, "GOON=" + goOn}, "-n", "4", "-O", "--node-file", nodeFile(t, 1), "--mps",
		"--monitor-interval", "0", "--restarts", "1", "--report", report, "--", "sh", "-c", app)
	var errb lockedBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the GPU's instances to wait to restart together", func() bool {
		return strings.Contains(errb.String(), "they restart together once all have exited")
	})
	cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, "gpulaunch to take the SIGTERM", func() bool { return strings.Contains(errb.String(), "SIGTERM: passed to every instance") })
	if err := os.WriteFile(goOn, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if exitStatus(err) == 0 {
		t.Fatalf("a run stopped by SIGTERM exited 0:\n%s", errb.String())
	}
	rc := readFaultReport(t, report).RootCause
	if rc == nil || rc.MPS == nil || rc.Instance != 2 {
		t.Fatalf("root cause %+v, want instance 2's MPS fault:\n%s", rc, errb.String())
	}
	if !strings.Contains(errb.String(), "root cause (") {
		t.Errorf("the summary has no root-cause block:\n%s", errb.String())
	}
}
