package main

import (
	"fmt"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
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

// runInputs are the files a run reads (outputs.Reads): the node's
// description, the task input, and the programs it starts.
func runInputs(o *runOptions, l *launch, q *taskqueue.QueueConfig, env sched.Env) []outputs.Use {
	r := outputs.Reads{Simulate: o.common.simulate, NodeFile: o.common.nodeFile, EnvNodeFile: env["GPULAUNCH_NODE_FILE"],
		Tasks: o.tasks.tasks, EachLine: o.tasks.eachLine, Program: l.path, Starter: "the run"}
	if q != nil {
		r.Queue = q.Tasks
	}
	return r.Uses()
}
