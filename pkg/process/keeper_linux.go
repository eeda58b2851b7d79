package process

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A helper that gpulaunch runs beside the instances for the run's sake —
// an MPS control daemon — must end with the run however the run ends,
// SIGKILL of gpulaunch included. A parent-death signal alone does not do
// it: it reaches only the process it is set on (fork clears it in that
// process's children, prctl(2)), so a daemon's own children (MPS's
// nvidia-cuda-mps-server, forked by the control daemon) outlive it; and
// what the daemon does with the signal is its own business (NVIDIA
// documents `quit`, nothing of TERM). The process group does not do it
// either: after a SIGKILL nobody is left to signal it, and a child that
// moves to a session of its own leaves it.
//
// So each helper runs under a keeper: gpulaunch's own executable, started
// as KeeperName, a process that outlives gpulaunch for exactly as long as
// it takes to end what is below it.

// KeeperName is a keeper's argv[0]: the program that runs gpulaunch (its
// main, and a test binary's TestMain) starts with IsKeeper.
const KeeperName = "gpulaunch-keeper"

// IsKeeper says whether this process was started as a keeper (StartKept):
// it must then run Keep and nothing else.
func IsKeeper() bool { return len(os.Args) > 1 && os.Args[0] == KeeperName }

// Keep is a keeper's main: it runs the helper its arguments name (the
// program's path, then its argv) and returns the keeper's exit status.
// It reports on stdout, a line each: "pid N" once the helper runs (or
// "error WHY" and status 1), "exit S" when the helper exits (S: its wait
// status). The rules:
//
//	K1. The keeper is a child subreaper: whatever the helper starts and
//	    leaves behind becomes the keeper's child, whatever group or
//	    session it moved to.
//	K2. The helper leads a process group of its own, with KILL as its
//	    parent-death signal: a keeper that is itself killed takes it
//	    along. (The keeper's thread that forks it lives as long as the
//	    keeper: the signal is sent when that thread ends.)
//	K3. The end comes when stdin — the lifeline, whose other end only
//	    gpulaunch holds — is at its end: gpulaunch closed it, or died,
//	    SIGKILL included (the kernel closes a dead process's files). Or
//	    at INT, TERM or HUP to the keeper.
//	K4. At the end every process below the keeper is KILLed, again as
//	    each exits (K1 makes the ones that were below it the keeper's),
//	    until none is left. gpulaunch asks a helper to quit before it
//	    ends the lifeline; the keeper is the end that cannot fail.
//	K5. A helper that exits by itself is the end too: what it left is
//	    ended (K4), and the keeper exits.
func Keep() int {
	runtime.LockOSThread() // K2: the helper's parent-death signal follows this thread
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	args := os.Args[1:]
	if len(args) < 2 {
		fmt.Println("error: a keeper needs a program and its argv")
		return 1
	}
	sigs := make(chan os.Signal, 4)
	// PIPE too: a report to a gpulaunch that is gone must not kill the
	// keeper before it has ended the helper
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	helper, err := syscall.ForkExec(args[0], args[1:], &syscall.ProcAttr{
		Env: os.Environ(), Files: []uintptr{devnull.Fd(), os.Stderr.Fd(), os.Stderr.Fd()},
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	devnull.Close()
	if err != nil {
		fmt.Printf("error: %v\n", err)
		return 1
	}
	fmt.Printf("pid %d\n", helper)
	lifeline := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(lifeline) }()
	reaped := make(chan reapedChild)
	go reapChildren(reaped)
	ending := false
	end := func() {
		ending = true
		_ = syscall.Kill(-helper, syscall.SIGKILL)
		killBelow()
	}
	for {
		select {
		case <-lifeline: // K3
			lifeline = nil
			end()
		case s := <-sigs:
			if s != syscall.SIGPIPE { // K3
				end()
			}
		case r, ok := <-reaped:
			switch {
			case !ok: // none left below
				return 0
			case r.pid == helper: // K5
				fmt.Printf("exit %d\n", r.status)
				end()
			case ending: // K4: its children are the keeper's now
				killBelow()
			}
		}
	}
}

// reapedChild is one child's end, as wait4 gave it.
type reapedChild struct {
	pid    int
	status syscall.WaitStatus
}

// reapChildren reaps every child of the keeper as it exits, orphans
// included (K1), and closes out once none is left.
func reapChildren(out chan<- reapedChild) {
	defer close(out)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return // ECHILD: none left
		}
		out <- reapedChild{pid, ws}
	}
}

