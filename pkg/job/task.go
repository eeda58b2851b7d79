package job

import "time"

// Task is one command of a task queue (gpulaunch --tasks, --each-line).
type Task struct {
	// Seq numbers the tasks of the input from 1, as GNU parallel's
	// joblog does; it is what --resume matches on.
	Seq  int
	Path string   // resolved executable
	Args []string // argv
	// Command is the task as the joblog and the status show it.
	Command string
	// Stdout and Stderr are this task's files; "" is the console.
	Stdout, Stderr string
	// OwnStdout and OwnStderr: the file is this task's alone (its
	// pattern names the task), so that every try, and a resume's rerun,
	// starts it afresh instead of appending to an earlier attempt's
	// output. A file tasks share keeps appending.
	OwnStdout, OwnStderr bool `json:",omitempty"`
	// Template and Input are an --each-line task's COMMAND and what it is
	// filled from (taskqueue.FillTemplate): filled again, in one pass,
	// once the slot ({%}) is known. Nil for a --tasks line.
	Template []string `json:",omitempty"`
	Input    *Input   `json:",omitempty"`
}

// Input is what an --each-line task's replacement strings are filled
// from: its input line, the line's columns, its number and its slot.
type Input struct {
	Line string `json:"line"`
	// Cols are the line's columns split by --colsep; nil without it,
	// when the line is the one column.
	Cols []string `json:"cols,omitempty"`
	Seq  int      `json:"seq"`
	// Slot is the slot the task runs in, from 1; 0 while it is not
	// known, when {%} stays as written (rule 6).
	Slot int `json:"slot,omitempty"`
}

// Record is a task that finished: one joblog line.
type Record struct {
	Seq     int
	Host    string
	Start   time.Time
	Runtime time.Duration
	Exit    int // 128 + Signal when killed by a signal, as bash and parallel ≥ 20221222 write it
	Signal  int
	Command string
}

// Failed: the task did not succeed.
func (r Record) Failed() bool { return r.Exit != 0 || r.Signal != 0 }

// RecordOf is the record of task t's end on host. A task killed by a
// signal has Exitval 128 + the signal and the signal, as GNU parallel
// writes it since 20221222 (bug #63263: "the same exit code as bash";
// Debian 12's 20221122 still writes Exitval 0).
func RecordOf(t Task, host string, e Exit) Record {
	r := Record{Seq: t.Seq, Host: host, Start: e.Started, Runtime: e.Wall, Exit: e.Code, Signal: int(e.Signal), Command: t.Command}
	if e.Signal != 0 {
		r.Exit = 128 + int(e.Signal)
	}
	return r
}
