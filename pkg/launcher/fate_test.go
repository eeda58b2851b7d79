//go:build linux

package launcher

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// fault is e, an exit of a client of GPU 0's server when its nth fault
// came, whose list names slot first's process first (-1: none seen).
func (e exit) fault(n, first int) exit {
	e.Fault = &job.ServerFault{GPU: 0, N: n, Line: "[2026-11-27 01:38:32.637 Server   490] The following client process have a sticky error set:", PIDs: []int{468, 467}, FirstSlot: first}
	return e
}

// A shared GPU's whole sequence (fateMode, F1–F6) without a process: four
// instances share GPU 0 (slots 0-3), slot 4 has GPU 1 alone; each case
// feeds exits with their facts, wakes, stops, and checks each answer, as
// the supervisor reads it.
func TestFateSequence(t *testing.T) {
	type step struct {
		event string // "exit SLOT", "resume SLOT", "ending SLOT", "stop", "role SLOT"
		exit  exit
		want  string
	}
	sticky, ended := failedExit.fault(0, 2), killedExit.endedBy(job.EndedMPSFault)
	cases := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{"F1, F2a: the fault ends the GPU's others; the last exit waits for the recovery and the backoff; all restart, one restart each", Policy{Restarts: 1}, []step{
			{"exit 2", sticky, "wait end-others=MPS server fault among=0,1,3 in=2s"},
			{"ending 0", exit{}, "MPS server fault"},
			{"ending 4", exit{}, ""},
			{"exit 0", ended, "wait"},
			{"exit 3", sticky, "wait"},
			{"exit 1", ended, "wait wake-in=250ms recovery=0"},
			{"resume 0", exit{}, "now try=1"},
			{"resume 1", exit{}, "now try=1"},
			{"resume 2", exit{}, "now try=1"},
			{"resume 3", exit{}, "now try=1"},
			{"ending 0", exit{}, ""},
			{"exit 0", okExit, "done"},
		}},
		{"F2a: the neighbours' failure costs no instance its own restart: each may still restart once on its own", Policy{Restarts: 1}, []step{
			{"exit 2", sticky, "wait end-others=MPS server fault among=0,1,3 in=2s"},
			{"exit 0", ended, "wait"},
			{"exit 1", ended, "wait"},
			{"exit 3", ended, "wait wake-in=250ms recovery=0"},
			{"resume 0", exit{}, "now try=1"},
			{"resume 1", exit{}, "now try=1"},
			{"resume 2", exit{}, "now try=1"},
			{"resume 3", exit{}, "now try=1"},
			{"exit 1", failedExit, "later try=2 delay=250ms"},
			{"exit 1", failedExit, "done"},
		}},
		{"F2a: the GPU's restarts are its own: a second fault with none left ends its instances", Policy{Restarts: 1}, []step{
			{"exit 2", sticky, "wait end-others=MPS server fault among=0,1,3 in=2s"},
			{"exit 0", ended, "wait"},
			{"exit 1", ended, "wait"},
			{"exit 3", ended, "wait wake-in=250ms recovery=0"},
			{"resume 0", exit{}, "now try=1"},
			{"resume 1", exit{}, "now try=1"},
			{"resume 2", exit{}, "now try=1"},
			{"resume 3", exit{}, "now try=1"},
			{"exit 0", failedExit.fault(1, 0), "wait end-others=MPS server fault among=1,2,3 in=2s"},
			{"exit 1", ended, "wait"},
			{"exit 2", ended, "wait"},
			{"exit 3", ended, "done wake"},
			{"resume 1", exit{}, "done"},
			{"role 0", exit{}, "its client listed first by GPU 0's MPS server (the faulting one where the server's order is the H200's): the fault's cause"},
			{"role 3", exit{}, "failed with GPU 0's MPS server (instance 0's fault), not on its own with"},
		}},
		{"F2b, F3: without --restarts the GPU's instances are done; the cause is the one listed first, whichever exit came first", Policy{}, []step{
			{"exit 1", failedExit.fault(0, 2), "wait end-others=MPS server fault among=0,3 in=2s"},
			{"role 3", exit{}, "failing with GPU 0's MPS server, whose sticky error reaches every client (instance 2's fault); ended in 2s unless it fails by itself first"},
			{"exit 2", failedExit.fault(0, 2), "wait"},
			{"exit 0", failedExit.fault(0, 2), "wait"},
			{"exit 3", ended, "done wake"},
			{"resume 0", exit{}, "done"},
			{"role 2", exit{}, "its client listed first by GPU 0's MPS server (the faulting one where the server's order is the H200's): the fault's cause"},
			{"role 1", exit{}, "failed with GPU 0's MPS server (instance 2's fault), not on its own with"},
			{"cause", exit{}, "instance 2 exit 3 listed with=0,1,3"},
		}},
		{"F3: where the list's first is no process gpulaunch saw, the first failed exit handled is the cause", Policy{}, []step{
			{"exit 3", failedExit.fault(0, -1), "wait end-others=MPS server fault among=0,1,2 in=2s"},
			{"exit 1", failedExit.fault(0, -1), "wait"},
			{"exit 0", failedExit.fault(0, -1), "wait"},
			{"exit 2", failedExit.fault(0, -1), "done wake"},
			{"cause", exit{}, "instance 3 exit 3 with=0,1,2"},
			{"role 3", exit{}, "the first to fail of GPU 0's MPS clients: the fault's cause"},
		}},
		{"F2b: -K ends the run once the GPU's instances are done", Policy{KillOnBadExit: true}, []step{
			{"exit 2", sticky.running(0), "wait end-others=MPS server fault among=0,1,3 in=2s"},
			{"exit 0", ended, "wait"},
			{"exit 1", ended, "wait"},
			{"exit 3", ended, "done stop-all=kill-on-bad-exit wake"},
		}},
		{"F1: those done before the fault stay done and are not ended", Policy{Restarts: 1}, []step{
			{"exit 0", okExit, "done"},
			{"exit 2", sticky, "wait end-others=MPS server fault among=1,3 in=2s"},
			{"exit 1", ended, "wait"},
			{"exit 3", ended, "wait wake-in=250ms recovery=0"},
			{"resume 0", exit{}, "done"},
			{"resume 1", exit{}, "now try=1"},
		}},
		{"F4: a failure with no fault is the instance's own: its restart, its GPU untouched", Policy{Restarts: 1}, []step{
			{"exit 2", failedExit, "later try=1 delay=250ms"},
			{"ending 0", exit{}, ""},
			{"exit 4", failedExit, "later try=1 delay=250ms"},
		}},
		{"F4: a fault already handled is an earlier one: the exit is its own", Policy{Restarts: 2}, []step{
			{"exit 2", sticky.running(0), "wait end-others=MPS server fault among=0,1,3 in=2s"},
			{"exit 0", ended, "wait"},
			{"exit 1", ended, "wait"},
			{"exit 3", ended, "wait wake-in=250ms recovery=0"},
			{"resume 2", exit{}, "now try=1"},
			{"exit 2", failedExit.fault(0, 2), "later try=2 delay=250ms"},
		}},
		{"F1: a fault's restart pending its backoff is ended with the others", Policy{Restarts: 1}, []step{
			{"exit 0", failedExit, "later try=1 delay=250ms"},
			{"exit 2", sticky, "wait end-others=MPS server fault among=0,1,3 in=2s"},
			{"exit 1", ended, "wait"},
			{"exit 3", ended, "wait"},
			{"ending 0", exit{}, "MPS server fault"},
			{"exit 0", ended, "wait wake-in=250ms recovery=0"},
		}},
		{"F5: a stop while the GPU's fault is handled: the exits are done, the waiting too", Policy{Restarts: 1}, []step{
			{"exit 2", sticky, "wait end-others=MPS server fault among=0,1,3 in=2s"},
			{"stop", exit{}, ""},
			{"exit 0", ended.whileStopping(), "wait"},
			{"exit 1", ended.whileStopping(), "wait"},
			{"exit 3", ended.whileStopping(), "done wake"},
			{"resume 2", exit{}, "done"},
			{"cause", exit{}, "instance 2 exit 3 listed with=0,1,3"},
		}},
		{"F5: a stop while the GPU waits for its server's recovery: the fault stays the run's root cause", Policy{Restarts: 1}, []step{
			{"exit 2", sticky, "wait end-others=MPS server fault among=0,1,3 in=2s"},
			{"exit 0", ended, "wait"},
			{"exit 1", ended, "wait"},
			{"exit 3", ended, "wait wake-in=250ms recovery=0"},
			{"stop", exit{}, ""},
			{"resume 0", exit{}, "done"},
			{"cause", exit{}, "instance 2 exit 3 listed with=0,1,3"},
		}},
		{"F5: an exit with a fault while the run stops is its own end", Policy{Restarts: 1}, []step{
			{"exit 2", sticky.whileStopping(), "done"},
		}},
	}
	fates := []mps.Fate{{GPU: "GPU-0", Index: 0, Slots: []int{0, 1, 2, 3}}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			insts := make([]Instance, 5)
			for k := range insts {
				insts[k].Index, insts[k].Rank = k, k
			}
			m := newFateMode(&instanceMode{insts: insts, policy: tc.policy}, fates, insts, tc.policy, nil)
			jobs := make([]job.Job, 5)
			for k := range 5 {
				j, then := m.first(k)
				if then != job.Now {
					t.Fatalf("first(%d): %v, want now", k, then)
				}
				jobs[k] = j
			}
			for k, st := range tc.steps {
				var got string
				var slot int
				fmt.Sscanf(st.event[strings.LastIndexByte(st.event, ' ')+1:], "%d", &slot)
				switch ev := strings.Fields(st.event)[0]; ev {
				case "exit":
					v := m.afterExit(slot, jobs[slot], job.Exit(st.exit))
					if v.Then == job.Now || v.Then == job.Later {
						jobs[slot] = v.Job
					}
					got = fateAnswer(v)
				case "resume":
					j, then := m.resume(slot)
					if then == job.Now {
						jobs[slot] = j
					}
					got = fateAnswer(job.Verdict{Then: then, Job: j})
				case "ending":
					got = string(m.ending(slot))
				case "stop":
					m.stop("SIGTERM", true)
				case "role":
					role, with := m.role(slot)
					got = role + map[bool]string{true: " with"}[with]
				case "cause":
					f := m.firstFailure()
					if f == nil || f.MPS == nil {
						t.Fatalf("step %d: no root cause", k)
					}
					got = fmt.Sprintf("instance %d exit %d", f.Instance, f.Code) + map[bool]string{true: " listed"}[f.MPS.Listed] + " with=" + ints(f.MPS.With)
				}
				if got != st.want {
					t.Fatalf("step %d (%s): %q, want %q", k, st.event, got, st.want)
				}
			}
		})
	}
}

