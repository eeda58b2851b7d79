//go:build linux

package launcher

import (
	"io"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// Instance is one copy of the app, ready to start.
type Instance struct {
	Index int
	// Rank is the instance's RANK: Index on one node, node × N + Index
	// across nodes.
	Rank    int
	Path    string   // resolved executable
	Args    []string // argv, argv[0] as the user gave it
	Env     []string
	Binding process.Binding
	// Stdout and Stderr are file paths; "" writes to gpulaunch's own.
	Stdout, Stderr string
	// GPUs and CPUs describe the slot in logs and the summary.
	GPUs, CPUs string
	// GPUUUIDs are the instance's GPUs, for telemetry.
	GPUUUIDs []string
}

// Policy is how instances are supervised: the limits and the answers to
// failure a user chose. Its rules are pure methods (policy.go).
type Policy struct {
	// KillOnBadExit ends the others when one fails (srun -K).
	KillOnBadExit bool
	// WaitAfterFirst ends the others this long after the first exit (srun -W); 0: off.
	WaitAfterFirst time.Duration
	// Restarts is how often a failing instance is started again.
	Restarts int
	// Timeout ends an instance that runs longer; 0: none.
	Timeout time.Duration
	// KillWait is the grace between TERM and KILL.
	KillWait time.Duration
	// MemPerTask ends an instance whose process tree's RSS exceeds it; 0: none.
	MemPerTask uint64
	// Monitor is the telemetry interval (CPU time, RSS, GPU use, launch
	// verification); 0 turns telemetry off.
	Monitor time.Duration
	// DDP makes the instances one distributed job (--ddp, torchrun's
	// worker group): a failure ends them all, and Restarts restarts them
	// all (groupMode, group.go).
	DDP bool
	// ErrorDir, under DDP, is the run's private directory of the ranks'
	// error files (instance.ErrorFile): the first failed rank's
	// exception is the group's root cause (Result.RootCause). "": the
	// ranks are given none.
	ErrorDir string
}

// defaultKillWait is the grace between TERM and KILL when the policy
// names none: below Slurm's default KillWait (30 s), so that gpulaunch's
// own KILL comes before slurmstepd's.
const defaultKillWait = 10 * time.Second

// Spec is a whole run.
type Spec struct {
	Instances []Instance
	Policy    Policy
	// Label prefixes every output line with "<instance>: ", or with
	// "<LabelHost>:<instance>: " when LabelHost is set (several nodes).
	Label          bool
	LabelHost      string
	Stdout, Stderr io.Writer
	// OpenMode is how the instances' and tasks' output files are opened:
	// truncated the first time (the default), or appended to.
	OpenMode process.OpenMode
	Log      *zap.Logger
	// GPUs samples GPU use; nil: none.
	GPUs telemetry.GPUUsage
	// WatchGPUs are every GPU of the allocation (UUIDs): launch
	// verification looks for instances on GPUs that are not theirs among
	// them too. Instances' own GPUs are always watched.
	WatchGPUs []string
	// Board receives the live state for the control socket; nil: Run
	// keeps one of its own.
	Board *Board
	// Work is what the slots run besides their instances: a queue's
	// tasks (QueueTasks), or those another node's queue sends (FeedTasks);
	// nil: each slot runs its instance.
	Work Work
	// Link carries a queue's messages to and from the other nodes; nil
	// on one node.
	Link taskqueue.NodeLink
	// Spare are processes gpulaunch runs for the run's sake and stops
	// after it (--mps's control daemons): the end of the run, which ends
	// whatever the instances left behind, leaves them and their children
	// alone.
	Spare []int
	// Fates are the GPUs whose instances share a fate under MPS (one
	// daemon of the run's per shared GPU, with its log directory): a
	// fault of one client fails every client of its GPU's server
	// (fateMode); nil: none.
	Fates []mps.Fate
	// Signals are gpulaunch's signals, from a Waiting's hand-over: those
	// that came while gpulaunch waited before the run, and were not read,
	// are the run's first. Nil: Run catches its own from its start.
	Signals chan os.Signal
}
