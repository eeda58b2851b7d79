package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
	"github.com/gpulaunch/gpulaunch/pkg/control"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
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
// given an empty value is one (emptyValue), and --help prints usage to
// stdout (then done is true).
func (a *app) parseFlags(fs *pflag.FlagSet, args []string, usage string) (bool, error) {
	fs.SetOutput(io.Discard)
	help := helpFlag(fs)
	decimalInts(fs)
	if err := fs.Parse(args); err != nil {
		return false, usagef("%s (see `gpulaunch %s --help`)", flagError(err, fs), fs.Name())
	}
	if *help {
		fmt.Fprintf(a.stdout, "%s\nFlags:\n%s", usage, fs.FlagUsages())
		return true, nil
	}
	return false, emptyValue(fs)
}

// decimalInts makes every whole-number flag of fs read its value in base
// 10, as srun and GNU parallel read counts: pflag's own reads 010 as
// octal 8, 0x10 as 16, and refuses 08 (`seq -w` pads with zeros); and
// refuse a value above the flag's countRange as it is parsed. Number
// flags take finite numbers only: NaN passes every range check (each
// comparison with it is false).
func decimalInts(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "int":
			r, _ := countRangeOf(f.Name)
			f.Value = decimal{f.Value, r.hi}
		case "float64":
			f.Value = finite{f.Value}
		}
	})
}

// countRange is the values a whole-number flag takes and what they count.
type countRange struct {
	name   string // the flag's
	lo, hi int64
	of     string
}

// countRanges are the values of every whole-number flag, by name, each
// from the package whose rule it is. A value above hi is refused as the
// flag is parsed, before anything is allocated by it: -n 99999999999
// made a plan of 10^11 slots, and the runtime died out of memory. The
// lower ends stay the commands' own checks, which say what the smallest
// values mean (-c 0, --tail 0); here they only word the range.
// TestEveryCountIsBounded holds every int flag of every command to a row.
// A list, not a map: a map is built at init, at every start of gpulaunch
// (TestStartPathInits); this is laid out by the linker.
var countRanges = []countRange{
	{"ntasks", 1, binding.MaxInstances, "instances on one node are"},
	{"gpus-per-task", 0, binding.MaxGPUsPerInstance, "GPUs per instance are"},
	{"cpus-per-task", 1, binding.MaxCPUsPerInstance, "CPUs per instance are"},
	{"restarts", 0, launcher.MaxRestarts, "restarts of an instance are"},
	{"retries", 1, taskqueue.MaxTries, "tries of a task are"},
	{"repeat", 1, scaling.MaxRepeat, "rounds of a study are"},
	{"master-port", 1, 65535, "a port is"},
	{"mps-threads", 1, 100, "an instance's active thread percentage is"},
	{"pid", 1, control.MaxPID, "a pid is"},
	// as tail -n: a count beyond the lines kept shows all that is kept
	{"tail", 0, math.MaxInt64, "lines are"},
}

// countRangeOf is the range of the whole-number flag name.
func countRangeOf(name string) (countRange, bool) {
	for _, r := range countRanges {
		if r.name == name {
			return r, true
		}
	}
	return countRange{}, false
}

// String is the range in a message: "instances on one node are 1..8192".
func (r countRange) String() string { return fmt.Sprintf("%s %d..%d", r.of, r.lo, r.hi) }

// finite is a number flag's value that is a number.
type finite struct{ pflag.Value }

func (v finite) Set(s string) error {
	n, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsNaN(n) || math.IsInf(n, 0)) {
		return strconv.ErrSyntax
	}
	if err != nil {
		return err
	}
	return v.Value.Set(s)
}

// decimal is an int flag's value read in base 10, at most hi (0: any).
type decimal struct {
	pflag.Value
	hi int64
}

func (d decimal) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	if d.hi > 0 && n > d.hi {
		return &strconv.NumError{Func: "ParseInt", Num: s, Err: strconv.ErrRange}
	}
	return d.Value.Set(strconv.FormatInt(n, 10))
}

// ownEmptyCheck are the word flags whose own checks refuse "" with a fix
// of their own (a list of the values, what to give): the choices and
// --master-addr, scale's --metric.
var ownEmptyCheck = map[string]bool{"log-format": true, "gpu-ids": true,
	"gpu-visibility": true, "mem-bind": true, "ranks": true, "master-addr": true, "metric": true}

// emptyValue refuses a word flag given an empty value (-o "$OUT" with
// OUT unset): every one of them would otherwise fall back to its default
// without a word (an empty -o writes to the terminal, an empty --simulate
// plans this machine), which is not what the command line says.
func emptyValue(fs *pflag.FlagSet) error {
	var bad *pflag.Flag
	fs.Visit(func(f *pflag.Flag) {
		if bad == nil && f.Value.Type() == "string" && f.Value.String() == "" && !ownEmptyCheck[f.Name] {
			bad = f
		}
	})
	if bad == nil {
		return nil
	}
	def := ""
	if bad.DefValue != "" {
		def = fmt.Sprintf(" (its default is %s)", bad.DefValue)
	}
	return usagef("%s \"\": an empty value (a variable that expanded to nothing?): give it a value, or leave %s out%s",
		flagName(bad), flagName(bad), def)
}

