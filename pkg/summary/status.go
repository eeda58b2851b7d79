//go:build linux

package summary

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/table"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// WriteStatus renders a snapshot as the live table (`gpulaunch status`,
// each frame of `top`), fitted to width columns (0: no limit) by
// table.Fit, its failure and warning cells painted.
func WriteStatus(w io.Writer, s launcher.Snapshot, width int, paint Paint) {
	fmt.Fprintln(w, table.CutLine(statusHeader(s), width))
	if len(s.Run.Command) > 0 { // a --tasks queue has no COMMAND of its own
		// quoted as the joblog quotes a task's command, so that it reads back
		fmt.Fprintln(w, table.CutLine("  "+taskqueue.ShellJoin(s.Run.Command), width))
	}
	for _, line := range s.Run.Sharing {
		fmt.Fprintln(w, table.CutLine("sharing: "+line, width))
	}
	if s.Run.Nodes > 1 && len(s.Instances) > 0 {
		fmt.Fprintln(w, table.CutLine(fmt.Sprintf("node %d of %d: ranks %d..%d of %d (the other nodes' instances: gpulaunch status on each node)",
			s.Run.Node, s.Run.Nodes, s.Instances[0].Rank, s.Instances[len(s.Instances)-1].Rank, s.Run.WorldSize), width))
	}
	if q := s.Queue; q != nil {
		fmt.Fprintln(w, table.CutLine(QueueLine(*q), width))
	}
	cols := StatusColumns(s)
	table.Fit(cols, width)
	table.Write(w, cols, paint)
	if note := statusSourceNote(s); note != "" {
		fmt.Fprintln(w, table.CutLine(note, width))
	}
	for _, r := range s.Instances {
		if r.MPSFault != "" {
			fmt.Fprintln(w, table.CutLine(fmt.Sprintf("MPS: instance %d: %s", r.Index, r.MPSFault), width))
		}
	}
	for _, r := range s.Instances {
		for _, m := range r.Warnings {
			rest := 0 // the room after "warning: "; 0: no limit
			if width > 0 {
				rest = max(width-len("warning: "), 1)
			}
			fmt.Fprintln(w, paint.Warn("warning:")+" "+table.CutLine(m, rest))
		}
	}
}

// statusSourceNote is the line under the live table that says whose
// use each GPU% is (telemetry.SourceNote), by each row's last sample.
func statusSourceNote(s launcher.Snapshot) string {
	rows := make([]telemetry.Sourced, 0, len(s.Instances))
	for _, r := range s.Instances {
		if r.GPUUtil >= 0 && (r.State == launcher.StateRunning || r.State == launcher.StateStopping) {
			rows = append(rows, telemetry.Sourced{Index: r.Index, Source: r.GPUUtilSource, MPS: r.MPSClient})
		}
	}
	return telemetry.SourceNote(rows)
}

// statusHeader is the live table's first line: which run, how long up,
// its instances counted by state, how it is sampled.
func statusHeader(s launcher.Snapshot) string {
	counts := map[string]int{}
	for _, r := range s.Instances {
		counts[r.State]++
	}
	var parts []string
	for _, st := range []string{launcher.StateStarting, launcher.StateRunning, launcher.StateStopping, launcher.StateRestarting, launcher.StateExited} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	where := "pid " + strconv.Itoa(s.Run.PID) + " on " + s.Run.Host
	if s.Run.JobID != "" {
		where += ", job " + s.Run.JobID
		if s.Run.StepID != "" {
			where += " step " + s.Run.StepID
		}
	}
	sampled := "telemetry off"
	if s.Run.Monitor != "" && s.Run.Monitor != "0s" {
		sampled = "sampled every " + s.Run.Monitor
		if s.Run.GPUTelemetry != "" {
			sampled += ", GPU use unmeasured (" + strings.TrimPrefix(s.Run.GPUTelemetry, "no GPU telemetry: ") + ")"
		}
	}
	state := "up " + s.Taken.Sub(s.Run.Started).Round(time.Second).String()
	if s.Run.Finished {
		state = "finished"
	}
	instances := fmt.Sprintf("%d instances", len(s.Instances))
	if len(s.Instances) == 1 {
		instances = "1 instance"
	}
	return fmt.Sprintf("gpulaunch %s · %s · %s: %s · %s", where, state, instances, strings.Join(parts, ", "), sampled)
}

