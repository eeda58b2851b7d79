package outputs

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// RunFiles are the files a run writes, as the CLI collected them from
// its flags, and the files it reads.
type RunFiles struct {
	// Out and Err are -o's and -e's patterns as given, for the messages.
	Out, Err string
	// Instances are every instance's -o and -e files (a run of N
	// instances; a queue's slots write their tasks' files only).
	Instances []Streams
	// Tasks are every task's -o and -e files, for every slot it may run
	// in (TaskStreams).
	Tasks []Streams
	// Report, Metrics and Joblog are --report's, --metrics-file's and
	// --joblog's files for this node; "" without.
	Report, Metrics, Joblog string
	// Reads are the files the run reads (the task input, the node's
	// description, the programs it starts).
	Reads []Use
}

// Streams are the -o and -e files of one instance or task (Who).
type Streams struct{ Who, Stdout, Stderr string }

// TaskStreams are the -o and -e files (patterns out and err) of every
// task, completed for each slot it may run in (taskqueue.Slots): every
// one of this node's slots when a pattern names the slot ({%}; another
// node's are checked there), else one, since the files are the same in
// every slot. None without a pattern.
func TaskStreams(tasks []job.Task, s *taskqueue.Slots, out, err string, slots int) []Streams {
	if out == "" && err == "" {
		return nil
	}
	if !strings.Contains(out, "{%}") && !strings.Contains(err, "{%}") {
		slots = 1
	}
	var streams []Streams
	for _, t := range tasks {
		for slot := range slots {
			ts := s.Complete(t, slot)
			streams = append(streams, Streams{Who: fmt.Sprintf("task %d", t.Seq), Stdout: ts.Stdout, Stderr: ts.Stderr})
		}
	}
	return streams
}

// Check says, before anything starts or is opened, why a file the run
// will write could not be written, in this order: every instance's and
// every task's -o and -e files, --report's file, --metrics-file's (also
// named *.prom: PromName) and the joblog; then whether one of them is a
// file the run reads or another output of another kind (Clash, by
// Identity). It changes nothing on disk.
func (r RunFiles) Check() error {
	c := NewWritableCheck()
	uses := r.Reads
	for _, s := range append(append([]Streams{}, r.Instances...), r.Tasks...) {
		if err := c.Files("-o "+r.Out, s.Stdout, "-e "+r.Err, s.Stderr, s.Who); err != nil {
			return err
		}
		uses = append(uses, Outputs(s.Stdout, s.Stderr)...)
	}
	if r.Report != "" {
		if err := c.Replaced(r.Report); err != nil {
			return fmt.Errorf("--report %s: %v: nothing was started", r.Report, err)
		}
		uses = append(uses, Use{Flag: "--report", Path: r.Report, Writes: "the run's report"})
	}
	if r.Metrics != "" {
		if err := cmp.Or(c.Replaced(r.Metrics), PromName(r.Metrics)); err != nil {
			return fmt.Errorf("--metrics-file %s: %v: nothing was started", r.Metrics, err)
		}
		uses = append(uses, Use{Flag: "--metrics-file", Path: r.Metrics, Writes: "the run's metrics"})
	}
	if r.Joblog != "" {
		if err := c.File(r.Joblog); err != nil {
			return fmt.Errorf("--joblog %s: %v: nothing was started", r.Joblog, err)
		}
		uses = append(uses, Use{Flag: "--joblog", Path: r.Joblog, Writes: "the joblog"})
	}
	return Clash(uses, Identity)
}
