package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// FuzzParseArgs: any argv (words joined by NUL) gives run's and scale's
// parsers an error that is bad input (exit 2) or a command line whose
// values are valid, never a panic. The seeds are the CLI contract's rows.
func FuzzParseArgs(f *testing.F) {
	for _, r := range contract {
		if r.cmd == "run" || r.cmd == "scale" {
			f.Add(strings.Join(append([]string{r.cmd}, strings.Fields(r.args)...), "\x00"))
		}
	}
	f.Add("run\x00-n\x004\x00-G\x002\x00-o\x00out/%j-%t.log\x00--\x00./app\x00--shard\x00%t")
	f.Add("run\x00--each-line\x00p\x00--joblog\x00j\x00--resume\x00--halt\x00soon,fail=10%\x00--\x00app\x00{}")
	f.Add("scale\x00-n\x001,2,4\x00--ddp\x00--metric\x00t: ([0-9.]+)\x00--metric-sum\x00--\x00app")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		a := &app{stdout: io.Discard, stderr: io.Discard, env: sched.Env{}}
		if args[0] == "scale" {
			o, err := parseScale(a, args[1:])
			checkParsed(t, args, err, o != nil, func() string { return validScale(o) })
			return
		}
		o, err := a.parseRun(args[1:], true)
		checkParsed(t, args, err, o != nil, func() string { return validRun(o) })
	})
}

// parseScale parses and reads scale's command line as the command does
// (app.scale's first steps): nil options after --help or an error.
func parseScale(a *app, args []string) (*scaleOptions, error) {
	o := newScaleOptions()
	if done, err := a.parseFlags(o.fs, args, scaleUsage); done || err != nil {
		return nil, err
	}
	if err := o.read(); err != nil {
		return nil, err
	}
	return o, nil
}

// checkParsed: an error is a usage error; options (parsed: not --help) are valid.
func checkParsed(t *testing.T, args []string, err error, parsed bool, invalid func() string) {
	t.Helper()
	if err != nil {
		if !errors.As(err, new(usageError)) {
			t.Fatalf("%q: %T %v, want a usage error", args, err, err)
		}
		return
	}
	if !parsed {
		return // --help
	}
	if why := invalid(); why != "" {
		t.Fatalf("%q accepted: %s", args, why)
	}
}

// validRun says what is invalid in run's parsed options; "" when nothing.
func validRun(o *runOptions) string {
	p := o.policy
	switch {
	case p.KillWait <= 0 || p.Restarts < 0 || p.Timeout < 0 || p.WaitAfterFirst < 0 || p.Monitor < 0:
		return "a policy value out of range"
	case o.req.Instances < 0 || o.req.GPUsPerInstance < 0 || o.req.CPUsPerInstance < 0:
		return "a negative count"
	case o.ids != instance.GPUIDsUUID && o.ids != instance.GPUIDsIndex, o.vis != instance.VisibleOwn && o.vis != instance.VisibleAll:
		return "GPU naming"
	case o.flags.ranks != "global" && o.flags.ranks != "local":
		return "--ranks"
	case len(o.argv) == 0 && !o.flags.dryRun && o.tasks.tasks == "":
		return "no command"
	case len(o.argv) > 0 && (o.argv[0] == "" || slices.ContainsFunc(o.argv, func(a string) bool { return strings.ContainsRune(a, 0) })):
		return "an argument no program can be given"
	case o.openMode() != process.OpenTruncate && o.openMode() != process.OpenAppend:
		return "--open-mode"
	}
	return emptyFlag(o.fs)
}

// validScale says what is invalid in scale's parsed options.
func validScale(o *scaleOptions) string {
	switch {
	case len(o.sizes) == 0 || slices.Min(o.sizes) < 1:
		return "a size below 1"
	case o.repeat < 1 || o.eff <= 0 || o.eff > 1:
		return "--repeat or --efficiency out of range"
	case len(o.argv) == 0 || o.argv[0] == "":
		return "no command"
	}
	return emptyFlag(o.fs)
}

// emptyFlag names a flag given an empty value, which flagvalue.Empty refuses.
func emptyFlag(fs *pflag.FlagSet) string {
	var bad string
	fs.Visit(func(f *pflag.Flag) {
		if f.Value.Type() == "string" && f.Value.String() == "" {
			bad = "--" + f.Name + " is empty"
		}
	})
	return bad
}
