package job

import (
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Job is one thing a slot runs: an instance's command, or a task.
type Job struct {
	Path           string
	Args           []string
	Stdout, Stderr string // files; "" the console
	// Label is what the console labels its lines with: the instance's
	// number, or the task's.
	Label int
	// Task is the queue's task; Seq 0 for an instance.
	Task Task
	// Try counts the earlier runs of this job: an instance's restarts, a
	// task's retries. A job that ran before appends to its files.
	Try int
	// Env is added to the slot's environment for this job: what its mode
	// tells it (a group's restart count); the task number of a task is
	// added by the supervisor.
	Env []string
	// ErrorFile is where the process reports the exception that ends it
	// (a --ddp rank's TORCHELASTIC_ERROR_FILE, named in Env too); its
	// directory is made, private, before the start. "": none.
	ErrorFile string
}

// OfTask is the job that runs task t.
func OfTask(t Task) Job {
	return Job{Path: t.Path, Args: t.Args, Stdout: t.Stdout, Stderr: t.Stderr, Label: t.Seq, Task: t}
}

// Again is the same job, to be run once more.
func (j Job) Again() Job {
	j.Try++
	return j
}

// Name is the job as the log names it: "instance 2", "task 17".
func (j Job) Name(slot int) string {
	if j.Task.Seq > 0 {
		return "task " + strconv.Itoa(j.Task.Seq)
	}
	return "instance " + strconv.Itoa(slot)
}

// Fields identify the job in JSON logs.
func (j Job) Fields(slot int) []zap.Field {
	if j.Task.Seq > 0 {
		return []zap.Field{zap.Int("task", j.Task.Seq), zap.Int("slot", slot)}
	}
	return []zap.Field{zap.Int("instance", slot), zap.Int("restart", j.Try)}
}

// Then is what a slot does next.
type Then int

const (
	// Done: the slot is done; it runs nothing more.
	Done Then = iota
	// Now: the slot runs Verdict.Job at once, on its own thread (a
	// queue's next task, a retry).
	Now
	// Later: the slot runs Verdict.Job after Verdict.Delay, started by
	// the supervisor's loop (an instance's restart after its backoff).
	Later
	// Wait: the slot has nothing to run yet, and may later: a node of a
	// queue over several, waiting for a task from the holder or for tasks
	// a lost node held; an instance of a group (--ddp) waiting for the
	// group's restart or end. The supervisor asks its mode again (resume)
	// when a verdict says Wake.
	Wait
)

// Verdict is a mode's answer to an exit, or to a message from another
// node: what the slot does next, and what the run does about it.
type Verdict struct {
	// Then and Job are what the slot does next; a verdict on a node's
	// message concerns no slot, and leaves them zero.
	Then  Then
	Job   Job
	Delay time.Duration // Later's backoff
	// Record is a task that finished, for the joblog and the counts.
	Record *Record
	// StopAll, when set, ends every slot's process for that reason and
	// stops the run (-K, --halt now, the holder's stop).
	StopAll Ended
	// EndOthers, when set, ends every other slot's process for that
	// reason, and any that starts before the mode says otherwise
	// (Mode.ending), without stopping the run (a group restart).
	EndOthers Ended
	// Among, when set, limits EndOthers to these slots (the instances of
	// one GPU whose MPS server went sticky); nil: every other slot.
	Among []int
	// EndIn, when set, ends EndOthers' processes that long from now, if
	// they still run then, rather than at once: a GPU's MPS clients fail
	// by themselves at their next CUDA call, with their own error line.
	EndIn time.Duration
	// StartWait starts -W's clock.
	StartWait bool
	// Wake asks every waiting slot again (the mode's resume): at once, or
	// WakeIn from now when WakeIn > 0 (a group restart's backoff).
	Wake   bool
	WakeIn time.Duration
	// Recovery, with WakeIn, wakes the waiting slots once the fault's
	// MPS server has recovered — its log says it destroyed its context,
	// once every client had exited — and WakeIn has passed, whichever
	// is later; within a bound, so that a server that does not log its
	// recovery does not hold the run.
	Recovery *ServerFault
	// Notes are what to tell the user, in order.
	Notes []Note
}

// Note is one log line a rule asks for.
type Note struct {
	Level zapcore.Level
	Msg   string
}

// Say adds a note.
func (v *Verdict) Say(level zapcore.Level, format string, args ...any) {
	v.Notes = append(v.Notes, Note{level, fmt.Sprintf(format, args...)})
}
