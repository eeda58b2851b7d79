// Command gpulaunch runs N pinned copies of a program inside a Slurm
// allocation (or any Linux node with GPUs), each on its own GPU(s), a
// NUMA-local CPU set and memory policy, and tells what the allocation holds.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/buildinfo"
	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
	"github.com/gpulaunch/gpulaunch/pkg/discover"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/nvml"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// version is set at build time with -ldflags "-X main.version=…"; without
// it, buildinfo.Version reads the toolchain's build information.
var version = "dev"

// Exit codes of gpulaunch itself (instances' codes are passed on as srun does).
const (
	exitOK    = 0
	exitError = 1 // the run could not be done (a failure of the machine, not of the input)
	exitUsage = 2 // bad invocation or input: nothing was started
)

func main() {
	if process.IsKeeper() { // a helper's keeper (process.StartKept): nothing else
		os.Exit(process.Keep())
	}
	os.Exit(newApp().main(os.Args[1:]))
}

// newApp is gpulaunch with the real world.
func newApp() *app {
	a := &app{
		stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin,
		env:  sched.EnvFromList(os.Environ()),
		root: os.DirFS("/"),
		nvml: nvml.Library,
		probeDevice: func(path string) error {
			f, err := os.Open(path)
			if err == nil {
				f.Close()
			}
			return err
		},
	}
	a.hostname, _ = os.Hostname()
	a.pid, a.ppid, a.uid = os.Getpid(), os.Getppid(), os.Getuid()
	a.tmpRoot = "/tmp"
	return a
}

// app is one invocation with its world injected.
type app struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	env            sched.Env
	root           fs.FS
	nvml           gpu.NVML // NVIDIA's library (pkg/nvml); nil without cgo
	hostname       string
	probeDevice    func(path string) error
	pid, ppid, uid int
	// tmpRoot is the system's temp directory, where control sockets go
	// last ("/tmp"; control.Dirs).
	tmpRoot string
}

// usageError is bad input: one line on stderr, exit 2, nothing started.
// It wraps its cause, so errors.Is and errors.As still find what went
// wrong (a *fs.PathError, a commandError); its text is the cause's.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func (e usageError) Unwrap() error { return e.err }

// usagef is a usageError with fmt.Errorf's text (a %w verb wraps its cause).
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func (a *app) main(args []string) int { return a.exit(a.dispatch(args)) }

