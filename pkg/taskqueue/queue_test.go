package taskqueue

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

func TestParseHalt(t *testing.T) {
	for in, want := range map[string]Halt{
		"":              {},
		"never":         {},
		"0":             {},
		"1":             {When: "soon", Kind: "fail", Count: 1},
		"2":             {When: "now", Kind: "fail", Count: 1},
		"now,fail=1":    {When: "now", Kind: "fail", Count: 1},
		"soon,fail=3":   {When: "soon", Kind: "fail", Count: 3},
		"now,fail=10%":  {When: "now", Kind: "fail", Percent: 10},
		"now,success=2": {When: "now", Kind: "success", Count: 2},
		"soon,done=50%": {When: "soon", Kind: "done", Percent: 50},
		"-1":            {When: "soon", Kind: "success", Count: 1},
		"-2":            {When: "now", Kind: "success", Count: 1},
		"5%":            {When: "soon", Kind: "fail", Percent: 5},
	} {
		got, err := ParseHalt(in)
		if err != nil || got != want {
			t.Errorf("ParseHalt(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, _ := ParseHalt(got.String()); back != got {
			t.Errorf("%q does not survive String(): %q", in, got.String())
		}
	}
	for _, bad := range []string{"later,fail=1", "now", "now,oops=1", "now,fail=0", "now,fail=-1", "now,fail=x", "now,fail=0%", "now,fail=101%", "3"} {
		if _, err := ParseHalt(bad); err == nil {
			t.Errorf("ParseHalt(%q) accepted", bad)
		}
	}
	// the user's words, and the when parallel asks for (issue 34's sweep:
	// "--halt fail=50%" was quoted as "soon,fail=fail=50%", out of range)
	for bad, want := range map[string]string{
		"fail=50%":    `--halt "fail=50%": say when too, now,fail=50% or soon,fail=50%`,
		"success=50%": `--halt "success=50%": say when too`,
		"fail=1":      `--halt "fail=1": say when too`,
		"200%":        `--halt "200%": the share must be above 0% and at most 100%`,
	} {
		if _, err := ParseHalt(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseHalt(%q) = %v, want %q", bad, err, want)
		}
	}
}

// The exit status of a queue, as GNU parallel computes it (checked
// against Debian's parallel by test/integration's comparison).
func TestQueueExitCode(t *testing.T) {
	fail := func(seq, exit int) job.Record { return job.Record{Seq: seq, Exit: exit} }
	killed := func(seq, sig int) job.Record { return job.Record{Seq: seq, Exit: 128 + sig, Signal: sig} }
	ok := func(seq int) job.Record { return job.Record{Seq: seq} }
	for _, tc := range []struct {
		name    string
		halt    string
		tasks   int // the queue's tasks; records beyond those are unfinished
		records []job.Record
		code    int
		when    string // the halt the last record triggers
	}{
		{"rule 4: all succeed", "never", 2, []job.Record{ok(1), ok(2)}, 0, ""},
		{"rule 4: the count of failures", "never", 3, []job.Record{fail(1, 3), ok(2), fail(3, 1)}, 2, ""},
		{"rule 4: at most 101", "never", 150, failures(150), 101, ""},
		{"rule 3: a signal stopped it with tasks left: 255", "never", 4, []job.Record{ok(1), ok(2)}, 255, ""},
		{"rule 3: even with failures", "never", 4, []job.Record{fail(1, 3)}, 255, ""},
		{"rule 1: now,fail=1: the failing task's code", "now,fail=1", 4, []job.Record{ok(1), fail(2, 7)}, 7, "now"},
		{"rule 1: now,fail=1: a signal as bash reports it", "now,fail=1", 4, []job.Record{killed(1, 9)}, 137, "now"},
		{"rule 1: soon,fail=2: the count", "soon,fail=2", 4, []job.Record{fail(1, 5), fail(2, 6)}, 2, "soon"},
		{"rule 1: fail=50% of all 4 tasks", "now,fail=50%", 4, []job.Record{fail(1, 1), ok(2), fail(3, 1)}, 50, "now"},
		{"rule 1: fail=10% of 10 tasks is one task: its code", "now,fail=10%", 10, []job.Record{ok(1), fail(2, 4)}, 4, "now"},
		{"rule 1: fail=30% of 5 tasks: reached at 1.5, the share", "now,fail=30%", 5, []job.Record{fail(1, 1), fail(2, 1)}, 40, "now"},
		{"rule 1: success=1", "now,success=1", 4, []job.Record{fail(1, 1), ok(2)}, 0, "now"},
		{"rule 1: done=1: the first task's code", "soon,done=1", 4, []job.Record{fail(1, 6)}, 6, "soon"},
		{"rule 1: done=2: the failed count", "soon,done=2", 4, []job.Record{fail(1, 6), ok(2)}, 1, "soon"},
		{"rule 4: fail=70% not reached: the failed share", "now,fail=70%", 10, append(failures(5), ok(6), ok(7), ok(8), ok(9), ok(10)), 50, ""},
		{"rule 4: soon,fail=3 not reached: the count", "soon,fail=3", 3, []job.Record{fail(1, 1), fail(2, 1), ok(3)}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHalt(tc.halt)
			if err != nil {
				t.Fatal(err)
			}
			q := NewQueue(QueueConfig{Tasks: make([]job.Task, tc.tasks), Halt: h})
			var when string
			for _, r := range tc.records {
				q.Take(0)
				when = q.finished(r)
			}
			if q.ExitCode() != tc.code || when != tc.when {
				t.Errorf("exit %d, halt %q; want %d, %q", q.ExitCode(), when, tc.code, tc.when)
			}
			if tc.when != "" {
				if _, then := q.Take(0); then == job.Now {
					t.Error("a task was handed out after the halt")
				}
			}
		})
	}
}

