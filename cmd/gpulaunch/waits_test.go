package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// The phases in which gpulaunch waits before its run, and the helper
// processes it starts beside its instances, held to README's "Signals"
// with real processes: the waits answer every signal at once, and no
// helper outlives the run however it ends.

// standInBin is a directory holding the MPS stand-in: the test binary by
// the control program's name (TestMain).
func standInBin(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "nvidia-cuda-mps-control")); err != nil {
		t.Fatal(err)
	}
	return bin
}

// shortRuntime is a runtime directory under /tmp: MPS's Unix sockets
// must fit 108 bytes whatever the checkout's path.
func shortRuntime(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "glw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// waitPhase is one phase in which gpulaunch waits before its run.
type waitPhase struct {
	name string
	// queue: the run is a task queue (a stop is 255, not 128 + signal)
	queue bool
	// start starts gpulaunch in the phase, marked with marker, and says
	// when it waits, and what it waits on has begun
	start func(t *testing.T, marker string) (r *signalRun, waiting func() bool)
	// after checks what the phase leaves once gpulaunch has exited
	after func(t *testing.T, r *signalRun)
}

// mpsWaitPhase: gpulaunch waits for an MPS control daemon that never
// writes its pid file (a daemon slow to come up), with a server of its
// own; the wait is 10 minutes.
func mpsWaitPhase(name string, queue bool) waitPhase {
	return waitPhase{name: name, queue: queue,
		start: func(t *testing.T, marker string) (*signalRun, func() bool) {
			runtime := shortRuntime(t)
			args := []string{"-n", "2", "-O", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0"}
			if queue {
				args = append(args, "--each-line", seqInput(t, 4))
			}
			args = append(args, "--", "sleep", "1")
			r := startSignalRunEnv(t, marker, runtime, []string{"PATH=" + standInBin(t) + ":" + os.Getenv("PATH"),
				"GPULAUNCH_MPS_WAIT=10m", "MPS_STANDIN_NO_PIDFILE=1", "MPS_STANDIN_SERVER=1", "MPS_STANDIN_EVENTS=" + filepath.Join(runtime, "events")}, args...)
			// the daemon has forked its server: the stop has both to end
			return r, func() bool {
				b, _ := os.ReadFile(filepath.Join(runtime, "events"))
				return strings.Contains(r.out.String(), "MPS: waiting up to 10m0s for 1 control daemon(s)") && strings.Contains(string(b), "server ")
			}
		},
		after: func(t *testing.T, r *signalRun) {
			if left, _ := filepath.Glob(filepath.Join(r.dir, "gpulaunch", "mps-*")); len(left) > 0 {
				t.Errorf("the run's MPS directory is still there: %q", left)
			}
		}}
}

// joinWaitPhase: node 1 of a queue over two nodes, whose holder (node 0)
// never comes; it would wait 10 minutes.
func joinWaitPhase() waitPhase {
	return waitPhase{name: "a node waiting for its holder", queue: true,
		start: func(t *testing.T, marker string) (*signalRun, func() bool) {
			dir := t.TempDir()
			r := startSignalRunEnv(t, marker, dir, append(nodeOfTwo(1, marker, dir), "GPULAUNCH_JOIN_WAIT=10m"),
				"-n", "2", "-G", "0", "-O", "--master-addr", "127.0.0.1", "--each-line", seqInput(t, 4), "--", "sleep", "1")
			return r, func() bool {
				return strings.Contains(r.out.String(), "node 1 of 2: waiting up to 10m0s for the queue's holder")
			}
		},
		after: func(t *testing.T, r *signalRun) {}}
}

// jobsMPSPhase: gpulaunch asks whether the node's MPS answers at its
// default directory (NVIDIA's /tmp/nvidia-mps: rule E3 of
// mps.FindExisting), and the control program's client, asking, hangs;
// gpulaunch would give up after 5 s. (A control program that hangs, not
// a daemon at /tmp/nvidia-mps: that directory is the machine's.)
func jobsMPSPhase() waitPhase {
	return waitPhase{name: "asking the node's MPS",
		start: func(t *testing.T, marker string) (*signalRun, func() bool) {
			bin, asked := t.TempDir(), filepath.Join(t.TempDir(), "asked")
			script := "#!/bin/sh\nif [ $# -eq 0 ]; then : > " + asked + "; exec sleep 600; fi\nexec " + taskqueue.ShellQuote(os.Args[0]) + " \"$@\"\n"
			if err := os.WriteFile(filepath.Join(bin, "nvidia-cuda-mps-control"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			r := startSignalRunEnv(t, marker, shortRuntime(t), []string{"PATH=" + bin + ":" + os.Getenv("PATH")},
				"-n", "2", "-O", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0", "--", "sleep", "1")
			return r, func() bool { _, err := os.Stat(asked); return err == nil }
		},
		after: func(t *testing.T, r *signalRun) {}}
}

// nodeOfTwo is the environment of node n of an srun step over two nodes
// that run a queue named run, with its key directory in dir.
func nodeOfTwo(n int, run, dir string) []string {
	s := strconv.Itoa(n)
	return []string{"SLURM_JOB_ID=4242", "SLURM_STEP_ID=0", "SLURMD_NODENAME=node" + s, "SLURM_STEP_NODELIST=node[0-1]",
		"SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURM_STEP_NUM_TASKS=2", "SLURM_PROCID=" + s, "SLURM_NODEID=" + s, "SLURM_LOCALID=0",
		"GPULAUNCH_KEY_DIR=" + filepath.Join(dir, "keys"), "GPULAUNCH_RUN_ID=" + run}
}

// startSignalRunEnv is startSignalRun with env added to gpulaunch's, and
// dir its temp root (GLTEST_TMP).
func startSignalRunEnv(t *testing.T, marker, dir string, env []string, args ...string) *signalRun {
	t.Helper()
	return startSignalRunTo(t, marker, dir, nil, append([]string{"GLTEST_TMP=" + dir}, env...), args...)
}

// noSurvivors waits (generously: a loaded machine is slow, not wrong)
// until no process of marker lives, and fails if one still does.
func noSurvivors(t *testing.T, marker string, out fmt.Stringer) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := survivors(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left: %v\n%s", left, out)
			return
		}
	}
}

// Every phase in which gpulaunch waits before its run — the MPS daemons
// coming up (for a run of instances and for a queue), a node waiting for
// its holder, asking the node's MPS whether it answers — answers signals by README's "Signals": INT, TERM, HUP and
// QUIT end it at once (its wait is 10 minutes) with 128 + the signal for
// a run of instances and 255 for a queue; USR1 is dropped, not its
// default death; a second Ctrl-C is no trouble; and nothing the phase
// started is left, a SIGKILL of gpulaunch included. (--ddp has no such phase: gpulaunch picks the
// rendezvous port and the ranks meet there themselves.) Before, the MPS
// wait ended with 1 whatever the signal; a node waiting for its holder,
// and a gpulaunch asking the node's MPS, died of the signal (a node's
// stop is 255), the latter leaving its MPS client behind.
func TestWaitingPhasesAnswerSignals(t *testing.T) {
	INT, TERM, HUP, QUIT, USR1 := syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1
	phases := []waitPhase{mpsWaitPhase("MPS daemons coming up", false), mpsWaitPhase("MPS daemons coming up for a queue", true), joinWaitPhase(), jobsMPSPhase()}
	sequences := []struct {
		name string
		sigs []syscall.Signal
	}{
		{"INT", []syscall.Signal{INT}},
		{"TERM", []syscall.Signal{TERM}},
		{"HUP", []syscall.Signal{HUP}},
		{"QUIT", []syscall.Signal{QUIT}},
		{"USR1 is dropped, then INT", []syscall.Signal{USR1, INT}},
		{"INT twice", []syscall.Signal{INT, INT}},
		{"SIGKILL of gpulaunch", []syscall.Signal{syscall.SIGKILL}},
	}
	for _, phase := range phases {
		for _, seq := range sequences {
			t.Run(phase.name+"/"+seq.name, func(t *testing.T) {
				t.Parallel()
				r, waiting := phase.start(t, marker(t))
				waitFor(t, "the wait", waiting)
				for _, sig := range seq.sigs {
					_ = r.cmd.Process.Signal(sig)
					if sig == USR1 {
						// dropped: the wait goes on (its default action was death)
						time.Sleep(200 * time.Millisecond)
						select {
						case <-r.done:
							t.Fatalf("USR1 ended the wait: status %d\n%s", exitStatus(r.err), r.out)
						default:
						}
					}
				}
				want := 128 + int(seq.sigs[len(seq.sigs)-1])
				if seq.sigs[0] != USR1 {
					want = 128 + int(seq.sigs[0])
				}
				switch {
				case seq.sigs[0] == syscall.SIGKILL:
					want = -1 // dead of it; what it started is ended all the same
				case phase.queue:
					want = 255
				}
				code, exited := r.waitExit(30 * time.Second)
				if !exited || code != want {
					t.Fatalf("exited %v with %d (%v), want %d at once:\n%s", exited, code, r.err, want, r.out)
				}
				// (a machine loaded past the 5 s of asking the node's MPS
				// lets the run start: its supervisor stops it then)
				if out := r.out.String(); want != -1 && !strings.Contains(out, "nothing was started") && !strings.Contains(out, ": passed to every instance") {
					t.Errorf("no word of the stop:\n%s", r.out)
				}
				noSurvivors(t, r.marker, r.out)
				if want != -1 { // a SIGKILLed gpulaunch's directory is the next run's to remove
					phase.after(t, r)
				}
			})
		}
	}
}

// runEnd is one way a run ends: by itself, or by a signal to gpulaunch
// once everything runs.
type runEnd struct {
	name   string
	signal syscall.Signal // 0: the instances end by themselves
	status int            // gpulaunch's exit status; -1: killed
}

var runEnds = []runEnd{
	{"the run's own end", 0, 0},
	{"Ctrl-C", syscall.SIGINT, 130},
	{"TERM", syscall.SIGTERM, 143},
	{"SIGKILL of gpulaunch", syscall.SIGKILL, -1},
}

// helperRun is a gpulaunch running with its helpers, its processes
// marked.
type helperRun struct {
	pid int
	// done waits for gpulaunch's exit: its status (-1: killed), false
	// when it did not exit (a hang)
	done func() (int, bool)
	// spared are marked processes that are not the run's (a tmux server
	// and the shell it started gpulaunch from)
	spared func() []int
	// helpers are the helpers' pids, once all runs
	helpers []int
}

// Every helper process gpulaunch starts — an MPS control daemon with the
// server it forks, under a daemon that ignores TERM and a server in a
// session of its own (the worst NVIDIA's documentation leaves open); the
// panes --tmux opens, whose `gpulaunch logs -f` and `top` follow the run
// — is ended however the run ends: by itself, by Ctrl-C or TERM, by a
// SIGKILL of gpulaunch. Read in /proc: no process of the run is left.
// (A --tmux window stays, its panes dead: their last output is for
// reading, README.) Before the keepers, a SIGKILLed gpulaunch left the
// daemon (its parent-death TERM ignored) and its server under PID 1.
func TestHelpersEndHoweverTheRunEnds(t *testing.T) {
	helpers := map[string]func(t *testing.T, marker string, short bool) helperRun{"MPS daemon and its server": runMPSHelpers}
	if _, err := exec.LookPath("tmux"); err == nil {
		helpers["tmux panes"] = runTmuxHelpers
	} else {
		t.Log("tmux is not installed: its panes are not tried (apt-get install tmux)")
	}
	for name, start := range helpers {
		for _, end := range runEnds {
			t.Run(name+"/"+end.name, func(t *testing.T) {
				t.Parallel()
				mark := marker(t)
				r := start(t, mark, end.signal == 0)
				if end.signal != 0 {
					for _, p := range r.helpers {
						if !slicesContains(survivors(mark), p) {
							t.Fatalf("helper %d is not running before the end (helpers %v)", p, r.helpers)
						}
					}
					_ = syscall.Kill(r.pid, end.signal)
				}
				if code, ok := r.done(); !ok || code != end.status {
					t.Errorf("gpulaunch ended (%v) with %d, want %d", ok, code, end.status)
				}
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					spared := r.spared()
					var left []string
					for _, p := range append(survivors(mark), r.helpers...) {
						if !slicesContains(spared, p) {
							comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
							if err != nil || !slicesContains(survivors(mark), p) {
								continue // gone (a zombie has ended)
							}
							left = append(left, fmt.Sprintf("%d (%s)", p, strings.ReplaceAll(string(comm), "\x00", " ")))
						}
					}
					if len(left) == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("left running 20s after the run: %v", left)
					}
				}
			})
		}
	}
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// runMPSHelpers runs 2 instances on one GPU under --mps.
func runMPSHelpers(t *testing.T, marker string, short bool) helperRun {
	b := newMPSBed(t)
	app := mpsApp
	if !short {
		app += "exec sleep 60"
	}
	r := startSignalRunEnv(t, marker, b.runtime, []string{"PATH=" + b.bin + ":" + os.Getenv("PATH"), "MPS_STANDIN_EVENTS=" + b.events,
		"UPDIR=" + b.dir, "MPS_STANDIN_SERVER=1", "MPS_STANDIN_TERM=ignore"},
		"-n", "2", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0", "--", "sh", "-c", app)
	var helpers []int
	if !short {
		waitUp(t, b.dir, 2, r.out)
		// the daemon, its server, and the daemon's keeper (its parent);
		// the server writes its own line once it runs, which need not be
		// before the instances are up
		var data []byte
		waitFor(t, "the stand-in daemon's and its server's events", func() bool {
			data, _ = os.ReadFile(b.events)
			return strings.Contains(string(data), "start ") && strings.Contains(string(data), "server ")
		})
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && (f[0] == "start" || f[0] == "server") {
				pid, _ := strconv.Atoi(f[1])
				helpers = append(helpers, pid)
				if f[0] == "start" {
					helpers = append(helpers, parentOf(pid))
				}
			}
		}
		if len(helpers) != 3 {
			t.Fatalf("helpers %v, want a daemon, its keeper and its server:\n%s", helpers, data)
		}
	}
	done := func() (int, bool) {
		code, ok := r.waitExit(60 * time.Second)
		if ws, isWS := r.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && isWS && ws.Signaled() {
			code = -1
		}
		return code, ok
	}
	return helperRun{pid: r.cmd.Process.Pid, done: done, spared: func() []int { return nil }, helpers: helpers}
}

// runTmuxHelpers runs gpulaunch -n 2 --tmux in a tmux server of its own,
// whose panes carry the marker (the server's environment is theirs).
func runTmuxHelpers(t *testing.T, marker string, short bool) helperRun {
	tmuxPath, _ := exec.LookPath("tmux")
	server := "gl-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	runtime, dir := t.TempDir(), t.TempDir()
	tmux := func(args ...string) (string, error) {
		cmd := exec.Command(tmuxPath, append([]string{"-L", server, "-f", "/dev/null"}, args...)...)
		cmd.Env = append(withoutSlurm(os.Environ()), "GLTEST_MAIN=1", "XDG_RUNTIME_DIR="+runtime, markerVar+"="+marker)
		out, err := cmd.CombinedOutput()
		return strings.TrimRight(string(out), "\n"), err
	}
	life := "60s"
	if short {
		life = "1s"
	}
	status := filepath.Join(dir, "status")
	// the launching shell stays after gpulaunch, with its sleep: spared
	launch := strings.Join(append([]string{taskqueue.ShellQuote(os.Args[0]), "-n", "2", "-G", "0", "-O", "--tmux", "--monitor-interval", "1s"},
		shellQuoteAll(helperArgs("hello", life))...), " ") + "; echo $? > " + status + ".tmp; mv " + status + ".tmp " + status + "; sleep 60"
	if out, err := tmux("new-session", "-d", "-s", "main", "-x", "200", "-y", "60", launch); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	spid, _ := tmux("display-message", "-p", "#{pid}")
	serverPID, _ := strconv.Atoi(spid)
	sh, _ := tmux("list-panes", "-t", "main:0", "-F", "#{pane_pid}")
	shell, _ := strconv.Atoi(sh)
	var helpers []int
	waitFor(t, "gpulaunch's window of 3 panes", func() bool {
		out, _ := tmux("list-panes", "-a", "-F", "#{window_name} #{pane_pid}")
		helpers = nil
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[0], "gpulaunch-") {
				pid, _ := strconv.Atoi(f[1])
				helpers = append(helpers, pid)
			}
		}
		return len(helpers) == 3
	})
	var pid int
	waitFor(t, "gpulaunch, the shell's child", func() bool {
		kids := childrenOf(shell)
		if len(kids) == 1 {
			pid = kids[0]
		}
		return pid > 0
	})
	done := func() (int, bool) {
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(status); err == nil {
				n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				if n == 128+int(syscall.SIGKILL) {
					n = -1
				}
				return n, true
			}
		}
		return 0, false
	}
	return helperRun{pid: pid, done: done, spared: func() []int { return append([]int{serverPID, shell}, childrenOf(shell)...) }, helpers: helpers}
}

// parentOf is pid's parent; 0 when pid is gone.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	st := string(b)
	f := strings.Fields(st[strings.LastIndexByte(st, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
