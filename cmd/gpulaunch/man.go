package main

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/buildinfo"
	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
)

// `gpulaunch man`: the manual page in roff, rendered by pkg/clidoc (no
// tool is needed at install time). Its SYNOPSIS and EXAMPLES are
// `gpulaunch --help`'s, its COMMANDS every command's --help text and flags
// (clidoc.go); the sections no flag set holds — exit status, environment,
// files — are written below (the Page's text) from main.go's exit codes, README.md's
// "Signals" and the variables the code reads, and man_test.go holds them
// to the code.

const manUsage = `Usage: gpulaunch man

Prints gpulaunch's manual page (roff), generated from the commands, flags and
help texts of this binary. 'make install' installs it (docs/install.md); by
hand:
  gpulaunch man | man -l -
  gpulaunch man > ~/.local/share/man/man1/gpulaunch.1   # then: man gpulaunch`

func manFlagSet() *pflag.FlagSet { return pflag.NewFlagSet("man", pflag.ContinueOnError) }

// man is `gpulaunch man`.
func (a *app) man(args []string) error {
	fs := manFlagSet()
	if done, err := a.parseFlags(fs, args, manUsage); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fix := "run `gpulaunch man`: the page has every command"
		if slices.Contains(commands, fs.Arg(0)) {
			fix += fmt.Sprintf(" (or `gpulaunch help %s` for its help)", fs.Arg(0))
		}
		return usagef("man takes no arguments (got %q): %s", strings.Join(fs.Args(), " "), fix)
	}
	b := buildinfo.Read(version, commit, buildDate, debug.ReadBuildInfo)
	date, _, _ := strings.Cut(b.Date, "T") // the commit's day: a rebuild writes the same page
	page := clidoc.Page{Commands: cliCommands(), Version: b.Version, Date: date, TopUsage: topUsage(),
		Description: manDescription, ExitStatus: manExitStatus, Environment: manEnvironment, Files: manFiles, SeeAlso: manSeeAlso}
	return writeDoc(a.stdout, "the man page", clidoc.ManPage(page))
}

const manDescription = `gpulaunch runs inside a Slurm allocation (or on any Linux GPU node: NVIDIA, AMD
or Intel), starts N copies of a program each on its own GPU(s), NUMA-local CPUs
and memory policy, and supervises them until every one has exited. It tells
what this process was given (GPUs by UUID and PCI address, CPUs, NUMA nodes,
memory limit, Slurm and MPI context) and where each of N instances should go.

Without a command, gpulaunch runs (gpulaunch -n 4 -- COMMAND is gpulaunch run
-n 4 -- COMMAND). Under a launcher that started several ranks on the node
(srun -n, mpirun) and without -n, it binds its rank and execs COMMAND (exec).
A task queue (--each-line, --tasks) runs many commands on the run's slots as
GNU parallel does.

Bad input gets one line "gpulaunch: error: ..." on stderr naming the flag or
value, the reason and the fix, exit status 2, and nothing is started. The
documents in share/doc/gpulaunch beside the installed binary (README.md,
docs/*.md) have every rule.`

// manExitStatus is main.go's exit codes, srun's rule of a run
// (launcher.Result.ExitCode) and GNU parallel's of a queue
// (taskqueue.Queue.ExitCode), as README.md's "Signals" states them.
const manExitStatus = `A run of instances exits as srun does:
  0        every instance succeeded
  N        the highest exit code of an instance, when none was killed by a signal
  128+S    the highest signal S an instance was killed by; an instance gpulaunch
           ended (-W, --timeout, --mem-per-task) counts as killed by TERM (143)
  128+S    gpulaunch itself was stopped by signal S, whatever its instances did
           then, or before they started, while it waited for its MPS daemons
           (Ctrl-C: 130; scancel's TERM: 143)

A task queue (--each-line, --tasks) exits as GNU parallel does: the number of
failed tasks up to 101 (0 when all succeeded), or what --halt fixed; 255 when a
signal left tasks unfinished or a node of a queue over several nodes was lost.

gpulaunch's own statuses:
  1        the run could not be done: a failure of the machine, not of the input
           (scale: some size gave no figure of merit)
  2        bad invocation or input: one line "gpulaunch: error: ..." on stderr,
           nothing was started
  126      COMMAND cannot be executed (not executable, a directory), nothing started
  127      COMMAND was not found, nothing was started`

