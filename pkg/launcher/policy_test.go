//go:build linux

package launcher

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// failedExit and okExit are exits as a slot reports them.
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

func TestAfterInstanceExit(t *testing.T) {
	type want struct {
		then    job.Then
		delay   time.Duration
		try     int
		stopAll job.Ended
		wait    bool
	}
	cases := []struct {
		name   string
		policy Policy
		try    int // restarts so far
		exit   exit
		want   want
	}{
		{"success: done", Policy{}, 0, okExit, want{then: job.Done}},
		{"failure without --restarts: done", Policy{}, 0, failedExit, want{then: job.Done}},
		{"rule 1: failure restarts after 0.25 s", Policy{Restarts: 2}, 0, failedExit, want{then: job.Later, delay: 250 * time.Millisecond, try: 1}},
		{"rule 1: a signal is a failure too", Policy{Restarts: 1}, 0, killedExit, want{then: job.Later, delay: 250 * time.Millisecond, try: 1}},
		{"rule 1: the backoff doubles", Policy{Restarts: 5}, 2, failedExit, want{then: job.Later, delay: time.Second, try: 3}},
		{"rule 1: no restart left", Policy{Restarts: 2}, 2, failedExit, want{then: job.Done}},
		{"rule 1: success is not restarted", Policy{Restarts: 2}, 0, okExit, want{then: job.Done}},
		{"rule 1: not while stopping", Policy{Restarts: 2}, 0, failedExit.whileStopping(), want{then: job.Done}},
		{"rule 1: not after --timeout", Policy{Restarts: 2}, 0, killedExit.endedBy(job.EndedTimeout), want{then: job.Done}},
		{"rule 1: not after --mem-per-task", Policy{Restarts: 2}, 0, killedExit.endedBy(job.EndedMemory), want{then: job.Done}},
		{"rule 2a: -K ends the others", Policy{KillOnBadExit: true}, 0, failedExit, want{then: job.Done, stopAll: job.EndedBadExit}},
		{"rule 2a: -K after the restarts are used up", Policy{KillOnBadExit: true, Restarts: 1}, 1, failedExit, want{then: job.Done, stopAll: job.EndedBadExit}},
		{"rule 2a: -K waits for a restart", Policy{KillOnBadExit: true, Restarts: 1}, 0, failedExit, want{then: job.Later, delay: 250 * time.Millisecond, try: 1}},
		{"rule 2a: -K ignores success", Policy{KillOnBadExit: true}, 0, okExit, want{then: job.Done}},
		{"rule 2a: -K not when stopping already", Policy{KillOnBadExit: true}, 0, killedExit.endedBy(job.EndedSignalled).whileStopping(), want{then: job.Done}},
		{"rule 2a: a timeout's failure triggers -K", Policy{KillOnBadExit: true}, 0, killedExit.endedBy(job.EndedTimeout), want{then: job.Done, stopAll: job.EndedBadExit}},
		{"rule 2b: the first done starts -W", Policy{WaitAfterFirst: time.Second}, 0, okExit, want{then: job.Done, wait: true}},
		{"rule 2b: a failure starts -W too", Policy{WaitAfterFirst: time.Second}, 0, failedExit, want{then: job.Done, wait: true}},
		{"rule 2b: only the first", Policy{WaitAfterFirst: time.Second}, 0, okExit.afterWaitStarted(), want{then: job.Done}},
		{"rule 2b: not while stopping", Policy{WaitAfterFirst: time.Second}, 0, okExit.whileStopping(), want{then: job.Done}},
		{"rule 2b: not when -K stops the run", Policy{WaitAfterFirst: time.Second, KillOnBadExit: true}, 0, failedExit, want{then: job.Done, stopAll: job.EndedBadExit}},
		{"rule 2b: a restart is not done", Policy{WaitAfterFirst: time.Second, Restarts: 1}, 0, failedExit, want{then: job.Later, delay: 250 * time.Millisecond, try: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.policy.afterInstanceExit(0, job.Job{Try: tc.try}, job.Exit(tc.exit))
			got := want{then: v.Then, delay: v.Delay, stopAll: v.StopAll, wait: v.StartWait}
			if v.Then != job.Done {
				got.try = v.Job.Try
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRestartBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{
		1: 250 * time.Millisecond, 2: 500 * time.Millisecond, 3: time.Second, 4: 2 * time.Second,
		5: 4 * time.Second, 6: 8 * time.Second, 7: 10 * time.Second, 100: 10 * time.Second, 10000: 10 * time.Second,
	} {
		if got := restartBackoff(n); got != want {
			t.Errorf("restart %d: backoff %s, want %s", n, got, want)
		}
	}
}

func TestMemoryCapAndSampling(t *testing.T) {
	capped := Policy{MemPerTask: 100 << 20, Monitor: 2 * time.Second}
	for _, tc := range []struct {
		name   string
		policy Policy
		rss    uint64
		by     job.Ended
		over   bool
	}{
		{"under the cap", capped, 99 << 20, job.EndedItself, false},
		{"at the cap", capped, 100 << 20, job.EndedItself, false},
		{"over the cap", capped, 101 << 20, job.EndedItself, true},
		{"over, but ending already", capped, 200 << 20, job.EndedTimeout, false},
		{"no cap", Policy{}, 1 << 40, job.EndedItself, false},
	} {
		if got := tc.policy.overMemoryCap(tc.rss, tc.by); got != tc.over {
			t.Errorf("%s: over %v, want %v", tc.name, got, tc.over)
		}
	}
	for _, tc := range []struct {
		name   string
		policy Policy
		every  time.Duration
	}{
		{"telemetry's interval", Policy{Monitor: 2 * time.Second}, 2 * time.Second},
		{"telemetry off", Policy{}, 0},
		{"a cap samples at least every 0.5 s", capped, 500 * time.Millisecond},
		{"a cap without telemetry", Policy{MemPerTask: 1 << 30}, 500 * time.Millisecond},
		{"a cap with faster telemetry", Policy{MemPerTask: 1 << 30, Monitor: 100 * time.Millisecond}, 100 * time.Millisecond},
	} {
		if got := tc.policy.sampleEvery(); got != tc.every {
			t.Errorf("%s: every %s, want %s", tc.name, got, tc.every)
		}
	}
	if (Policy{}).killWait() != defaultKillWait || (Policy{KillWait: time.Second}).killWait() != time.Second {
		t.Error("kill wait default")
	}
}

func TestOnSignal(t *testing.T) {
	cases := []struct {
		name       string
		sig        syscall.Signal
		drains     bool // a task queue
		stopping   bool
		interrupts int
		want       signalAction
	}{
		{"rule 1: HUP drains a queue", syscall.SIGHUP, true, false, 0, signalAction{drain: true}},
		{"rule 1: HUP drains a stopping queue too", syscall.SIGHUP, true, true, 0, signalAction{drain: true}},
		{"rule 2: USR1 is passed on", syscall.SIGUSR1, false, false, 0, signalAction{forward: true}},
		{"rule 2: USR2 is passed on in a queue", syscall.SIGUSR2, true, false, 0, signalAction{forward: true}},
		{"rule 3: TERM stops the run", syscall.SIGTERM, false, false, 0, signalAction{forward: true, stop: true, beginStop: true}},
		{"rule 3: HUP stops a run of instances", syscall.SIGHUP, false, false, 0, signalAction{forward: true, stop: true, beginStop: true}},
		{"rule 3: QUIT stops the run", syscall.SIGQUIT, false, false, 0, signalAction{forward: true, stop: true, beginStop: true}},
		{"rule 3: Ctrl-C stops the run", syscall.SIGINT, false, false, 1, signalAction{forward: true, stop: true, beginStop: true}},
		{"rule 3: Ctrl-C after -K stopped it", syscall.SIGINT, false, true, 1, signalAction{forward: true, stop: true}},
		{"rule 4: a second Ctrl-C kills", syscall.SIGINT, false, true, 2, signalAction{forward: true, stop: true, killNow: true}},
		{"rule 4: a second TERM does not", syscall.SIGTERM, false, true, 0, signalAction{forward: true, stop: true}},
	}
	for _, tc := range cases {
		if got := onSignal(tc.sig, tc.drains, tc.stopping, tc.interrupts); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// V1-V3, by rule.
func TestPolicyValues(t *testing.T) {
	for _, tc := range []struct {
		rule string
		err  error
		want string // "": accepted
	}{
		{"V1: no restarts", CheckRestarts(0), ""},
		{"V1: negative restarts", CheckRestarts(-1), "--restarts -1: cannot be negative"},
		{"V2: a kill wait", CheckKillWait(time.Second), ""},
		{"V2: no kill wait", CheckKillWait(0), "--kill-wait must be longer than 0"},
		{"V3: telemetry off", CheckMonitor(0, "0"), ""},
		{"V3: the floor itself", CheckMonitor(MinMonitorInterval, "10ms"), ""},
		{"V3: below the floor", CheckMonitor(time.Millisecond, "1ms"), "--monitor-interval 1ms: below the floor of 10ms"},
	} {
		got := ""
		if tc.err != nil {
			got = tc.err.Error()
		}
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.rule, got, tc.want)
		}
	}
}

// --mem-per-task 0 is Slurm's --mem=0, all the memory: no cap.
func TestMemPerTaskZeroIsNoCap(t *testing.T) {
	for _, v := range []string{"0", "0G", "0M"} {
		p, err := ReadPolicy(PolicyFlags{MemPerTask: v, KillWait: "10s", Monitor: "2s"})
		if err != nil || p.MemPerTask != 0 {
			t.Errorf("--mem-per-task %s: cap %d, err %v; want no cap", v, p.MemPerTask, err)
		}
	}
	for _, v := range []string{"-1", "0.0001K", "lots"} {
		if _, err := ReadPolicy(PolicyFlags{MemPerTask: v, KillWait: "10s", Monitor: "2s"}); err == nil || !strings.Contains(err.Error(), "not a memory size") {
			t.Errorf("--mem-per-task %s: %v", v, err)
		}
	}
	p, err := ReadPolicy(PolicyFlags{KillWait: "10s", Monitor: "10ms"})
	if err != nil || p.Monitor != MinMonitorInterval {
		t.Errorf("--monitor-interval at the floor: %v, %v", p.Monitor, err)
	}
}
