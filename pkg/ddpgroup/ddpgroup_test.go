package ddpgroup

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

var (
	okExit     = exit{Code: 0}
	failedExit = exit{Code: 3}
	killedExit = exit{Code: -1, Signal: syscall.SIGSEGV}
)

// exit is a job.Exit for the tables, with the facts a case changes.
type exit job.Exit

func (e exit) endedBy(by job.Ended) exit { e.By = by; return e }
func (e exit) whileStopping() exit       { e.Stopping = true; return e }
func (e exit) afterWaitStarted() exit    { e.WaitStarted = true; return e }
func (e exit) running(n int) exit        { e.Running = n; return e }

// backoff is launcher's restartBackoff: 0.25 s, doubling.
func backoff(n int) time.Duration { return 250 * time.Millisecond << (n - 1) }

// The group's whole sequence (Machine, G1–G6) without a process: each
// case feeds a group of three instances a series of events — an exit with
// its facts, a wake of the waiting slots (resume), a stop of the run —
// and checks each answer. A step's answer is written as the supervisor
// reads it: what the slot does next, and what the run does.
func TestGroupSequence(t *testing.T) {
	type step struct {
		event string // "exit SLOT", "resume SLOT", "stop"
		exit  exit   // the exit's facts (exit steps)
		want  string // the answer, as groupAnswer writes it
	}
	// running: how many slots still run after this exit
	failed, ok := failedExit, okExit
	ended := killedExit.endedBy(job.EndedGroup)
	cases := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{"G1, G2, G4: a failure ends the others, the last exit starts the backoff, all start again", Policy{Restarts: 2}, []step{
			{"exit 1", failed.running(2), "wait end-others=group restart"},
			{"ending", exit{}, "group restart"},
			{"exit 0", ended.running(1), "wait"},
			{"exit 2", ended.running(0), "wait wake-in=250ms"},
			{"ending", exit{}, ""},
			{"resume 0", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=2"},
			{"resume 1", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=2"},
			{"resume 2", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=2"},
		}},
		{"G1: the backoff doubles; with no restart left the others end as by -K", Policy{Restarts: 1}, []step{
			{"exit 0", failed.running(2), "wait end-others=group restart"},
			{"exit 1", ended.running(1), "wait"},
			{"exit 2", ended.running(0), "wait wake-in=250ms"},
			{"resume 0", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=1"},
			{"resume 1", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=1"},
			{"resume 2", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=1"},
			{"exit 2", failed.running(2), "done stop-all=kill-on-bad-exit"},
		}},
		{"G1: the second restart waits twice as long", Policy{Restarts: 2}, []step{
			{"exit 0", failed.running(0), "wait end-others=group restart wake-in=250ms"},
			{"resume 0", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=2"},
			{"resume 1", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=2"},
			{"resume 2", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=2"},
			{"exit 0", failed.running(0), "wait end-others=group restart wake-in=500ms"},
			{"resume 1", exit{}, "now try=2 TORCHELASTIC_RESTART_COUNT=2,TORCHELASTIC_MAX_RESTARTS=2"},
		}},
		{"G1: without --restarts a failure is -K's", Policy{}, []step{
			{"exit 1", failed.running(2), "done stop-all=kill-on-bad-exit"},
		}},
		{"G1: a signal is a failure", Policy{Restarts: 1}, []step{
			{"exit 1", killedExit.running(2), "wait end-others=group restart"},
		}},
		{"G1: an end by --timeout is gpulaunch's, not the group's failure", Policy{Restarts: 1}, []step{
			{"exit 1", killedExit.endedBy(job.EndedTimeout).running(2), "wait"},
		}},
		{"G2: a failure by itself while the group ends only waits", Policy{Restarts: 3}, []step{
			{"exit 0", failed.running(2), "wait end-others=group restart"},
			{"exit 1", failed.running(1), "wait"},
			{"exit 2", ok.running(0), "wait wake-in=250ms"},
		}},
		{"G2, G4: the group ends again while it is woken: one not started yet waits for the next restart", Policy{Restarts: 2}, []step{
			{"exit 0", failed.running(0), "wait end-others=group restart wake-in=250ms"},
			{"resume 0", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=2"},
			{"exit 0", failed.running(1), "wait end-others=group restart"},
			{"resume 1", exit{}, "wait"},
			{"exit 2", ended.running(0), "wait wake-in=500ms"},
			{"resume 0", exit{}, "now try=2 TORCHELASTIC_RESTART_COUNT=2,TORCHELASTIC_MAX_RESTARTS=2"},
			{"resume 1", exit{}, "now try=2 TORCHELASTIC_RESTART_COUNT=2,TORCHELASTIC_MAX_RESTARTS=2"},
			{"resume 2", exit{}, "now try=2 TORCHELASTIC_RESTART_COUNT=2,TORCHELASTIC_MAX_RESTARTS=2"},
		}},
		{"G3: a process that starts while the group ends is ended at once", Policy{Restarts: 1}, []step{
			{"ending", exit{}, ""},
			{"exit 0", failed.running(2), "wait end-others=group restart"},
			{"ending", exit{}, "group restart"},
		}},
		{"G5: a success waits; the last end is done and wakes the others, which are done", Policy{Restarts: 1}, []step{
			{"exit 0", ok.running(2), "wait"},
			{"exit 1", ok.running(1), "wait"},
			{"exit 2", ok.running(0), "done wake"},
			{"resume 0", exit{}, "done"},
			{"resume 1", exit{}, "done"},
		}},
		{"G5, G4: a success restarts with its group", Policy{Restarts: 1}, []step{
			{"exit 0", ok.running(2), "wait"},
			{"exit 1", failed.running(1), "wait end-others=group restart"},
			{"exit 2", ended.running(0), "wait wake-in=250ms"},
			{"resume 0", exit{}, "now try=1 TORCHELASTIC_RESTART_COUNT=1,TORCHELASTIC_MAX_RESTARTS=1"},
		}},
		{"G5: -W starts at the first end by itself", Policy{WaitAfterFirst: true}, []step{
			{"exit 0", ok.running(2), "wait start-wait"},
			{"exit 1", ok.afterWaitStarted().running(1), "wait"},
		}},
		{"G5: -W does not start at an end gpulaunch caused", Policy{WaitAfterFirst: true}, []step{
			{"exit 0", killedExit.endedBy(job.EndedMemory).running(2), "wait"},
		}},
		{"G6: a stop during the backoff: the waiting are done, none starts", Policy{Restarts: 1}, []step{
			{"exit 0", failed.running(0), "wait end-others=group restart wake-in=250ms"},
			{"stop", exit{}, ""},
			{"resume 0", exit{}, "done"},
			{"resume 1", exit{}, "done"},
		}},
		{"G6: a stop while the group ends: the exits are done", Policy{Restarts: 1}, []step{
			{"exit 0", failed.running(2), "wait end-others=group restart"},
			{"stop", exit{}, ""},
			{"ending", exit{}, ""},
			{"exit 1", killedExit.endedBy(job.EndedSignalled).whileStopping().running(1), "done"},
		}},
		{"G6: an exit while the run stops is done, failed or not", Policy{Restarts: 1}, []step{
			{"exit 0", failed.whileStopping().running(2), "done"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.policy.Backoff = backoff
			m := New(make([]job.Job, 3), make([]int, 3), tc.policy)
			for k := range 3 {
				if _, then := m.First(k); then != job.Now {
					t.Fatalf("first(%d): %v, want now", k, then)
				}
			}
			for k, st := range tc.steps {
				var got string
				var slot int
				switch _, _ = fmt.Sscanf(st.event[strings.LastIndexByte(st.event, ' ')+1:], "%d", &slot); {
				case strings.HasPrefix(st.event, "exit"):
					got = groupAnswer(m.AfterExit(slot, job.Job{Try: m.restarts}, job.Exit(st.exit)))
				case strings.HasPrefix(st.event, "resume"):
					j, then := m.Resume(slot)
					got = groupAnswer(job.Verdict{Then: then, Job: j})
				case st.event == "stop":
					m.Stop("SIGTERM", true)
				case st.event == "ending":
					got = string(m.Ending())
				}
				if got != st.want {
					t.Fatalf("step %d (%s): %q, want %q", k, st.event, got, st.want)
				}
			}
		})
	}
}

// groupAnswer writes a verdict as the group's table reads it: what the
// slot does (and its job when it starts one), then what the run does.
func groupAnswer(v job.Verdict) string {
	w := []string{map[job.Then]string{job.Done: "done", job.Now: "now", job.Later: "later", job.Wait: "wait"}[v.Then]}
	if v.Then == job.Now {
		w = append(w, fmt.Sprintf("try=%d", v.Job.Try), strings.Join(v.Job.Env, ","))
	}
	if v.StopAll != "" {
		w = append(w, "stop-all="+string(v.StopAll))
	}
	if v.EndOthers != "" {
		w = append(w, "end-others="+string(v.EndOthers))
	}
	if v.StartWait {
		w = append(w, "start-wait")
	}
	if v.Wake {
		w = append(w, "wake")
	}
	if v.WakeIn > 0 {
		w = append(w, "wake-in="+v.WakeIn.String())
	}
	return strings.Join(w, " ")
}

// G7: every start is told its error file in its attempt's directory, and
// the failure that ends the group (never one it restarts from, nor an
// end gpulaunch caused) is the first failure, with the file of the
// attempt it failed in.
func TestGroupFirstFailure(t *testing.T) {
	jobs, ranks := make([]job.Job, 2), []int{4, 5}
	envFile := func(j job.Job) string {
		for _, kv := range j.Env {
			if v, ok := strings.CutPrefix(kv, "TORCHELASTIC_ERROR_FILE="); ok {
				return v
			}
		}
		return ""
	}
	t.Run("the failure of the last attempt, with that attempt's file", func(t *testing.T) {
		m := New(jobs, ranks, Policy{Restarts: 1, ErrorDir: "/run/e", Backoff: backoff})
		j0, _ := m.First(0)
		j1, _ := m.First(1)
		if j1.ErrorFile != "/run/e/attempt_0/5/error.json" || envFile(j1) != j1.ErrorFile {
			t.Fatalf("attempt 0, rank 5: file %q, env %q", j1.ErrorFile, envFile(j1))
		}
		m.AfterExit(1, j1, job.Exit(failedExit.running(1)))
		m.AfterExit(0, j0, job.Exit(killedExit.endedBy(job.EndedGroup).running(0)))
		if m.FirstFailure() != nil {
			t.Fatal("a failure the group restarts from is its first failure")
		}
		j0, _ = m.Resume(0)
		j1, _ = m.Resume(1)
		if j0.ErrorFile != "/run/e/attempt_1/4/error.json" {
			t.Fatalf("attempt 1, rank 4: %q", j0.ErrorFile)
		}
		m.AfterExit(0, j0, job.Exit(killedExit.running(1)))
		m.AfterExit(1, j1, job.Exit(killedExit.endedBy(job.EndedBadExit).whileStopping().running(0)))
		want := Failure{Instance: 0, Rank: 4, Attempt: 1, Code: -1, Signal: killedExit.Signal, ErrorFile: j0.ErrorFile}
		if f := m.FirstFailure(); f == nil || *f != want {
			t.Fatalf("first failure %+v, want %+v", f, want)
		}
	})
	t.Run("none when gpulaunch ended the rank, or without an error directory", func(t *testing.T) {
		m := New(jobs, ranks, Policy{Backoff: backoff})
		j0, _ := m.First(0)
		if j0.ErrorFile != "" || envFile(j0) != "" {
			t.Fatalf("no ErrorDir, yet file %q", j0.ErrorFile)
		}
		m.AfterExit(0, j0, job.Exit(killedExit.endedBy(job.EndedTimeout).running(1)))
		if f := m.FirstFailure(); f != nil {
			t.Fatalf("first failure %+v after an end by --timeout", f)
		}
	})
}