// flagError says what pflag found wrong in words, without the parser's
// own (`strconv.ParseInt: parsing "abc": invalid syntax`), and for an
// unknown flag the one of fs that was likely meant.
func flagError(err error, fs *pflag.FlagSet) string {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			if near := closestFlag(fs, name); near != "" {
				return fmt.Sprintf("unknown flag: --%s: did you mean --%s?", name, near)
			}
		}
		return err.Error()
	}
	f := bad.GetFlag()
	name := flagName(f)
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Sprintf("%s %s: %s", name, bad.GetValue(), outOfRange(f, bad.GetValue()))
	}
	want := map[string]string{"int": "a whole number", "bool": "true or false", "string": "a word", "float64": "a number"}[f.Value.Type()]
	if want == "" {
		want = "a " + f.Value.Type()
	}
	return fmt.Sprintf("%s: invalid argument %q: not %s", name, bad.GetValue(), want)
}

// closestFlag is the flag of fs a mistyped --name most likely meant
// (clidoc.ClosestFlag's rule); "" for none.
func closestFlag(fs *pflag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return clidoc.ClosestFlag(name, names)
}

// outOfRange says why a number the parser read is still refused: it is
// a number, beyond the flag's range (countRanges), or what its type holds.
func outOfRange(f *pflag.Flag, value string) string {
	neg := strings.HasPrefix(strings.TrimSpace(value), "-")
	typ := f.Value.Type()
	if r, ok := countRangeOf(f.Name); ok && typ == "int" {
		return map[bool]string{false: "too large: ", true: "too small: "}[neg] + r.String()
	}
	switch {
	case typ == "int" && neg:
		return fmt.Sprintf("too small: a whole number here is %d or more", math.MinInt64)
	case typ == "int":
		return fmt.Sprintf("too large: a whole number here is at most %d", math.MaxInt64)
	}
	return fmt.Sprintf("out of range: a number here is between %g and %g", -math.MaxFloat64, math.MaxFloat64)
}

func (c commonFlags) logger(w io.Writer) (*zap.Logger, error) { return c.loggerAt(w, zap.WarnLevel) }

// loggerAt builds the logger; level is the default without -v.
func (c commonFlags) loggerAt(w io.Writer, level zapcore.Level) (*zap.Logger, error) {
	if c.verbose {
		level = zap.DebugLevel
	}
	var enc zapcore.Encoder
	switch c.logFormat {
	case "console":
		cfg := zap.NewDevelopmentEncoderConfig()
		cfg.TimeKey, cfg.CallerKey = "", ""
		cfg.ConsoleSeparator = " "
		enc = zapcore.NewConsoleEncoder(cfg)
	case "json":
		enc = zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	default:
		return nil, usagef("--log-format %q: use console or json", c.logFormat)
	}
	core := zapcore.NewCore(enc, zapcore.AddSync(w), level)
	if c.logFormat == "console" {
		core = messageOnly{core}
	}
	return zap.New(core).Named("gpulaunch"), nil
}

// messageOnly drops structured fields from console logs: the message is
// already the human line, and the fields are for --log-format json.
type messageOnly struct{ zapcore.Core }

func (m messageOnly) With([]zapcore.Field) zapcore.Core { return m }

func (m messageOnly) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if m.Enabled(e.Level) {
		return ce.AddCore(e, m)
	}
	return ce
}

func (m messageOnly) Write(e zapcore.Entry, _ []zapcore.Field) error { return m.Core.Write(e, nil) }

// parseDuration reads a Go duration ("90s", "1h30m") or plain seconds.
func parseDuration(flag, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case math.IsNaN(n):
			return 0, usagef("%s %q: not a duration (use seconds, or 90s, 15m, 2h)", flag, s)
		case n < 0:
			return 0, usagef("%s %q: cannot be negative", flag, s)
		case n*float64(time.Second) >= math.MaxInt64:
			// converted, it would wrap to a negative duration: no limit at all
			return 0, usagef("%s %q: too long: the longest is %.0f seconds (%s)", flag, s, float64(math.MaxInt64)/float64(time.Second), time.Duration(math.MaxInt64))
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if durationSyntax().MatchString(s) { // well formed: it overflowed
			return 0, usagef("%s %q: too long: the longest is %s", flag, s, time.Duration(math.MaxInt64))
		}
		return 0, usagef("%s %q: not a duration (use seconds, or 90s, 15m, 2h)", flag, s)
	}
	if d < 0 {
		return 0, usagef("%s %q: cannot be negative", flag, s)
	}
	return d, nil
}

// durationSyntax is time.ParseDuration's grammar, to tell a duration too
// long for it from one it cannot read (it says "invalid" for both);
// compiled at its first use, not at every start (see jsonerr's).
var durationSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)
})

// parseSize reads a memory size: K, M, G, T suffixes (binary), plain
// numbers in MiB as Slurm's --mem. 0 (in any unit) is 0: what it means
// is the caller's.
func parseSize(flag, s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := float64(1 << 20)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult, t = 1<<10, t[:len(t)-1]
		case 'M':
			mult, t = 1<<20, t[:len(t)-1]
		case 'G':
			mult, t = 1<<30, t[:len(t)-1]
		case 'T':
			mult, t = 1<<40, t[:len(t)-1]
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err == nil && n == 0 {
		return 0, nil
	}
	if err == nil && n*mult > 1<<62 {
		return 0, usagef("%s %q: too large: a memory size is at most %dT (4 EiB)", flag, s, (1<<62)>>40)
	}
	if err != nil || math.IsNaN(n) || n < 0 || n*mult < 1 {
		return 0, usagef("%s %q: not a memory size (use e.g. 512M, 16G, 1.5T)", flag, s)
	}
	return uint64(n * mult), nil
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
