//go:build linux

package launcher

import (
	"syscall"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

func TestExitCode(t *testing.T) {
	o := func(code int, sig syscall.Signal, by job.Ended) Outcome {
		return Outcome{Code: code, Signal: sig, EndedBy: by}
	}
	cases := []struct {
		name string
		outs []Outcome
		want int
	}{
		{"all zero", []Outcome{o(0, 0, ""), o(0, 0, "")}, 0},
		{"highest code", []Outcome{o(0, 0, ""), o(3, 0, ""), o(0, 0, ""), o(7, 0, "")}, 7},
		{"signal beats code", []Outcome{o(7, 0, ""), o(-1, syscall.SIGSEGV, "")}, 139},
		{"highest signal", []Outcome{o(-1, syscall.SIGTERM, ""), o(-1, syscall.SIGKILL, "")}, 143},
		{"-K: instances gpulaunch ended do not count", []Outcome{o(5, 0, ""), o(-1, syscall.SIGTERM, job.EndedBadExit)}, 5},
		{"--ddp's group stop: likewise", []Outcome{o(5, 0, ""), o(-1, syscall.SIGTERM, job.EndedGroup)}, 5},
		{"-W counts as the TERM it sent", []Outcome{o(0, 0, ""), o(-1, syscall.SIGTERM, job.EndedWait)}, 143},
		{"-W: also when the instance exited 0 on the TERM", []Outcome{o(0, 0, ""), o(0, 0, job.EndedWait)}, 143},
		{"-W: also when the instance was KILLed after the kill wait", []Outcome{o(0, 0, ""), o(-1, syscall.SIGKILL, job.EndedWait)}, 143},
		{"timeout counts", []Outcome{o(0, 0, ""), o(-1, syscall.SIGTERM, job.EndedTimeout)}, 143},
		{"timeout: an exit 0 on the TERM counts as the TERM", []Outcome{o(0, 0, job.EndedTimeout)}, 143},
		{"memory cap counts as the TERM", []Outcome{o(0, 0, ""), o(3, 0, job.EndedMemory)}, 143},
	}
	for _, tc := range cases {
		if got := ExitCode(tc.outs); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A run a signal stopped never exits 0 (Result.ExitCode).
func TestResultExitCode(t *testing.T) {
	ok, term := Outcome{}, Outcome{Code: -1, Signal: syscall.SIGTERM}
	for _, tc := range []struct {
		name string
		res  Result
		want int
	}{
		{"finished: srun's rule", Result{Outcomes: []Outcome{ok, {Code: 3}}}, 3},
		{"stopped, the instances exited 0 on the TERM: 128+TERM", Result{Outcomes: []Outcome{ok, ok}, Signal: syscall.SIGTERM}, 143},
		{"stopped by Ctrl-C", Result{Outcomes: []Outcome{ok}, Signal: syscall.SIGINT}, 130},
		{"stopped, an instance died of the TERM: srun's rule", Result{Outcomes: []Outcome{ok, term}, Signal: syscall.SIGTERM}, 143},
		{"stopped, an instance failed on its own: the signal still", Result{Outcomes: []Outcome{{Code: 4}, ok}, Signal: syscall.SIGHUP}, 129},
		{"Ctrl-C twice: the instances KILLed, still 130", Result{Outcomes: []Outcome{{Code: -1, Signal: syscall.SIGKILL, EndedBy: job.EndedSignalled}}, Signal: syscall.SIGINT}, 130},
		{"stopped by INT, then TERM, an instance died of the TERM: the first", Result{Outcomes: []Outcome{term}, Signal: syscall.SIGINT}, 130},
	} {
		if got := tc.res.ExitCode(); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