// failures are n failed records, tasks 1..n.
func failures(n int) []job.Record {
	out := make([]job.Record, n)
	for i := range out {
		out[i] = job.Record{Seq: i + 1, Exit: 1}
	}
	return out
}

func TestJoblogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "joblog")
	j, err := OpenJoblog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1700000000, 123_000_000)
	for _, r := range []job.Record{
		{Seq: 1, Host: "n1", Start: start, Runtime: 1500 * time.Millisecond, Command: "app\targ\nnext"},
		{Seq: 2, Host: "n1", Start: start, Runtime: 12345678 * time.Microsecond, Exit: 3, Command: "app 2"},
		{Seq: 3, Host: "n1", Start: start, Runtime: time.Millisecond, Signal: 9, Command: "app 3"},
	} {
		if err := j.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	b, _ := os.ReadFile(path)
	want := joblogHeader +
		"1\tn1\t1700000000.123\t     1.500\t0\t0\t0\t0\tapp arg next\n" +
		"2\tn1\t1700000000.123\t    12.345\t0\t0\t3\t0\tapp 2\n" +
		"3\tn1\t1700000000.123\t     0.001\t0\t0\t0\t9\tapp 3\n"
	if string(b) != want {
		t.Errorf("joblog:\n%s\nwant:\n%s", b, want)
	}
	// a resume appends, without a second header
	j, _ = OpenJoblog(path, true)
	_ = j.Record(job.Record{Seq: 2, Host: "n1", Start: start, Command: "app 2"})
	j.Close()
	got, err := ReadJoblog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2] != (JoblogEntry{Succeeded: true, Command: "app 2"}) || got[3] != (JoblogEntry{Command: "app 3"}) {
		t.Errorf("ReadJoblog = %+v (task 2 succeeded by its second record, task 3 was killed)", got)
	}
	// one success is enough, whatever came after it (parallel's rule)
	j, _ = OpenJoblog(path, true)
	_ = j.Record(job.Record{Seq: 1, Host: "n1", Start: start, Exit: 1, Command: "app 1"})
	j.Close()
	if got, _ := ReadJoblog(path); got[1] != (JoblogEntry{Succeeded: true, Command: "app 1"}) {
		t.Errorf("task 1, succeeded then failed: %+v", got[1])
	}
	if b, _ := os.ReadFile(path); strings.Count(string(b), "Seq\t") != 1 {
		t.Errorf("two headers:\n%s", b)
	}
	if m, err := ReadJoblog(filepath.Join(t.TempDir(), "none")); err != nil || len(m) != 0 {
		t.Errorf("a missing joblog is an empty one: %v %v", m, err)
	}
}

// okExit, failedExit and killedExit are exits as a slot reports them.
var (
	okExit     = exit{Code: 0}
	failedExit = exit{Code: 3}
	killedExit = exit{Code: -1, Signal: syscall.SIGSEGV}
)

// exit is a job.Exit for the tables, with the facts a case changes.
type exit job.Exit

func (e exit) endedBy(by job.Ended) exit { e.By = by; return e }
func (e exit) whileStopping() exit       { e.Stopping = true; return e }

// fault: the task was a client of its GPU's MPS server when a client's
// fault set a sticky error on every client; cause: its own.
func (e exit) fault(cause bool) exit {
	e.Fault = &job.ServerFault{PIDs: []int{1}, Listed: 0, FirstSlot: -1, Cause: cause}
	return e
}

