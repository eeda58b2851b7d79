package mps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/test/mpsstandin"
)

// The test binary is also the MPS stand-in, when it is started by that
// name (standIn links it), and the daemons' keeper, as gpulaunch is.
func TestMain(m *testing.M) {
	if process.IsKeeper() {
		os.Exit(process.Keep())
	}
	if filepath.Base(os.Args[0]) == "nvidia-cuda-mps-control" {
		os.Exit(mpsstandin.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// standIn is a nvidia-cuda-mps-control for this test: the test binary.
func standIn(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nvidia-cuda-mps-control")
	if err := os.Symlink(self, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// runDir is a run's directory under /tmp, not t.TempDir: the daemon's
// control socket must fit in sun_path (108 bytes), and t.TempDir under a
// checkout such as CI's /check/work/main/.tmp made the test's name part
// of a 113-byte path ("bind: invalid argument").
func runDir(t *testing.T) string {
	parent, err := os.MkdirTemp("/tmp", "mpst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	dir := filepath.Join(parent, "mps-run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// alive: pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func environOf(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	return "\x00" + string(b)
}

// One daemon per GPU, each with its GPU's UUID and its own private pipe
// and log directories, up (pid file) when Start returns; Stop quits each
// through the control client, as NVIDIA documents, and removes the
// directories.
func TestDaemonsLifecycle(t *testing.T) {
	control, dir := standIn(t), runDir(t)
	events := filepath.Join(t.TempDir(), "events")
	d, err := Start(context.Background(), Config{Control: control, Dir: dir, GPUs: []string{"GPU-aaa", "GPU-bbb"},
		Env: []string{"PATH=/bin:/usr/bin", "MPS_STANDIN_EVENTS=" + events, "CUDA_MPS_PIPE_DIRECTORY=/elsewhere"}, Wait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	pids := d.PIDs()
	for k, dm := range d.List() {
		env := environOf(t, dm.PID)
		for _, want := range []string{"\x00CUDA_VISIBLE_DEVICES=" + dm.GPU + "\x00", "\x00CUDA_MPS_PIPE_DIRECTORY=" + dm.PipeDir + "\x00"} {
			if !strings.Contains(env, want) {
				t.Errorf("daemon %d lacks %q", k, want)
			}
		}
		for _, sub := range []string{dm.PipeDir, dm.LogDir} {
			if fi, err := os.Stat(sub); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v %v, want a directory 0700", sub, fi, err)
			}
		}
		if !Answers(context.Background(), control, dm.PipeDir, nil) {
			t.Errorf("daemon %d does not answer at %s", k, dm.PipeDir)
		}
	}
	if d.Of("GPU-bbb") == nil || d.Of("GPU-bbb").PipeDir == d.Of("GPU-aaa").PipeDir {
		t.Fatal("the GPUs do not have a daemon each")
	}
	if killed := d.Stop(10*time.Second, nil); killed != 0 {
		t.Errorf("%d daemons had to be killed; quit should stop them", killed)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("daemon %d still runs after Stop", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the run's directory is still there: %v", err)
	}
	b, _ := os.ReadFile(events)
	if got := strings.Count(string(b), "quit "); got != 2 {
		t.Errorf("%d daemons quit, want 2:\n%s", got, b)
	}
}

// A daemon that does not come up: one that exits, one that never writes
// its pid file, a start given up (a signal to gpulaunch). Each is an
// error that says why, with what the daemon logged, and leaves no daemon
// and no directory.
func TestDaemonsThatDoNotComeUp(t *testing.T) {
	control := standIn(t)
	silent := filepath.Join(t.TempDir(), "silent")
	if err := os.WriteFile(silent, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		control string
		env     []string
		cancel  bool
		want    string
		// wait is how long the daemon may take: the stand-in that never
		// writes its pid file must have written its log by then, which
		// took it more than 300 ms next to two busy loops under -race
		wait time.Duration
	}{
		{"exits at once", "/bin/false", nil, false, "exited before it was up", 300 * time.Millisecond},
		{"never writes its pid file", control, []string{"MPS_STANDIN_NO_PIDFILE=1"}, false, "wrote no ", 5 * time.Second},
		{"the run is stopped meanwhile", control, []string{"MPS_STANDIN_NO_PIDFILE=1"}, true, "stopped while the control daemons started", 300 * time.Millisecond},
		{"says nothing and never writes its pid file", silent, nil, false, "it said nothing", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := runDir(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			if tc.cancel {
				cancel(errors.New("SIGINT"))
			}
			defer cancel(nil)
			_, err := Start(ctx, Config{Control: tc.control, Dir: dir, GPUs: []string{"GPU-aaa"}, Env: append([]string{"PATH=/bin"}, tc.env...), Wait: tc.wait})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.name == "never writes its pid file" && !strings.Contains(err.Error(), "its log ends:") {
				t.Errorf("no log in %v", err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the run's directory is still there: %v", err)
			}
			// what the error names must be there to be read: the run's
			// directory is gone, so it names nothing in it
			for _, word := range strings.Fields(err.Error()) {
				if path := strings.Trim(word, "():;,"); strings.HasPrefix(path, dir) {
					t.Errorf("the error points at %s, which is gone: %v", path, err)
				}
			}
			if left := childrenOf(os.Getpid()); len(left) > 0 {
				t.Errorf("left running: %v", left)
			}
		})
	}
}

// childrenOf lists the living children of pid.
func childrenOf(pid int) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && f[0] != "Z" {
			n, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, n)
		}
	}
	return out
}

// Each daemon here forks a server that leaves its process group (a
// session of its own) and ignores TERM — the worst NVIDIA's
// documentation leaves open. Stopped with time to quit, the daemon quits
// and takes its server down; with none (grace 0, as a second Ctrl-C
// asks), its keeper kills the daemon and then the server its death
// leaves behind. Either way no daemon and no server is left.
func TestDaemonsLeaveNoServer(t *testing.T) {
	control := standIn(t)
	for _, tc := range []struct {
		name   string
		grace  time.Duration
		killed int
	}{
		{"quit", 10 * time.Second, 0},
		{"no time to quit", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := filepath.Join(t.TempDir(), "events")
			d, err := Start(context.Background(), Config{Control: control, Dir: runDir(t), GPUs: []string{"GPU-aaa"},
				Env: []string{"PATH=/bin:/usr/bin", "MPS_STANDIN_EVENTS=" + events, "MPS_STANDIN_SERVER=1", "MPS_STANDIN_TERM=ignore"}, Wait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			server := 0
			for deadline := time.Now().Add(30 * time.Second); server == 0; time.Sleep(20 * time.Millisecond) {
				b, _ := os.ReadFile(events)
				for _, line := range strings.Split(string(b), "\n") {
					if f := strings.Fields(line); len(f) == 2 && f[0] == "server" {
						server, _ = strconv.Atoi(f[1])
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("the daemon never started its server:\n%s", b)
				}
			}
			if killed := d.Stop(tc.grace, nil); killed != tc.killed {
				t.Errorf("%d daemons killed, want %d", killed, tc.killed)
			}
			for _, pid := range append(d.PIDs(), server) {
				if alive(pid) {
					t.Errorf("pid %d still runs after Stop (daemon %v, server %d)", pid, d.PIDs(), server)
				}
			}
		})
	}
}