// exit is the status for what dispatch returned, and writes the error's
// line. Errors are found through wrapping (errors.As): an exitCode is the
// instances' status, with no line; a usageError is exit 2, even when it
// wraps a commandError; a commandError is its own 126/127; any other 1.
func (a *app) exit(err error) int {
	if err == nil {
		return exitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	msg := strings.TrimSpace(err.Error())
	fmt.Fprintf(a.stderr, "gpulaunch: error: %s\n", strings.ReplaceAll(msg, "\n", " "))
	var command commandError
	switch {
	case errors.As(err, new(usageError)):
		return exitUsage
	case errors.As(err, &command):
		return command.code
	}
	return exitError
}

// exitCode carries an exit status that is not an error (instances' codes).
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit %d", int(c)) }

func (a *app) dispatch(args []string) error {
	if len(args) == 0 {
		io.WriteString(a.stderr, topUsage())
		return usagef("no command: run `gpulaunch info`, `gpulaunch plan -n N` or `gpulaunch --help`")
	}
	switch args[0] {
	case "run":
		return a.run(args[1:])
	case "exec":
		return a.exec(args[1:])
	case "info":
		return a.info(args[1:])
	case "plan":
		return a.plan(args[1:])
	case "status":
		return a.status(args[1:])
	case "top":
		return a.top(args[1:])
	case "logs":
		return a.logs(args[1:])
	case "signal":
		return a.signal(args[1:])
	case "report":
		return a.report(args[1:])
	case "scale":
		return a.scale(args[1:])
	case "completion":
		return a.completion(args[1:])
	case "man":
		return a.man(args[1:])
	case "version", "--version":
		if len(args) == 2 && (args[1] == "-h" || args[1] == "--help") {
			io.WriteString(a.stdout, versionUsage)
			return nil
		}
		if len(args) > 1 {
			what := "arguments"
			if strings.HasPrefix(args[1], "-") {
				what = "flags"
			}
			return usagef("%s takes no %s (got %q): run `gpulaunch version`", args[0], what, args[1])
		}
		return writeDoc(a.stdout, "the version", buildinfo.Read(version, commit, buildDate, debug.ReadBuildInfo).Text())
	case "help", "-h", "--help":
		return a.help(args[1:])
	}
	if strings.HasPrefix(args[0], "-") {
		return a.run(args) // gpulaunch -n 4 -- app
	}
	if near := clidoc.Closest(args[0], commands); near != "" {
		return usagef("unknown command %q: did you mean `gpulaunch %s`? (to run a program named %s use `gpulaunch -n N -- %s`)", args[0], near, args[0], args[0])
	}
	return usagef("unknown command %q: to run a program use `gpulaunch -n N -- %s`; `gpulaunch --help` lists the commands", args[0], args[0])
}

// discover opens the backend and reconciles the allocation; need is what
// the command needs of NVIDIA's GPUs (discover.Need).
func (a *app) discover(c commonFlags, need gpu.Need) (binding.Allocation, error) {
	alloc, err := discover.Allocation(a.discoverRequest(c, need))
	return alloc, discoverError(err)
}

// discoverToRun discovers the allocation for runs that will start
// (running; discover.ForRun). done closes the backend and removes the
// directory of a simulated node's GPU use.
func (a *app) discoverToRun(c commonFlags, running bool, need gpu.Need) (alloc binding.Allocation, src gpu.Source, usageDir string, done func(), err error) {
	f, err := discover.ForRun(a.discoverRequest(c, need), running)
	return f.Alloc, f.Source, f.UsageDir, f.Done, discoverError(err)
}

// discoverRequest is the node the flags name, as this process sees it;
// need: what the caller needs of NVIDIA's GPUs (discover.Need), which
// decides whether NVML is loaded.
func (a *app) discoverRequest(c commonFlags, need gpu.Need) discover.Request {
	return discover.Request{Simulate: c.simulate, NodeFile: c.nodeFile, Vendor: c.gpuVendor, Env: a.env, Hostname: a.hostname,
		Machine: gpu.Options{Root: a.root, ProbeDevice: a.probeDevice, NVML: a.nvml}, Need: need}
}

// discoverError is discover's bad input as a usage error (exit 2).
func discoverError(err error) error {
	var bad discover.InputError
	if errors.As(err, &bad) {
		return usageError{bad.Err}
	}
	return err
}

// topUsage is gpulaunch --help.
func topUsage() string {
	return strings.Replace(topUsageText, "SIMULATED", strings.Join(gpu.SimulatedNames(), ", "), 1)
}

const topUsageText = `gpulaunch — run N pinned copies of a program on the GPUs of a Slurm allocation

Usage:
  gpulaunch [run] -n N [-G G] [-c C] [-l] [-K] [flags] -- COMMAND [ARGS…]
  gpulaunch exec [-G G] [-c C] [flags] -- COMMAND [ARGS…]
  gpulaunch info [--json] [--simulate NODE|FILE]
  gpulaunch plan -n N [-G G] [-c C] [--mem-bind preferred|bind|none] [--json] [--simulate NODE|FILE]
  gpulaunch status [--json] [--pid PID | --socket PATH]
  gpulaunch top [--interval D] [--pid PID | --socket PATH]
  gpulaunch logs [-f] INSTANCE
  gpulaunch signal INSTANCE|all SIGNAL
  gpulaunch scale -G 1,2,4,8 | -n 1,2,4,8 [--metric REGEX] [flags] -- COMMAND [ARGS…]
  gpulaunch report FILE --svg OUT | --html OUT
  gpulaunch completion bash|zsh|fish
  gpulaunch man
  gpulaunch version

Commands:
  run      (the default) start N instances of COMMAND, each pinned to its slot,
           and supervise them until every one exits; 'gpulaunch run --help'
  exec     rank-wrapper mode under srun -n / mpirun: bind this rank to its
           slot of the node and exec COMMAND (automatic without -n when a
           launcher started several ranks here); 'gpulaunch exec --help'
  info     what this process was given: GPUs (by UUID and PCI address), CPUs,
           NUMA nodes, memory limit, Slurm and MPI context, and warnings
  plan     where each of N instances would go: its GPU(s), CPU set and memory
           policy, nothing started
  status   the live instance table of the running gpulaunch of this job on
           this node (from another shell or tmux pane); top refreshes it
  logs     an instance's recent output, -f to follow it
  signal   send a signal to one instance or all
  scale    does it scale? the same command at several GPU counts: speedup,
           efficiency, GPU use, a verdict, a plot; 'gpulaunch scale --help'
  report   draw a run's --report FILE: GPU use of each instance over time
  completion
           print the completion script of bash, zsh or fish
  man      print the manual page (roff): 'gpulaunch man | man -l -'

Examples:
  gpulaunch -n 4 -l -- python train.py --shard %t
  srun -n 4 gpulaunch -- ./app                # rank mode: each rank its own GPU
  mpirun -np 8 gpulaunch -- ./app
  gpulaunch info                              # in salloc, srun --pty or a tmux pane
  gpulaunch plan -n 4                         # one GPU per instance, NUMA-local CPUs
  gpulaunch plan -n 4 -G 2 --simulate dgx-h100 --json
  gpulaunch plan -n 8 --simulate my-node.json # a node described in JSON (docs/topology.md)
  gpulaunch -n 4 --tmux -- ./app              # in tmux/smux: a pane per instance + top
  gpulaunch logs -f 2                         # from another pane: follow instance 2
  gpulaunch signal all USR1                   # e.g. ask every instance to checkpoint

Simulated nodes: SIMULATED.
Run 'gpulaunch COMMAND --help' (or 'gpulaunch help COMMAND') for a command's flags.
`