// What follows a task's end, rule by rule (Queue.AfterTaskExit).
func TestAfterTaskExit(t *testing.T) {
	type want struct {
		then     job.Then
		seq, try int  // the slot's next job
		recorded bool // a joblog record
		stopAll  job.Ended
		halted   bool // the queue starts no new task
	}
	cases := []struct {
		name    string
		tries   int // --retries: tries in all
		halt    string
		stopped string // the queue was stopped before (a SIGHUP)
		try     int    // the ended task's earlier tries
		exit    exit
		want    want
	}{
		{"success: recorded, the next task", 0, "never", "", 0, okExit, want{then: job.Now, seq: 2, recorded: true}},
		{"failure: recorded, the next task", 0, "never", "", 0, failedExit, want{then: job.Now, seq: 2, recorded: true}},
		{"rule 2: ended by --halt now: not recorded, done", 0, "never", "", 0, killedExit.endedBy(job.EndedHalt).whileStopping(), want{then: job.Done}},
		{"rule 2: ended by a signal to gpulaunch: not recorded, done", 0, "never", "", 0, killedExit.endedBy(job.EndedSignalled).whileStopping(), want{then: job.Done}},
		{"rule 3: a second try in the same slot", 2, "never", "", 0, failedExit, want{then: job.Now, seq: 1, try: 1}},
		{"rule 3: --retries 1 is one try", 1, "never", "", 0, failedExit, want{then: job.Now, seq: 2, recorded: true}},
		{"rule 3: a signal is tried again too", 2, "never", "", 0, killedExit, want{then: job.Now, seq: 1, try: 1}},
		{"rule 3: a timeout is tried again too", 2, "never", "", 0, killedExit.endedBy(job.EndedTimeout), want{then: job.Now, seq: 1, try: 1}},
		{"rule 3: no try left: recorded", 3, "never", "", 2, failedExit, want{then: job.Now, seq: 2, recorded: true}},
		{"rule 3: success needs no other try", 3, "never", "", 0, okExit, want{then: job.Now, seq: 2, recorded: true}},
		{"rule 3: no other try while stopping", 3, "never", "", 0, failedExit.whileStopping(), want{then: job.Done, recorded: true}},
		{"rule 4: now,fail=1 ends the others", 0, "now,fail=1", "", 0, failedExit, want{then: job.Done, recorded: true, stopAll: job.EndedHalt, halted: true}},
		{"rule 4: soon,fail=1 starts no more", 0, "soon,fail=1", "", 0, failedExit, want{then: job.Done, recorded: true, halted: true}},
		{"rule 4: now,success=1 at a success", 0, "now,success=1", "", 0, okExit, want{then: job.Done, recorded: true, stopAll: job.EndedHalt, halted: true}},
		{"rule 4: done=1 at any end", 0, "soon,done=1", "", 0, failedExit, want{then: job.Done, recorded: true, halted: true}},
		{"rule 4: the halt waits for the last try", 2, "now,fail=1", "", 0, failedExit, want{then: job.Now, seq: 1, try: 1}},
		{"rule 5: a drained queue starts no more", 0, "never", "SIGHUP", 0, okExit, want{then: job.Done, recorded: true, halted: true}},
		{"rule 1: failed with its GPU's MPS server: given back, not a try, not recorded; it runs next", 2, "never", "", 1, failedExit.fault(false), want{then: job.Now, seq: 1, try: 1}},
		{"rule 1: ended by gpulaunch for its GPU's MPS fault: given back likewise", 0, "never", "", 0, killedExit.endedBy(job.EndedMPSFault), want{then: job.Now, seq: 1}},
		{"rule 1: the fault's cause failed on its own: its next try", 2, "never", "", 0, failedExit.fault(true), want{then: job.Now, seq: 1, try: 1}},
		{"rule 1: the fault's cause with no try left: recorded", 0, "never", "", 0, failedExit.fault(true), want{then: job.Now, seq: 2, recorded: true}},
		{"rule 1: given back while stopping: not recorded, done (--resume runs it)", 0, "never", "", 0, failedExit.fault(false).whileStopping(), want{then: job.Done}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHalt(tc.halt)
			if err != nil {
				t.Fatal(err)
			}
			tasks := []job.Task{{Seq: 1, Command: "one"}, {Seq: 2, Command: "two"}, {Seq: 3, Command: "three"}}
			q := NewQueue(QueueConfig{Tasks: tasks, Total: 3, Tries: tc.tries, Halt: h})
			first, _ := q.Take(0)
			if tc.stopped != "" {
				q.Stop(tc.stopped, false)
			}
			j := job.OfTask(first)
			j.Try = tc.try
			v := q.AfterTaskExit(0, j, job.Exit(tc.exit))
			got := want{then: v.Then, recorded: v.Record != nil, stopAll: v.StopAll, halted: q.halted != ""}
			if v.Then != job.Done {
				got.seq, got.try = v.Job.Task.Seq, v.Job.Try
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if v.Record != nil && (v.Record.Seq != 1 || v.Record.Failed() != job.Exit(tc.exit).Failed()) {
				t.Errorf("record %+v for exit %+v", *v.Record, tc.exit)
			}
		})
	}
}