// manEnvironment is every GPULAUNCH_* variable the code reads or sets
// (TestManPageNamesEnvironment finds them in the source).
const manEnvironment = `Read by gpulaunch:
  GPULAUNCH_NODE_FILE            the node file when --node-file is not given
  GPULAUNCH_GPU_VENDOR           the vendor when --gpu-vendor is not given
  GPULAUNCH_MONITOR_INTERVAL     the site's default for --monitor-interval (run, scale)
  GPULAUNCH_METRICS_FILE         the site's default for --metrics-file (run; %j %s %N %n)
  GPULAUNCH_METRICS_LISTEN       the site's default for --metrics-listen (run)
  GPULAUNCH_REPORT               the site's default for --report (run; %j %s %N %n)
                                 A flag given wins; empty is unset; a bad value is
                                 refused; a file or port that cannot be had is a
                                 warning and the run goes on without it. info lists
                                 them (docs/install.md, "Site defaults")
  GPULAUNCH_RUN_ID               names a task queue over several nodes (the same on each)
  GPULAUNCH_KEY_DIR              the directory of a queue's key files (default ~/.gpulaunch)
  GPULAUNCH_NODE_GROUP           a queue over many nodes: nodes per relay's group
                                 (default: none up to 256 others, else their square root;
                                 0: none); node 0's is every node's
  GPULAUNCH_JOIN_WAIT            how long a node waits for its queue's holder (a duration;
                                 default 2m)
  GPULAUNCH_MPS_WAIT             how long an MPS daemon has to come up (a duration;
                                 default 120s)
  GPULAUNCH_NVML_WAIT            how long NVML has to start before the GPUs are read
                                 from /proc/driver/nvidia and sysfs (a duration;
                                 default 10s)
  GPULAUNCH_SIMULATED_USAGE_DIR  where apps on a simulated node declare their GPU use
  NO_COLOR, TERM                 no colour with NO_COLOR set or TERM=dumb
  XDG_RUNTIME_DIR, TMPDIR        where the control socket goes
  SLURM_*, OMPI_*, PMI_*, PMIX_*, MPI_LOCALRANKID
                                 the job, step and local rank, as srun and MPI set them

Set for every instance (with CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or
ZE_AFFINITY_MASK, RANK, WORLD_SIZE, LOCAL_RANK and torchrun's others):
  GPULAUNCH_INSTANCE             the instance's number (%t)
  GPULAUNCH_NINSTANCES           how many instances run on this node
  GPULAUNCH_GPUS                 the instance's GPUs
  GPULAUNCH_CPUS                 the instance's CPUs, in the kernel's list format
  GPULAUNCH_TASK                 a task queue's task number ({#})
  GPULAUNCH_SCALE_GPUS           scale: the size being run
  GPULAUNCH_SCALE_WEAK           scale: 1 with --weak, else 0`

const manFiles = `$XDG_RUNTIME_DIR/gpulaunch/, else $TMPDIR/gpulaunch-UID/ or /tmp/gpulaunch-UID/
    the control sockets of the running gpulaunch processes (0700 directory,
    0600 sockets), for status, top, logs and signal
~/.gpulaunch/ (or $GPULAUNCH_KEY_DIR)
    a task queue over several nodes: its key files (0600)
share/doc/gpulaunch/ beside the installed binary
    README.md, docs/*.md and the JSON schemas of --json, --report and
    scale --json`

const manSeeAlso = `srun(1), salloc(1), sbatch(1), parallel(1), mpirun(1), tmux(1), numactl(8),
nvidia-smi(1); torchrun (PyTorch's elastic launcher)`