// NotStarted is the word for a queue's tasks not started yet (waiting
// for a slot, a retry among them: taskqueue.QueueStatus.Remaining).
// "left" alone is the metrics' gpulaunch_queue_tasks_left, which counts
// every task not finished — running ones too.
const NotStarted = "left to start"

// QueueLine is the live table's line of a queue's counts.
func QueueLine(q taskqueue.QueueStatus) string {
	line := fmt.Sprintf("queue: %d/%d done, %d failed, %d running, %d %s", q.Done, q.Total-q.Skipped, q.Failed, q.Running, q.Remaining, NotStarted)
	if q.Skipped > 0 {
		line += fmt.Sprintf(" (%d done before, by the joblog)", q.Skipped)
	}
	if q.Halted != "" {
		line += " · stopping: " + q.Halted
	}
	return line
}

// StatusColumns are the live table's columns, in order.
func StatusColumns(s launcher.Snapshot) []*table.Column {
	var cols []*table.Column
	add := func(name string, drop int) *table.Column {
		c := &table.Column{Name: name, Drop: drop}
		cols = append(cols, c)
		return c
	}
	first := add("INSTANCE", 0)
	var second *table.Column
	switch {
	case s.Queue != nil: // a queue's instances are slots; each row says which task it runs
		first.Name, second = "SLOT", add("TASK", 0)
	case s.Run.Nodes > 1:
		second = add("RANK", 0)
	}
	state, pidC, gpuC, cpusC := add("STATE", 0), add("PID", 2), add("GPU", 8), add("CPUS", 1)
	wall, restarts, cpuC, rssC := add("WALL", 7), add("RESTARTS", 6), add("CPU%", 5), add("RSS", 4)
	utilC, memC, exitC := add("GPU%", 0), add("GPU MEM", 3), add("LAST EXIT", 0)
	for _, r := range s.Instances {
		first.Add(strconv.Itoa(r.Index), table.Plain)
		switch {
		case s.Queue != nil && r.Task == 0:
			second.Add(table.Dash, table.Plain)
		case s.Queue != nil:
			second.Add(strconv.Itoa(r.Task), table.Plain)
		case second != nil:
			second.Add(strconv.Itoa(r.Rank), table.Plain)
		}
		c := liveOf(r)
		state.Add(r.State, table.Plain)
		pidC.Add(c.pid, table.Plain)
		gpuC.Add(table.OrDash(r.GPUs), table.Plain)
		cpusC.Add(table.OrDash(r.CPUs), table.Plain)
		wall.Add(c.wall, table.Plain)
		restarts.Add(strconv.Itoa(r.Restarts), table.Plain)
		cpuC.Add(c.cpu, table.Plain)
		rssC.Add(c.rss, table.Plain)
		utilC.Add(c.util, table.Plain)
		memC.Add(c.mem, table.Plain)
		exit, kind := lastExit(r)
		exitC.Add(exit, kind)
	}
	return cols
}

// liveCells are a row's figures of the process now: a dash for an
// instance that has no process, or was not measured.
type liveCells struct{ pid, wall, cpu, rss, util, mem string }

func liveOf(r launcher.InstanceStatus) liveCells {
	c := liveCells{table.Dash, table.Dash, table.Dash, table.Dash, table.Dash, table.Dash}
	if r.PID > 0 {
		c.pid = strconv.Itoa(r.PID)
		c.wall = r.Wall.Round(time.Second).String()
	}
	if r.State == launcher.StateRunning || r.State == launcher.StateStopping {
		if r.RSS > 0 {
			c.cpu, c.rss = fmt.Sprintf("%.0f", r.CPUPercent), table.BytesShort(r.RSS)
		}
		if r.GPUUtil >= 0 {
			c.util, c.mem = strconv.Itoa(r.GPUUtil), table.BytesShort(r.GPUMem)
		}
	}
	return c
}

// lastExit is LAST EXIT's cell: a failure painted when the instance
// failed by itself, a warning with who ended it when gpulaunch did.
func lastExit(r launcher.InstanceStatus) (string, table.Kind) {
	exit, kind := r.Exit, table.Plain
	switch {
	case exit != "" && exit != "0" && r.EndedBy == "":
		kind = table.Fail
	case exit != "" && r.EndedBy != "":
		exit, kind = exit+" ("+string(r.EndedBy)+")", table.Warn
	}
	return table.OrDash(exit), kind
}