// killBelow KILLs every living process below the keeper.
func killBelow() {
	t := ScanProcs()
	for _, pid := range t.Tree(os.Getpid()).Descendants(&t) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Kept is a helper running under its keeper (StartKept).
type Kept struct {
	// PID is the helper's; it leads its own process group.
	PID int
	// Keeper is the keeper's pid: the helper and all it starts are below
	// it, and none outlives it.
	Keeper   int
	lifeline *os.File
	exited   chan struct{}
	gone     chan struct{}
	mu       sync.Mutex
	status   syscall.WaitStatus
	known    bool // status is the helper's
}

// StartKept starts the program at path with argv and env under a keeper
// (Keep): the helper's stdout and stderr go to out, its stdin is
// /dev/null, its working directory is dir. The keeper leads a process
// group of its own, so that a Ctrl-C at the terminal, which reaches
// gpulaunch's, does not end the helper before gpulaunch has stopped what
// uses it.
func StartKept(path string, argv, env []string, dir string, out *os.File) (*Kept, error) {
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return nil, err
	}
	// /proc/self/exe, not the path gpulaunch was started by: that one may
	// have been replaced since (a new build, an upgrade)
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: append([]string{KeeperName, path}, argv...), Env: env, Dir: dir,
		Stdin: lifeR, Stdout: repW, Stderr: out, SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	err = cmd.Start()
	lifeR.Close()
	repW.Close()
	if err != nil {
		lifeW.Close()
		repR.Close()
		return nil, err
	}
	k := &Kept{Keeper: cmd.Process.Pid, lifeline: lifeW, exited: make(chan struct{}), gone: make(chan struct{})}
	reports := bufio.NewReader(repR)
	first, _ := reports.ReadString('\n')
	if pid, ok := strings.CutPrefix(strings.TrimSpace(first), "pid "); ok {
		k.PID, _ = strconv.Atoi(pid)
	}
	if k.PID <= 0 {
		lifeW.Close()
		repR.Close()
		_ = cmd.Wait()
		why := strings.TrimPrefix(strings.TrimSpace(first), "error: ")
		if why == "" {
			why = "its keeper ended before it started"
		}
		return nil, errors.New(why)
	}
	go k.follow(reports, repR, cmd)
	return k, nil
}

// follow reads the keeper's reports until it has exited.
func (k *Kept) follow(reports *bufio.Reader, r *os.File, cmd *exec.Cmd) {
	for {
		line, err := reports.ReadString('\n')
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "exit "); ok {
			n, _ := strconv.Atoi(s)
			k.mu.Lock()
			k.status, k.known = syscall.WaitStatus(n), true
			k.mu.Unlock()
			close(k.exited)
		}
		if err != nil {
			break
		}
	}
	r.Close()
	k.mu.Lock()
	known := k.known
	k.mu.Unlock()
	if !known {
		close(k.exited)
	}
	// an error too when the run's reaper took the keeper's status first
	_ = cmd.Wait()
	close(k.gone)
}

// Exited is closed once the helper has exited.
func (k *Kept) Exited() <-chan struct{} { return k.exited }

// Status is the helper's wait status, once Exited is closed; false when
// the keeper ended without saying (it was killed).
func (k *Kept) Status() (syscall.WaitStatus, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.status, k.known
}

// End ends the helper and everything below it (the lifeline ends: K3,
// K4) and waits up to limit for the keeper to be gone; false when it is
// not (a process that KILL cannot end, stuck in the kernel).
func (k *Kept) End(limit time.Duration) bool {
	k.lifeline.Close()
	select {
	case <-k.gone:
		return true
	case <-time.After(limit):
		return false
	}
}