// fateAnswer writes a verdict as the fate table reads it.
func fateAnswer(v job.Verdict) string {
	w := []string{map[job.Then]string{job.Done: "done", job.Now: "now", job.Later: "later", job.Wait: "wait"}[v.Then]}
	if v.Then == job.Now || v.Then == job.Later {
		w = append(w, fmt.Sprintf("try=%d", v.Job.Try))
	}
	if v.Then == job.Later {
		w = append(w, "delay="+v.Delay.String())
	}
	if v.StopAll != "" {
		w = append(w, "stop-all="+string(v.StopAll))
	}
	if v.EndOthers != "" {
		w = append(w, "end-others="+string(v.EndOthers), "among="+ints(v.Among))
		if v.EndIn > 0 {
			w = append(w, "in="+v.EndIn.String())
		}
	}
	if v.Wake {
		w = append(w, "wake")
	}
	if v.WakeIn > 0 {
		w = append(w, "wake-in="+v.WakeIn.String())
	}
	if v.Recovery != nil {
		w = append(w, fmt.Sprintf("recovery=%d", v.Recovery.N))
	}
	return strings.Join(w, " ")
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// A queue on a shared GPU's slots (fateMode over queueMode, with the
// queue's rule 1): the task that faulted failed (its record); the tasks
// it took down are given back, not counted as tries; the GPU's slots take
// no task until all have exited, then run the given-back tasks first, and
// every task ends with one record.
func TestFateQueue(t *testing.T) {
	var tasks []job.Task
	for k := 1; k <= 6; k++ {
		tasks = append(tasks, job.Task{Seq: k, Command: fmt.Sprint("task ", k)})
	}
	q := taskqueue.NewQueue(taskqueue.QueueConfig{Tasks: tasks, Total: 6, Tries: 1})
	insts := make([]Instance, 4)
	fates := []mps.Fate{{GPU: "GPU-0", Slots: []int{0, 1, 2, 3}}}
	m := newFateMode(queueMode{q}, fates, insts, Policy{}, q)
	running := make([]job.Job, 4)
	for k := range 4 {
		j, then := m.first(k)
		if then != job.Now || j.Task.Seq != k+1 {
			t.Fatalf("first(%d): task %d %v", k, j.Task.Seq, then)
		}
		running[k] = j
	}
	records := map[int]int{}
	exitOf := func(slot int, e exit) string {
		v := m.afterExit(slot, running[slot], job.Exit(e))
		if v.Record != nil {
			records[v.Record.Seq]++
		}
		if v.Then == job.Now {
			running[slot] = v.Job
			return fmt.Sprintf("now task %d try %d", v.Job.Task.Seq, v.Job.Try)
		}
		return fateAnswer(v)
	}
	// task 3 (slot 2) faults and is listed first; the exits come in any order
	steps := []struct {
		slot int
		exit exit
		want string
	}{
		{1, failedExit.fault(0, 2), "wait end-others=MPS server fault among=0,3 in=2s"},
		{3, killedExit.endedBy(job.EndedMPSFault), "wait"},
		{2, failedExit.fault(0, 2), "wait"},
		{0, killedExit.endedBy(job.EndedMPSFault), "wait recovery=0"},
	}
	for k, st := range steps {
		if got := exitOf(st.slot, st.exit); got != st.want {
			t.Fatalf("step %d (exit %d): %q, want %q", k, st.slot, got, st.want)
		}
	}
	if records[3] != 1 || len(records) != 1 {
		t.Fatalf("records %v, want task 3's alone", records)
	}
	role, with := m.role(1)
	if !strings.Contains(role, "slot 2's fault") || !with {
		t.Errorf("slot 1's role: %q %v", role, with)
	}
	// recovered: every slot takes a task again, the given-back ones first
	var taken []int
	for k := range 4 {
		j, then := m.resume(k)
		if then != job.Now {
			t.Fatalf("resume(%d): %v", k, then)
		}
		if j.Try != 0 {
			t.Errorf("task %d: try %d, want 0: a failure with the server is no try", j.Task.Seq, j.Try)
		}
		running[k] = j
		taken = append(taken, j.Task.Seq)
	}
	slicesSort(taken)
	if fmt.Sprint(taken) != "[1 2 4 5]" {
		t.Errorf("after the recovery the slots took tasks %v, want 1, 2, 4 and 5 (task 3 failed: its record)", taken)
	}
	busy := []int{0, 1, 2, 3}
	for len(busy) > 0 {
		k := busy[0]
		busy = busy[1:]
		if strings.HasPrefix(exitOf(k, okExit), "now") {
			busy = append(busy, k)
		}
	}
	for seq := 1; seq <= 6; seq++ {
		if records[seq] != 1 {
			t.Errorf("task %d: %d records, want 1 (%v)", seq, records[seq], records)
		}
	}
	if q.ExitCode() != 1 {
		t.Errorf("queue exit %d, want 1 (task 3 failed)", q.ExitCode())
	}
}

func slicesSort(xs []int) {
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[j] < xs[i] {
				xs[i], xs[j] = xs[j], xs[i]
			}
		}
	}
}
