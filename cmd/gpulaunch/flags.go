package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/control"
	"github.com/gpulaunch/gpulaunch/pkg/flagvalue"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/logging"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/scaling"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// The flag, value and logger helpers every command shares.

// commonFlags are shared by every command that looks at an allocation.
type commonFlags struct {
	simulate  string
	nodeFile  string
	gpuVendor string
	json      bool
	logFormat string
	verbose   bool
}

func (c *commonFlags) register(fs *pflag.FlagSet) {
	c.registerNode(fs)
	fs.BoolVar(&c.json, "json", false, "print JSON instead of a table")
	c.registerLog(fs)
}

// registerNode registers the flags that say which node's GPUs to use.
func (c *commonFlags) registerNode(fs *pflag.FlagSet) {
	fs.StringVar(&c.simulate, "simulate", "", "use a simulated node ("+strings.Join(gpu.SimulatedNames(), ", ")+") or a topology file instead of this machine")
	fs.StringVar(&c.nodeFile, "node-file", "", "describe this machine's GPUs in a JSON file when the drivers cannot show them (docs/topology.md; default $GPULAUNCH_NODE_FILE)")
	fs.StringVar(&c.gpuVendor, "gpu-vendor", "", "use this vendor's GPUs only, on a node with several: nvidia, amd or intel (default $GPULAUNCH_GPU_VENDOR)")
}

// registerLog registers the logging flags.
func (c *commonFlags) registerLog(fs *pflag.FlagSet) {
	fs.StringVar(&c.logFormat, "log-format", "console", "log format on stderr: console or json")
	fs.BoolVarP(&c.verbose, "verbose", "v", false, "log what gpulaunch discovers and decides")
}

// parseFlags parses args into fs: its errors become usage errors, a flag
// given an empty value is one (flagvalue.Empty), and --help prints usage to
// stdout (then done is true).
func (a *app) parseFlags(fs *pflag.FlagSet, args []string, usage string) (bool, error) {
	fs.SetOutput(io.Discard)
	help := helpFlag(fs)
	flagvalue.Strict(fs, countRanges)
	if err := fs.Parse(args); err != nil {
		return false, usagef("%s (see `gpulaunch %s --help`)", flagvalue.Explain(err, fs, countRanges), fs.Name())
	}
	if *help {
		fmt.Fprintf(a.stdout, "%s\nFlags:\n%s", usage, fs.FlagUsages())
		return true, nil
	}
	return false, asUsage(flagvalue.Empty(fs, ownEmptyCheck))
}

// countRanges are the values of every whole-number flag, by name, each
// from the package whose rule it is (flagvalue.Strict applies them). A value above hi is refused as the
// flag is parsed, before anything is allocated by it: -n 99999999999
// made a plan of 10^11 slots, and the runtime died out of memory. The
// lower ends stay the commands' own checks, which say what the smallest
// values mean (-c 0, --tail 0); here they only word the range.
// TestEveryCountIsBounded holds every int flag of every command to a row.
// A list, not a map: a map is built at init, at every start of gpulaunch
// (TestStartPathInits); this is laid out by the linker.
var countRanges = flagvalue.Ranges{
	{Name: "ntasks", Lo: 1, Hi: binding.MaxInstances, Of: "instances on one node are"},
	{Name: "gpus-per-task", Lo: 0, Hi: binding.MaxGPUsPerInstance, Of: "GPUs per instance are"},
	{Name: "cpus-per-task", Lo: 1, Hi: binding.MaxCPUsPerInstance, Of: "CPUs per instance are"},
	{Name: "restarts", Lo: 0, Hi: launcher.MaxRestarts, Of: "restarts of an instance are"},
	{Name: "retries", Lo: 1, Hi: taskqueue.MaxTries, Of: "tries of a task are"},
	{Name: "repeat", Lo: 1, Hi: scaling.MaxRepeat, Of: "rounds of a study are"},
	{Name: "master-port", Lo: 1, Hi: 65535, Of: "a port is"},
	{Name: "mps-threads", Lo: 1, Hi: 100, Of: "an instance's active thread percentage is"},
	{Name: "pid", Lo: 1, Hi: control.MaxPID, Of: "a pid is"},
	// as tail -n: a count beyond the lines kept shows all that is kept
	{Name: "tail", Lo: 0, Hi: math.MaxInt64, Of: "lines are"},
}

// countRangeOf is the range of the whole-number flag name.
func countRangeOf(name string) (flagvalue.Range, bool) { return countRanges.Of(name) }

// ownEmptyCheck are the word flags whose own checks refuse "" with a fix
// of their own (a list of the values, what to give): the choices and
// --master-addr, scale's --metric.
var ownEmptyCheck = map[string]bool{"log-format": true, "gpu-ids": true,
	"gpu-visibility": true, "mem-bind": true, "ranks": true, "master-addr": true, "metric": true}

func (c commonFlags) logger(w io.Writer) (*zap.Logger, error) { return c.loggerAt(w, zap.WarnLevel) }

// loggerAt builds the logger (logging.New); level is the default
// without -v.
func (c commonFlags) loggerAt(w io.Writer, level zapcore.Level) (*zap.Logger, error) {
	log, err := logging.New(w, c.logFormat, c.verbose, level)
	return log, asUsage(err)
}

// parseDuration reads a duration (flagvalue.Duration), refusing a bad
// one as bad input.
func parseDuration(flag, s string) (time.Duration, error) {
	d, err := flagvalue.Duration(flag, s)
	return d, asUsage(err)
}

// asUsage is err as bad input (exit 2); nil for nil.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// commandError is a command that cannot be run: exit 127 or 126, like a shell.
type commandError struct {
	code int
	msg  string
}

func (e commandError) Error() string { return e.msg }

// lookPath resolves COMMAND as a shell would (process.LookPath's rules),
// its refusal a commandError with the shell's status.
func lookPath(name, pathEnv string) (string, error) {
	p, err := process.LookPath(name, pathEnv)
	if nr := (process.NotRunnable{}); errors.As(err, &nr) {
		return p, commandError{nr.Code, nr.Msg}
	}
	return p, err
}
