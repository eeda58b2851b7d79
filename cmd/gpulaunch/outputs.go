package main

import (
	"fmt"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// checkOutputs says, before anything starts or is opened, why a file the
// run will write could not be written, or is a file it reads (inputs) or
// another output of another kind (outputs.RunFiles.Check). It changes
// nothing on disk.
func checkOutputs(o *runOptions, l *launch, insts []launcher.Instance, q *taskqueue.QueueConfig, inputs []outputs.Use) error {
	r := outputs.RunFiles{Out: o.flags.output, Err: o.flags.error, Report: l.report, Metrics: l.metricsFile, Reads: inputs}
	if !o.tasks.queueMode() { // a queue's slots write their tasks' files only
		for _, inst := range insts {
			r.Instances = append(r.Instances, outputs.Streams{Who: fmt.Sprintf("instance %d", inst.Index), Stdout: inst.Stdout, Stderr: inst.Stderr})
		}
	}
	if q != nil {
		r.Tasks = outputs.TaskStreams(q.Tasks, q.Slots, o.flags.output, o.flags.error, len(insts))
		r.Joblog = o.tasks.joblog
	}
	return asUsage(r.Check())
}

// runInputs are the files a run reads: the task input, the node or
// topology file, and the programs it starts (a queue's: every task's).
func (a *app) runInputs(o *runOptions, l *launch, q *taskqueue.QueueConfig) []outputs.Use {
	uses := a.nodeInputs(o.common)
	for flag, file := range map[string]string{"--tasks": o.tasks.tasks, "--each-line": o.tasks.eachLine} {
		if file != "" && file != "-" {
			uses = append(uses, outputs.Use{Flag: flag, Path: file, Reads: "the tasks"})
		}
	}
	if l.path != "" {
		uses = append(uses, outputs.Use{Flag: "the command", Path: l.path, Reads: "the program the run starts"})
	}
	if q != nil {
		seen := map[string]bool{}
		for _, t := range q.Tasks {
			if !seen[t.Path] {
				seen[t.Path] = true
				uses = append(uses, outputs.Use{Flag: "task " + fmt.Sprint(t.Seq) + "'s command", Path: t.Path, Reads: "a program the queue starts"})
			}
		}
	}
	return uses
}

// nodeInputs is the file that describes the node, when one does:
// --simulate FILE, --node-file, or $GPULAUNCH_NODE_FILE.
func (a *app) nodeInputs(c commonFlags) []outputs.Use {
	switch {
	case c.simulate != "" && (strings.ContainsRune(c.simulate, '/') || strings.HasSuffix(c.simulate, ".json")): // gpu.Open's rule
		return []outputs.Use{{Flag: "--simulate", Path: c.simulate, Reads: "the node's description"}}
	case c.nodeFile != "":
		return []outputs.Use{{Flag: "--node-file", Path: c.nodeFile, Reads: "the node's description"}}
	case c.simulate == "" && a.env["GPULAUNCH_NODE_FILE"] != "":
		return []outputs.Use{{Flag: "GPULAUNCH_NODE_FILE", Path: a.env["GPULAUNCH_NODE_FILE"], Reads: "the node's description"}}
	}
	return nil
}
