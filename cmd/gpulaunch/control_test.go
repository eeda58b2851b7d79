package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// liveRun is a gpulaunch started for a control test, its sockets in a
// runtime directory of the test's own.
type liveRun struct {
	cmd            *exec.Cmd
	runtime        string
	stdout, stderr *lockedBuffer
	done           chan error
}

func startLiveRun(t *testing.T, env []string, args ...string) *liveRun {
	t.Helper()
	return startLiveRunIn(t, t.TempDir(), env, args...)
}

// ownSockets is the environment that keeps a test's control sockets, and
// the runs its clients find, in its runtime directory alone: the runtime
// directory, TMPDIR, and the temp root that replaces /tmp (GLTEST_TMP,
// read by TestMain). Another gpulaunch on the machine — another test's, a
// user's in /tmp — is never seen.
// follow starts a client of r (`logs -f …`) that runs on, and hands its
// stdout over line by line; the channel closes when the client ends.
func (r *liveRun) follow(t *testing.T, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := gpulaunch(t, args...)
	cmd.Env = append(withoutSlurm(cmd.Env), ownSockets(r.runtime)...)
	pipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, lines
}

func ownSockets(runtime string) []string {
	return []string{"XDG_RUNTIME_DIR=" + runtime, "TMPDIR=" + runtime, "GLTEST_TMP=" + runtime}
}

// startLiveRunIn uses runtime for its sockets (ownSockets).
func startLiveRunIn(t *testing.T, runtime string, env []string, args ...string) *liveRun {
	t.Helper()
	r := &liveRun{runtime: runtime, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	r.cmd = gpulaunch(t, args...)
	r.cmd.Env = append(append(withoutSlurm(r.cmd.Env), ownSockets(r.runtime)...), env...)
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
		r.done <- nil
	})
	return r
}

func withoutSlurm(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SLURM_") {
			out = append(out, kv)
		}
	}
	return out
}

// client runs a gpulaunch client command against the run.
func (r *liveRun) client(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := gpulaunch(t, args...)
	cmd.Env = append(withoutSlurm(cmd.Env), ownSockets(r.runtime)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), exitStatus(err)
}

func (r *liveRun) pid() string { return strconv.Itoa(r.cmd.Process.Pid) }

func (r *liveRun) socket() string {
	host, _ := os.Hostname()
	return filepath.Join(r.runtime, "gpulaunch", host+"."+r.pid()+".sock")
}

// snapshot waits until the run answers and every instance runs.
func (r *liveRun) waitRunning(t *testing.T) launcher.Snapshot {
	t.Helper()
	var snap launcher.Snapshot
	waitFor(t, "every instance running, seen through the socket", func() bool {
		out, _, code := r.client(t, "status", "--json", "--pid", r.pid())
		if code != 0 || json.Unmarshal([]byte(out), &snap) != nil {
			return false
		}
		validateAgainstSchema(t, "status", []byte(out))
		for _, in := range snap.Instances {
			if in.State != launcher.StateRunning {
				return false
			}
		}
		return true
	})
	return snap
}

func (r *liveRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return exitStatus(err)
	case <-time.After(30 * time.Second):
		t.Fatalf("gpulaunch did not end; stderr:\n%s", r.stderr.String())
	}
	return -1
}

