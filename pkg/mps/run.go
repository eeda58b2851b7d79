package mps

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Settings are a run's MPS flags: --mps (On), --mps-threads (Threads; 0:
// not given) and --mps-mem-limit (MemLimit; "": none).
type Settings struct {
	On       bool
	Threads  int
	MemLimit string
}

// Check refuses settings that mean nothing or that MPS would not take,
// with the fix; given says whether the flag of that name was given. The
// rules, in order:
//
//	K1. --mps-threads and --mps-mem-limit mean something with --mps only.
//	K2. --mps-threads, given, is 1..100 (CheckThreads).
//	K3. --mps-mem-limit, set, is in MPS's form (CheckMemLimit).
func (s Settings) Check(given func(name string) bool) error {
	for _, name := range []string{"mps-threads", "mps-mem-limit"} {
		if given(name) && !s.On {
			return fmt.Errorf("--%s only means something with --mps: add --mps (NVIDIA MPS), or drop --%s", name, name)
		}
	}
	if given("mps-threads") {
		if err := CheckThreads(s.Threads); err != nil {
			return err
		}
	}
	if s.MemLimit != "" {
		return CheckMemLimit(s.MemLimit)
	}
	return nil
}

// DefaultWait is how long a daemon has to come up, unless
// GPULAUNCH_MPS_WAIT says: CSCS's wrapper waits 120 s for the pid file on
// a loaded node.
const DefaultWait = 120 * time.Second

// WaitEnv names the variable that sets how long a daemon has to come up.
const WaitEnv = "GPULAUNCH_MPS_WAIT"

// WaitOf is rule R2 of Prepare: how long a daemon has to come up is
// GPULAUNCH_MPS_WAIT's duration (v), a positive one, or DefaultWait when
// v is "".
func WaitOf(v string) (time.Duration, error) {
	if v == "" {
		return DefaultWait, nil
	}
	wait, err := time.ParseDuration(v)
	if err != nil || wait <= 0 {
		return 0, fmt.Errorf("%s=%s: how long an MPS daemon has to come up is a duration, e.g. 300s", WaitEnv, v)
	}
	return wait, nil
}

// ClientThreads is the active thread percentage each of a GPU's n
// clients is told; 0: none is told. The rules, in order:
//
//	T1. --mps-threads (given) is each client's share, under any MPS.
//	T2. Under the job's own MPS (jobsMPS) without --mps-threads, none:
//	    the job's MPS has its own shares (Slurm's gres/mps), which stand.
//	T3. Otherwise an even share, rounded up (Threads).
func ClientThreads(given, n int, jobsMPS bool) int {
	if jobsMPS && given == 0 {
		return 0
	}
	return Threads(given, n)
}

// pipePathLimit is the longest path a daemon's control pipe may have: a
// Unix socket's path has 108 bytes at most (sun_path, its NUL included),
// and the run's directory name has more digits than the estimate below.
const pipePathLimit = 100

// CheckPipeParent is rule R6 of Prepare: the pipe directories of a run of
// daemons daemons go in parent, as parent/mps-XXXXXXXXXX/K/pipe/control,
// and that path must fit a Unix socket's (pipePathLimit).
func CheckPipeParent(parent string, daemons int) error {
	if n := len(filepath.Join(parent, "mps-0123456789", strconv.Itoa(daemons), "pipe", "control")); n > pipePathLimit {
		return fmt.Errorf("--mps: the MPS pipe directories would go in %s, whose paths (%d bytes) are too long for MPS's Unix sockets: set TMPDIR (or XDG_RUNTIME_DIR) to a shorter directory", parent, n)
	}
	return nil
}

// runDirPrefix is the start of the name of a run's directory of daemons:
// it names the gpulaunch whose run it is (mps-PID-…), so that a later
// gpulaunch can tell a directory whose gpulaunch was SIGKILLed.
func runDirPrefix(pid int) string { return "mps-" + strconv.Itoa(pid) + "-" }

// staleRunDir says whether the directory name (its base name) is what a
// gpulaunch that no longer runs left: its daemons died with it (their
// keepers ended them), but nothing removed their directory. The rules:
//
//	S1. A run's directory is mps-PID-…; a name without a pid there is
//	    no run's, and is left alone.
//	S2. This gpulaunch's own (self) is not stale.
//	S3. One whose gpulaunch is gone (gone(PID)) is stale.
func staleRunDir(name string, self int, gone func(pid int) bool) bool {
	parts := strings.Split(name, "-")
	if len(parts) < 3 || parts[0] != "mps" {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid == self {
		return false
	}
	return gone(pid)
}

// Node is what a node offers a run's MPS, for Prepare and Describe.
type Node struct {
	// Env is gpulaunch's environment: GPULAUNCH_MPS_WAIT, CUDA_MPS_*.
	Env map[string]string
	// BaseEnv is the same as a list: what the control program is started
	// with.
	BaseEnv []string
	// Control is nvidia-cuda-mps-control's path; "" when it is not on
	// PATH.
	Control string
	// Parent is the private directory the run's own directory of daemons
	// is made in, and UID its owner's.
	Parent string
	UID    int
	// CUDAVersion is the driver's (gpu.Node.CUDAVersion), for the client
	// limit (ClientLimit); "" when unknown.
	CUDAVersion string
}

// Host is what the client limit reads of the node (ClientLimit).
func (n Node) Host() Host { return Host{CUDAVersion: n.CUDAVersion, Env: n.Env} }