// SameCommand tells this sweep's task from another sweep's in a joblog's
// Command column, and takes GNU parallel's quoting and a filled-in slot
// for the same command.
func TestSameCommand(t *testing.T) {
	for _, tc := range []struct {
		recorded, planned string
		same              bool
	}{
		{"./app --lr 0.1", "./app --lr 0.1", true},
		{"./app --lr 0.1", "./app --lr 0.2", false},
		{`echo a\ b`, `echo 'a b'`, true},
		{"app a b", "app 'a b'", false},
		{"app gpu3 x", "app gpu{%} x", true},
		{"app gpu12", "app gpu{%}", true},
		{"app gpu", "app gpu{%}", false},
		{"app 21", "app {%}1", true},
		{"app a b", "app\ta\nb", true},
		{"sort x | uniq", "sort x | uniq", true},
		{"sort x | uniq", "sort y | uniq", false},
	} {
		if got := SameCommand(tc.recorded, tc.planned); got != tc.same {
			t.Errorf("SameCommand(%q, %q) = %v", tc.recorded, tc.planned, got)
		}
	}
}

// Records that other nodes report are added, then written together by
// Flush, in one write: none before it, every one after; Record writes
// what was added before its own.
func TestJoblogGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "joblog")
	j, err := OpenJoblog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	lines := func() int {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(data), "\n") - 1
	}
	j.Add(job.Record{Seq: 1, Command: "a"})
	j.Add(job.Record{Seq: 2, Command: "b"})
	if n := lines(); n != 0 {
		t.Fatalf("%d records before the flush", n)
	}
	if err := j.Flush(); err != nil || lines() != 2 {
		t.Fatalf("flush: %v, %d records", err, lines())
	}
	j.Add(job.Record{Seq: 3, Command: "c"})
	if err := j.Record(job.Record{Seq: 4, Command: "d"}); err != nil || lines() != 4 {
		t.Fatalf("record: %v, %d records", err, lines())
	}
	got, err := ReadJoblog(path)
	if err != nil || len(got) != 4 || got[3].Command != "c" || got[4].Command != "d" {
		t.Fatalf("read back %v %v", got, err)
	}
}

// JoblogStream's rules: gpulaunch's own descriptors by name, whatever
// they are; anything else that is not a regular file (or a directory,
// which the writability check refuses).
func TestJoblogStream(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "joblog")
	os.WriteFile(file, nil, 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, stream := range map[string]bool{
		"/dev/stdout": true, "/dev/stderr": true, "/dev/fd/3": true, "/proc/self/fd/1": true, "/proc/thread-self/fd/2": true,
		"/proc/4242/fd/1": true, "/dev//stdout": true, // rule 1
		"/dev/null": true, fifo: true, // rule 2
		file: false, filepath.Join(dir, "new"): false, dir: false, "/dev/stdout.log": false, "/proc/self/fdinfo/1": false,
	} {
		if got := JoblogStream(path); got != stream {
			t.Errorf("JoblogStream(%q) = %v", path, got)
		}
	}
}

// Rule 1 says what becomes of a task its GPU's MPS server took down: it
// runs again once the server has recovered — but not after SIGHUP's
// drain or --halt, or while the run stops: then --resume runs it.
// Before, the log said "it runs again" in every case.
func TestAfterTaskExitSaysWhatBecomesOfATaskGivenBack(t *testing.T) {
	for _, tc := range []struct {
		name, stop string
		exit       exit
		want       string
	}{
		{"rule 1: it runs again", "", failedExit.fault(false), "it runs again once the server has recovered"},
		{"rule 1: after SIGHUP's drain, --resume runs it", "SIGHUP", failedExit.fault(false), "--resume runs it again"},
		{"rule 1: while the run stops (--halt now), --resume runs it", "", failedExit.fault(false).whileStopping(), "--resume runs it again"},
	} {
		q := NewQueue(QueueConfig{Tasks: []job.Task{{Seq: 1, Command: "one"}, {Seq: 2, Command: "two"}}, Total: 2, Tries: 1, Halt: Halt{}})
		first, _ := q.Take(0)
		if tc.stop != "" {
			q.Stop(tc.stop, false)
		}
		v := q.AfterTaskExit(0, job.OfTask(first), job.Exit(tc.exit))
		var said []string
		for _, n := range v.Notes {
			said = append(said, n.Msg)
		}
		if len(said) != 1 || !strings.Contains(said[0], tc.want) {
			t.Errorf("%s: said %q, want %q", tc.name, said, tc.want)
		}
	}
}