func TestControlStatusLogsAndSignal(t *testing.T) {
	r := startLiveRun(t, nil, append([]string{"-n", "2", "-G", "0", "--monitor-interval", "100ms"}, helperArgs("control-app")...)...)
	snap := r.waitRunning(t)
	if snap.Run.PID != r.cmd.Process.Pid || len(snap.Instances) != 2 || snap.Run.Socket != r.socket() {
		t.Fatalf("status: %+v", snap.Run)
	}
	for _, in := range snap.Instances {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", in.PID))
		if err != nil || !strings.Contains(string(stat), fmt.Sprintf(") S %d ", r.cmd.Process.Pid)) && !strings.Contains(string(stat), fmt.Sprintf(") R %d ", r.cmd.Process.Pid)) {
			t.Errorf("instance %d: pid %d is not a live child of gpulaunch: %q", in.Index, in.PID, stat)
		}
	}

	// Private: the directory 0700 and the socket 0600, both ours.
	for path, want := range map[string]os.FileMode{filepath.Dir(r.socket()): 0o700, r.socket(): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want || int(fi.Sys().(*syscall.Stat_t).Uid) != os.Getuid() {
			t.Errorf("%s: mode %04o uid %d, want %04o uid %d", path, fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Uid, want, os.Getuid())
		}
	}

	// The table names every instance, and telemetry arrives.
	waitFor(t, "a sampled RSS in the table", func() bool {
		out, _, _ := r.client(t, "status", "--pid", r.pid())
		return strings.Contains(out, "2 running") && regexpMatch(`(?m)^1\s+running\s+\d+\s+-\s+\S+\s+\S+\s+0\s+\d+\s+\d+[KM]`, out)
	})

	// logs -f follows instance 1 from its first line; a signal to
	// instance 1 shows up there, and reaches instance 1 only.
	follow, lines := r.follow(t, "logs", "-f", "--pid", r.pid(), "1")
	expectLine(t, lines, "instance 1 ready")
	out, errOut, code := r.client(t, "signal", "--pid", r.pid(), "1", "usr1")
	if code != 0 || !regexpMatch(`^sent SIGUSR1 to instance 1 \(pid \d+\)\n$`, out) {
		t.Fatalf("signal: code %d, %q %q", code, out, errOut)
	}
	expectLine(t, lines, "instance 1 got SIGUSR1")
	if out, _, _ := r.client(t, "logs", "--pid", r.pid(), "0"); strings.Contains(out, "SIGUSR1") || !strings.Contains(out, "instance 0 ready") {
		t.Errorf("instance 0's log: %q", out)
	}
	if out, _, _ := r.client(t, "logs", "--tail", "1", "--pid", r.pid(), "0"); strings.Count(out, "\n") != 1 {
		t.Errorf("logs --tail 1: %q", out)
	}

	// TERM to all: both end cleanly, the follower ends with its instance,
	// gpulaunch exits 0 and takes its socket with it.
	if out, _, code := r.client(t, "signal", "--pid", r.pid(), "all", "TERM"); code != 0 || strings.Count(out, "sent SIGTERM") != 2 {
		t.Fatalf("signal all: %d %q", code, out)
	}
	expectLine(t, lines, "instance 1 got SIGTERM")
	for range lines {
	}
	if err := follow.Wait(); err != nil {
		t.Errorf("logs -f: %v", err)
	}
	if code := r.wait(t); code != 0 {
		t.Errorf("gpulaunch exit %d\n%s", code, r.stderr.String())
	}
	if _, err := os.Stat(r.socket()); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	if !strings.Contains(r.stderr.String(), "SIGUSR1 from `gpulaunch signal`: sent to instance 1") {
		t.Errorf("the run's log does not record the signal:\n%s", r.stderr.String())
	}
}

func expectLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before %q", want)
			}
			if l == want {
				return
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %q", want)
		}
	}
}

func TestControlBadRequests(t *testing.T) {
	r := startLiveRun(t, nil, append([]string{"-n", "1", "-G", "0"}, helperArgs("control-app")...)...)
	r.waitRunning(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "--pid", r.pid(), "7"}, "no instance 7: this run has instances 0 to 0"},
		{[]string{"signal", "--pid", r.pid(), "3", "TERM"}, "no instance 3: this run has instances 0 to 0"},
		{[]string{"signal", "--pid", r.pid(), "0", "SIGNOPE"}, `signal "SIGNOPE": not a signal name`},
		{[]string{"signal", "--pid", r.pid(), "0", "99"}, "signal 99: not a signal number"},
		{[]string{"signal", "--pid", r.pid(), "0"}, "signal needs INSTANCE|all and SIGNAL"},
		{[]string{"logs", "--pid", r.pid()}, "logs needs one INSTANCE number"},
		{[]string{"logs", "--pid", r.pid(), "x"}, `logs "x": INSTANCE is an instance number`},
		{[]string{"status", "--pid", "1"}, "no control socket of pid 1 in"},
		{[]string{"status", "--pid", r.pid(), "--socket", r.socket()}, "--pid and --socket both choose"},
		{[]string{"status", "--socket", filepath.Join(r.runtime, "nothing.sock")}, "nothing.sock: no such file"},
	} {
		out, errOut, code := r.client(t, tc.args...)
		if code == 0 || out != "" || !strings.HasPrefix(errOut, "gpulaunch: error: ") || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want one error line with %q", tc.args, code, out, errOut, tc.want)
		}
	}
	// Still running: no bad request hurt it.
	if out, _, code := r.client(t, "status", "--pid", r.pid()); code != 0 || !strings.Contains(out, "1 running") {
		t.Errorf("after bad requests: %d %q", code, out)
	}
}

