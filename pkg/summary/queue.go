//go:build linux

package summary

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/table"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// WriteQueue prints the end of a task queue: a row per slot, then
// the tasks' counts and which failed; its failure and warning cells
// painted by paint.
func WriteQueue(w io.Writer, q *taskqueue.Queue, insts []launcher.Instance, outs []launcher.Outcome, wall time.Duration, paint Paint) {
	warnings := writeSlotTable(w, insts, outs, paint)
	done := q.Done()
	fmt.Fprintf(w, "tasks: %d of %d finished in %s", done, len(q.Tasks), wall.Round(time.Millisecond))
	if wall > 0 && done > 0 {
		fmt.Fprintf(w, " (%.1f/s)", float64(done)/wall.Seconds())
	}
	fmt.Fprintf(w, ": %d succeeded, %d failed", q.Succeeded(), q.Failed())
	if failed := q.FailedSeqs(); len(failed) > 0 {
		list := make([]string, 0, 10)
		for _, s := range failed[:min(10, len(failed))] {
			list = append(list, strconv.Itoa(s))
		}
		more := ""
		if len(failed) > 10 {
			more = ", …"
		}
		fmt.Fprintf(w, " (task %s%s)", strings.Join(list, ", "), more)
	}
	if q.Skipped > 0 {
		fmt.Fprintf(w, "; %d skipped, done in an earlier run (--joblog)", q.Skipped)
	}
	if left := q.Unfinished(); left > 0 {
		fmt.Fprintf(w, "; %d not finished (%s): --resume runs them", left, q.Halted())
	}
	fmt.Fprintln(w)
	writeNodeShares(w, q)
	writeWarnings(w, warnings, paint)
}

// writeSlotTable prints a row per slot and returns the slots' warnings.
func writeSlotTable(w io.Writer, insts []launcher.Instance, outs []launcher.Outcome, paint Paint) []string {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tGPU\tCPUS\tTASKS\t"+paint.Plain("FAILED")+"\tGPU% MEAN/PEAK\tGPU MEM\tPEAK RSS")
	var warnings []string
	for i, o := range outs {
		util := table.Dash
		if o.GPUUtilMean >= 0 && len(insts[i].GPUUUIDs) > 0 {
			util = fmt.Sprintf("%.0f/%d", o.GPUUtilMean, o.GPUUtilPeak)
		}
		failed := paint.Exit(strconv.Itoa(o.TasksFailed), o.TasksFailed > 0, job.EndedItself)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", i, table.OrDash(insts[i].GPUs), table.OrDash(insts[i].CPUs), o.Tasks, failed,
			util, table.Bytes(o.GPUMemPeak), table.Bytes(o.PeakRSS))
		warnings = append(warnings, o.Warnings...)
	}
	tw.Flush()
	writeSourceNote(w, insts, outs)
	return warnings
}

// WriteFeed prints the end of a node's share of a queue over
// several nodes: its slots, then what it did.
func WriteFeed(w io.Writer, f *taskqueue.Feed, insts []launcher.Instance, outs []launcher.Outcome, paint Paint) {
	warnings := writeSlotTable(w, insts, outs, paint)
	fmt.Fprintln(w, f.Summary())
	writeWarnings(w, warnings, paint)
}

// writeNodeShares says what each other node of a queue over several did,
// and which were lost or never joined.
func writeNodeShares(w io.Writer, q *taskqueue.Queue) {
	for _, n := range q.NodeCounts() {
		fmt.Fprintf(w, "node %d (%s): %d task(s) finished, %d failed", n.Node, n.Host, n.Done, n.Failed)
		if n.Lost != "" {
			fmt.Fprintf(w, "; LOST: %s", n.Lost)
		}
		fmt.Fprintln(w)
	}
	if absent := q.AbsentNodes(); absent > 0 {
		fmt.Fprintf(w, "%d node(s) never joined the queue (see their own output)\n", absent)
	}
}
