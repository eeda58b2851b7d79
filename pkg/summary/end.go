package summary

import (
	"fmt"
	"io"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// End is what a run says on stderr when its supervisor returns, and the
// status it exits with; the CLI fills it in.
type End struct {
	// Console is the run's (a queue's summary goes around its progress
	// line); Stderr is gpulaunch's own, where a run of instances writes.
	Console *Console
	Stderr  io.Writer
	Paint   Paint
	Quiet   bool // -q: the warnings only
	// Feed is this node's part of a queue over several nodes, Queue the
	// queue kept here; nil: none.
	Feed      *taskqueue.Feed
	Queue     *taskqueue.Queue
	Instances []launcher.Instance
	Result    launcher.Result
	Started   time.Time
	Group     nodegroup.NodeGroup
	// Sharing says how the instances shared GPUs (mps.Sharing, whose nil
	// says nothing).
	Sharing interface{ Write(io.Writer) }
}

// Write says how the run ended and returns its exit status:
//
//  1. On a node of a queue over several: its part of the queue, and the
//     feed's status.
//  2. A queue: its table and GNU parallel's status; joblog records that
//     could not be written make it 255 — a --resume would run those tasks
//     again: the run is not what its joblog says.
//  3. A run of instances: srun's status, and its table (with -q its
//     warnings only), over several nodes after a line placing this node's
//     ranks among them.
//  4. Then, without -q, how the instances shared GPUs; and the root cause
//     of a failed --ddp group.
func (e End) Write() int {
	var code int
	insts, outs, stderr := e.Instances, e.Result.Outcomes, e.Console.Stderr
	to := stderr
	if e.Quiet {
		to = &WarningsOnly{W: stderr}
	}
	switch {
	case e.Feed != nil:
		code = e.Feed.ExitCode()
		WriteFeed(to, e.Feed, insts, outs, e.Paint)
	case e.Queue != nil:
		code = e.Queue.ExitCode()
		WriteQueue(to, e.Queue, insts, outs, time.Since(e.Started), e.Paint)
		if lost, why := e.Queue.Joblog.Lost(); lost > 0 {
			fmt.Fprintf(stderr, "gpulaunch: error: --joblog %s: %d record(s) could not be written (%v): a --resume would run those tasks again\n", e.Queue.Joblog.Path(), lost, why)
			code = 255
		}
	case e.Quiet:
		code = e.Result.ExitCode()
		WriteWarnings(e.Stderr, outs, e.Paint)
	default:
		code = e.Result.ExitCode()
		if g := e.Group; g.MultiNode() {
			fmt.Fprintf(e.Stderr, "%s: node %d of %d, ranks %d..%d of %d\n", g.Host, g.Rank, g.Size,
				insts[0].Rank, insts[len(insts)-1].Rank, g.Ranks(0).WorldSize)
		}
		Write(e.Stderr, insts, outs, e.Paint)
	}
	if !e.Quiet && e.Sharing != nil {
		e.Sharing.Write(stderr)
	}
	WriteRootCause(stderr, e.Result.RootCause, e.Paint)
	return code
}