// Clients find the gpulaunch of their job without --pid, and say what to
// do when there are none or several.
func TestControlFindsTheRunOfTheJob(t *testing.T) {
	job := fmt.Sprintf("gltest%d", os.Getpid())
	a := startLiveRun(t, []string{"SLURM_JOB_ID=" + job}, append([]string{"-n", "1", "-G", "0"}, helperArgs("control-app")...)...)
	a.waitRunning(t)
	inJob := func(r *liveRun, job string, args ...string) (string, string, int) {
		cmd := gpulaunch(t, args...)
		cmd.Env = append(append(withoutSlurm(cmd.Env), ownSockets(r.runtime)...), "SLURM_JOB_ID="+job)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), exitStatus(err)
	}
	out, errOut, code := inJob(a, job, "status")
	if code != 0 || !strings.Contains(out, "gpulaunch pid "+a.pid()+" on ") || !strings.Contains(out, "job "+job) {
		t.Fatalf("status in the job: %d %q %q", code, out, errOut)
	}
	_, errOut, code = inJob(a, job+"x", "status")
	if code == 0 || !strings.Contains(errOut, "no running gpulaunch of job "+job+"x") || !strings.Contains(errOut, "pid "+a.pid()) {
		t.Errorf("another job: %d %q", code, errOut)
	}
	// A second run of the same job, in the same runtime directory.
	b := &liveRun{runtime: a.runtime, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	b.cmd = gpulaunch(t, append([]string{"-n", "1", "-G", "0"}, helperArgs("control-app")...)...)
	b.cmd.Env = append(append(withoutSlurm(b.cmd.Env), ownSockets(a.runtime)...), "SLURM_JOB_ID="+job)
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.done <- b.cmd.Wait() }()
	defer func() { _ = b.cmd.Process.Kill(); <-b.done }()
	b.waitRunning(t)
	_, errOut, code = inJob(a, job, "status")
	if code != exitUsage || !strings.Contains(errOut, "2 gpulaunch runs of job "+job) || !strings.Contains(errOut, "choose one with --pid") {
		t.Errorf("two runs: %d %q", code, errOut)
	}
	// Another job's client names every run it found, not the first.
	_, errOut, code = inJob(a, job+"x", "status")
	if code == 0 || !strings.Contains(errOut, "2 of other jobs or none run here") || !strings.Contains(errOut, "pid "+a.pid()) || !strings.Contains(errOut, "pid "+b.pid()) {
		t.Errorf("another job beside two runs: %d %q", code, errOut)
	}
	// A SIGKILLed run leaves its socket; clients skip and remove it.
	_ = b.cmd.Process.Kill()
	b.wait(t)
	if _, err := os.Stat(b.socket()); err != nil {
		t.Fatalf("a SIGKILLed run's socket should be left for the client to clear: %v", err)
	}
	if out, errOut, code := inJob(a, job, "status"); code != 0 || !strings.Contains(out, "pid "+a.pid()) {
		t.Errorf("status beside a stale socket: %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(b.socket()); !os.IsNotExist(err) {
		t.Errorf("stale socket not removed: %v", err)
	}
}

