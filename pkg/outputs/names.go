package outputs

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// Name refuses, before anything starts, what an output flag's file name
// holds that the flag does not read: each was written as it was given
// (--report r-%t.json one r-0.json, -o 'x/{}.log' a file named {}.log,
// report --svg - a file named -); queue: the run is a task queue. The
// rules, in order:
//  1. "-" is the flag's console stream where it has one: -o's stdout and
//     -e's stderr (as without them: `-o out.log -e -` keeps stderr on the
//     console), report's --svg and --html (its stdout holds nothing else),
//     and --joblog's stdout (GNU parallel's --joblog -). Elsewhere stdout
//     carries the instances' output or a study's table: "-" is refused.
//  2. srun's patterns (%t %j %s %N %n, with widths, and %%) are read by
//     -o and -e, and by --report and --metrics-file (one file per node:
//     %t is refused there, instance.NodePath). Elsewhere a name is taken
//     as it is, and a pattern in it is refused by name.
//  3. GNU parallel's replacement strings are read by a queue's -o and -e,
//     per task (taskqueue.CheckPattern). Elsewhere one is refused by name.
func Name(flag, name string, queue bool) error {
	kind := kindOf(flag)
	if name == "-" && !kind.dash {
		return fmt.Errorf("%s -: - is stdout, which %s; give a file name", flag, kind.stdout)
	}
	if !kind.srun {
		if p := instance.SrunPatternIn(name); p != "" {
			return fmt.Errorf("%s %s: %s is an srun pattern (%%t %%j %%s %%N %%n), which only -o, -e, --report and --metrics-file read; %s's file is named as given: give the name itself (e.g. with $SLURM_JOB_ID)", flag, name, p, flag)
		}
	}
	if r := taskqueue.ReplacementIn(name); r != "" && !(kind.tasks && queue) {
		where := "a task queue's -o and -e (--each-line, --tasks)"
		if kind.tasks {
			where += "; a run's instance is %t"
		}
		return fmt.Errorf("%s %s: %s is a replacement string, filled in %s; %s's file is named as given here", flag, name, r, where, flag)
	}
	return nil
}

// PromName says why node_exporter's textfile collector would not read
// file, --metrics-file's expanded name: it reads *.prom only.
func PromName(file string) error {
	if strings.HasSuffix(filepath.Base(file), ".prom") && filepath.Base(file) != ".prom" {
		return nil
	}
	return fmt.Errorf("node_exporter's textfile collector reads only files named *.prom and would ignore this one: give a name ending in .prom (e.g. gpulaunch-%%j.prom)")
}

// Kind is what an output flag's file name may hold (Name).
type Kind struct {
	Flag   string // as messages name it: -o, --report, scale --json
	dash   bool   // rule 1: "-" is its console stream
	stdout string // rule 1: what stdout carries where "-" is refused
	srun   bool   // rule 2: srun's patterns are read
	tasks  bool   // rule 3: replacement strings are read in a queue
}

// Kinds are every output flag's: a list, laid out by the linker, where a
// map would be built at every start (TestStartPathInits).
var Kinds = []Kind{
	{Flag: "-o", dash: true, srun: true, tasks: true}, {Flag: "-e", dash: true, srun: true, tasks: true},
	{Flag: "--report", stdout: "carries the instances' output", srun: true},
	{Flag: "--metrics-file", stdout: "carries the instances' output", srun: true},
	{Flag: "--joblog", dash: true},
	{Flag: "scale --json", stdout: "carries the study's table"}, {Flag: "scale --svg", stdout: "carries the study's table"},
	{Flag: "report --svg", dash: true}, {Flag: "report --html", dash: true},
}

// kindOf is flag's kind; a flag without one is a programming error.
func kindOf(flag string) Kind {
	for _, k := range Kinds {
		if k.Flag == flag {
			return k
		}
	}
	panic("outputs.Name: no kind for " + flag + " (a new output flag needs its row in outputs.Kinds)")
}
