package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Signals to a real gpulaunch process, with instances that are real
// processes. Every instance (and whatever it starts) carries the test's
// marker in its environment, so that what survives gpulaunch is found in
// /proc whatever gpulaunch believes.

// markerVar is the environment variable that marks a test's processes.
const markerVar = "GLTEST_SIGNAL_MARK"

// survivors lists the living (not zombie) processes whose environment
// holds marker: instances, their children, their daemons.
func survivors(marker string) []int {
	want := []byte(markerVar + "=" + marker + "\x00")
	var out []int
	dir, _ := os.ReadDir("/proc")
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || len(stat) < i+3 || stat[i+2] == 'Z' {
			continue
		}
		env, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if bytes.Contains(env, want) {
			out = append(out, pid)
		}
	}
	return out
}

// signalRun is one gpulaunch under test.
type signalRun struct {
	cmd    *exec.Cmd
	out    *lockedBuffer
	marker string
	dir    string // the instances' ready files
	done   chan struct{}
	err    error
}

// startSignalRun starts gpulaunch with args in its own process group (a
// signal to it is the test's alone) and the marker in its environment.
func startSignalRun(t *testing.T, marker, dir string, args ...string) *signalRun {
	t.Helper()
	r := &signalRun{marker: marker, dir: dir, out: &lockedBuffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(os.Args[0], args...)
	r.cmd.Env = append(withoutSlurm(os.Environ()), "GLTEST_MAIN=1", markerVar+"="+marker, "XDG_RUNTIME_DIR="+dir)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
		for _, pid := range survivors(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return r
}

// ready counts the instances that wrote their ready file.
func (r *signalRun) ready() int {
	files, _ := filepath.Glob(filepath.Join(r.dir, "ready.*"))
	return len(files)
}

// waitExit waits at most limit for gpulaunch to exit and returns its
// status; false when it did not (a hang), after which it is KILLed.
func (r *signalRun) waitExit(limit time.Duration) (int, bool) {
	select {
	case <-r.done:
		return exitStatus(r.err), true
	case <-time.After(limit):
		_ = r.cmd.Process.Kill()
		<-r.done
		return -1, false
	}
}

// trapINT is the instance: it survives the first INT (a shell's
// `trap "" INT`, as Python catching KeyboardInterrupt to checkpoint), and
// its sleep inherits the ignored INT.
const trapINT = `trap "" INT; : >"$0/ready.$$"; exec sleep 60`

// Ctrl-C twice, when the instances survive the first: the second KILLs
// every instance's group at once — long before the kill wait —, the
// summary is printed, and the status is 130 for a run, GNU parallel's 255
// for a queue. A TERM after that still acts. It hung before (the signal
// handler took the supervisor's lock twice).
func TestSecondInterruptKillsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    int
		summary string
	}{
		{"run", []string{"-n", "2", "-G", "0"}, 130, "INSTANCE"},
		{"queue", []string{"-n", "2", "-G", "0", "--each-line", "LINES"}, 255, "not finished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{}, tc.args...)
			for k, a := range args {
				if a == "LINES" {
					args[k] = seqInput(t, 6)
				}
			}
			args = append(args, "--kill-wait", "10m", "--", "sh", "-c", trapINT, dir)
			r := startSignalRun(t, marker(t), dir, args...)
			waitFor(t, "both instances ready", func() bool { return r.ready() == 2 })
			_ = r.cmd.Process.Signal(syscall.SIGINT)
			waitFor(t, "the first INT handled", func() bool { return strings.Contains(r.out.String(), "SIGINT: passed to every instance") })
			_ = r.cmd.Process.Signal(syscall.SIGINT)
			// The kill wait is ten minutes: only the second INT can end
			// the run within the hang detector's 30 s.
			code, exited := r.waitExit(30 * time.Second)
			if !exited {
				t.Fatalf("gpulaunch hung after the second INT:\n%s", r.out.String())
			}
			if code != tc.want || !strings.Contains(r.out.String(), tc.summary) {
				t.Errorf("exit %d, want %d and the summary (%q):\n%s", code, tc.want, tc.summary, r.out.String())
			}
			if left := survivors(r.marker); len(left) > 0 {
				t.Errorf("processes left: %v", left)
			}
		})
	}
}

// TERM and QUIT always act: after a first INT the instances ignore, a TERM
// (scancel's) is passed on and the kill wait still ends the run.
func TestTermAfterInterruptStillActs(t *testing.T) {
	dir := t.TempDir()
	r := startSignalRun(t, marker(t), dir, "-n", "2", "-G", "0", "--kill-wait", "1s", "--", "sh", "-c", `trap "" INT TERM; : >"$0/ready.$$"; exec sleep 60`, dir)
	waitFor(t, "both instances ready", func() bool { return r.ready() == 2 })
	_ = r.cmd.Process.Signal(syscall.SIGINT)
	waitFor(t, "the first INT handled", func() bool { return strings.Contains(r.out.String(), "SIGINT: passed to every instance") })
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	code, exited := r.waitExit(30 * time.Second)
	if !exited || code != 130 {
		t.Fatalf("exited %v with %d, want 130 (the first signal's) within the kill wait:\n%s", exited, code, r.out.String())
	}
	if left := survivors(r.marker); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
}

// -n 2 -W 1: instance 1, ended by -W's TERM, exits 0 on it; the run did
// not finish, so its status is 128 + TERM (it was 0), as `run --help`
// says.
func TestWaitEndedInstanceNeverExitsZero(t *testing.T) {
	script := `if [ "$GPULAUNCH_INSTANCE" = 0 ]; then exit 0; fi; trap 'exit 0' TERM; sleep 60 & wait`
	b, err := gpulaunch(t, "-n", "2", "-G", "0", "-W", "1", "--kill-wait", "5s", "--", "sh", "-c", script).CombinedOutput()
	if got := exitStatus(err); got != 128+int(syscall.SIGTERM) || !strings.Contains(string(b), "  wait\n") {
		t.Fatalf("exit %d, want 143 with instance 1 ended by wait:\n%s", got, b)
	}
}