// A socket directory someone else could enter is not used: the run goes
// on without a socket and says so.
func TestControlRefusesAnOpenDirectory(t *testing.T) {
	rt := t.TempDir()
	if err := os.Mkdir(filepath.Join(rt, "gpulaunch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(rt, "gpulaunch"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := gpulaunch(t, append([]string{"-n", "1", "-G", "0"}, helperArgs("hello", "0s")...)...)
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+rt)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no control socket") || !strings.Contains(string(out), "has mode 0755, open to others: run `chmod 700") ||
		!strings.Contains(string(out), "hello 2 from instance 0") {
		t.Errorf("%v\n%s", err, out)
	}
}

// A second user is kept out: by the directory's mode, and, where the
// directory was opened to everyone, by the peer's uid on the socket.
func TestControlRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the test runs a client as a second, throwaway user")
	}
	uid, cleanup := throwawayUser(t)
	defer cleanup()
	// The client binary must be reachable by that user.
	dir, err := os.MkdirTemp("/tmp", "gltest-bin-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "gpulaunch.test")
	copyFile(t, os.Args[0], bin)
	_ = os.Chmod(dir, 0o755)
	_ = os.Chmod(bin, 0o755)

	// A runtime directory the other user could reach if it were opened
	// (the test's temp dirs sit below 0700 directories).
	rt, err := os.MkdirTemp("/tmp", "gltest-rt-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(rt)
	r := startLiveRunIn(t, rt, nil, append([]string{"-n", "1", "-G", "0"}, helperArgs("control-app")...)...)
	r.waitRunning(t)
	asOther := func() (string, int) {
		cmd := exec.Command(bin, "status", "--socket", r.socket())
		cmd.Env = []string{"GLTEST_MAIN=1", "PATH=/usr/bin:/bin"}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		out, err := cmd.CombinedOutput()
		return string(out), exitStatus(err)
	}
	out, code := asOther()
	if code == 0 || !strings.Contains(out, "permission denied") || strings.Contains(out, "INSTANCE") {
		t.Errorf("uid %d through the 0700 directory: code %d %q", uid, code, out)
	}
	// Open the directory and the socket to everyone: the uid check still refuses.
	_ = os.Chmod(rt, 0o755)
	_ = os.Chmod(filepath.Dir(r.socket()), 0o777)
	_ = os.Chmod(r.socket(), 0o777)
	out, code = asOther()
	want := fmt.Sprintf("refused: this gpulaunch belongs to uid %d; your uid is %d", os.Getuid(), uid)
	if code == 0 || !strings.Contains(out, want) || strings.Contains(out, "INSTANCE") {
		t.Errorf("uid %d through an opened socket: code %d %q, want %q", uid, code, out, want)
	}
	// The run logs the refusal before it writes it, but its stderr reaches
	// this test through a pipe and a copier: the client may be done first.
	waitFor(t, "the run's log to record the refusal", func() bool {
		return strings.Contains(r.stderr.String(), fmt.Sprintf("refused a connection from uid %d", uid))
	})
	// The owner is still served.
	if out, _, code := r.client(t, "status", "--pid", r.pid()); code != 0 || !strings.Contains(out, "1 running") {
		t.Errorf("owner after the refusal: %d %q", code, out)
	}
}

// throwawayUser adds a system user for the test and removes it after;
// where useradd is missing it falls back to a uid no account uses, which
// the kernel treats the same way.
func throwawayUser(t *testing.T) (int, func()) {
	name := fmt.Sprintf("gltest%d", os.Getpid()%100000)
	if path, err := exec.LookPath("useradd"); err == nil {
		if out, err := exec.Command(path, "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err == nil {
			u, err := user.Lookup(name)
			if err == nil {
				uid, _ := strconv.Atoi(u.Uid)
				return uid, func() { _ = exec.Command("userdel", name).Run() }
			}
		} else {
			t.Logf("useradd %s: %v: %s; using a bare uid", name, err, out)
		}
	}
	for uid := 61000 + os.Getpid()%1000; ; uid++ {
		if _, err := user.LookupId(strconv.Itoa(uid)); err != nil {
			return uid, func() {}
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// What the simulated GPUs report reaches the live table: the GPU use an
// instance declares, and the warning for the one on another's GPU.
func TestControlStatusShowsGPUTelemetry(t *testing.T) {
	script := `case $GPULAUNCH_INSTANCE in 0) m=own;; *) m=other;; esac; exec "$0" gltest-helper gpu-use $m 70 2048 20s`
	r := startLiveRun(t, nil, "-n", "2", "--simulate", "dgx-h100", "--gpu-visibility", "all", "--monitor-interval", "100ms", "--", "sh", "-c", script, os.Args[0])
	r.waitRunning(t)
	var snap launcher.Snapshot
	waitFor(t, "instance 0 at 70% with 2 GiB, and instance 1 flagged", func() bool {
		out, _, code := r.client(t, "status", "--json", "--pid", r.pid())
		if code != 0 || json.Unmarshal([]byte(out), &snap) != nil {
			return false
		}
		validateAgainstSchema(t, "status", []byte(out))
		i0, i1 := snap.Instances[0], snap.Instances[1]
		return i0.GPUUtil == 70 && i0.GPUMem == 2<<30 && warned(i1.Warnings, "not its own")
	})
	// Instance 1 earns two true warnings — on another's GPU, and its own
	// GPU idle — in an order that depends on how fast the machine is.
	if !warned(snap.Instances[1].Warnings, "instance 1: process", "not its own") {
		t.Errorf("instance 1's warnings: %q", snap.Instances[1].Warnings)
	}
	out, _, _ := r.client(t, "status", "--pid", r.pid())
	if !regexpMatch(`(?m)^0\s+running\s+\d+\s+\S+\s+\S+\s+\S+\s+0\s+\d+\s+\S+\s+70\s+2\.0G\s+-$`, out) || !strings.Contains(out, "warning: instance 1: process") {
		t.Errorf("status table:\n%s", out)
	}
	if _, _, code := r.client(t, "signal", "--pid", r.pid(), "all", "KILL"); code != 0 {
		t.Error("signal all KILL failed")
	}
	if code := r.wait(t); code != 128+9 {
		t.Errorf("exit %d, want 137", code)
	}
}

// warned: one of the warnings holds every one of words.
func warned(warnings []string, words ...string) bool {
	for _, w := range warnings {
		all := true
		for _, word := range words {
			all = all && strings.Contains(w, word)
		}
		if all {
			return true
		}
	}
	return false
}
