package taskqueue

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Resumed is what a --resume or --resume-failed leaves to run, and what
// it found in the joblog that the user should hear of.
type Resumed struct {
	Todo    []job.Task // the tasks to run, in input order
	Skipped int        // the tasks the joblog has done
	// Changed counts the records whose command is not this sweep's task
	// of that number; First is the first of them (by task number).
	Changed int
	First   Change
	// Beyond counts the records of task numbers this input does not have.
	Beyond int
	// Records counts the task numbers the joblog records.
	Records int
}

// Change is a task whose recorded command differs from this sweep's.
type Change struct {
	Seq           int
	Recorded, Now string
}

// Resume leaves out of tasks what an earlier run did, by its joblog's
// records (ReadJoblog). GNU parallel's rules (its man page, and its tests
// par_resume_k, par_resume_failed_k and par_wrong_slot_rpl_resume, bug
// #47644), in order:
//  1. Tasks match records by task number alone, whatever the command:
//     users fix a script or change a flag between resumes on purpose
//     (par_resume_k resumes `exit {}` over 6 inputs with `exit 0` over 8,
//     and runs tasks 7 and 8 only).
//  2. --resume (failedOnly false) skips every task that has a record,
//     failed or not. --resume-failed skips a task one of whose records
//     succeeded (exit 0, no signal), and runs the failed ones again with
//     this sweep's command.
//  3. A record whose command is not this sweep's task of that number
//     (SameCommand: parallel's quoting and a slot's number in {%} read as
//     the same command) is counted, never refused, for one warning; so is
//     a record of a task number the input does not have.
func Resume(tasks []job.Task, records map[int]JoblogEntry, failedOnly bool) Resumed {
	r := Resumed{Records: len(records)}
	inInput := 0
	for _, t := range tasks {
		e, ran := records[t.Seq]
		if ran {
			inInput++
			if !SameCommand(e.Command, t.Command) {
				if r.Changed++; r.Changed == 1 {
					r.First = Change{Seq: t.Seq, Recorded: e.Command, Now: t.Command}
				}
			}
		}
		if !ran || failedOnly && !e.Succeeded {
			r.Todo = append(r.Todo, t)
		}
	}
	r.Skipped = len(tasks) - len(r.Todo)
	r.Beyond = len(records) - inInput
	return r
}

// ResumeFlag is the flag that reads the joblog back, as the user gave it
// (failedOnly: --resume-failed).
func ResumeFlag(failedOnly bool) string {
	if failedOnly {
		return "--resume-failed"
	}
	return "--resume"
}

// SkipDone leaves out of tasks what an earlier run did, by its joblog
// (ReadJoblog, Resume: by task number whatever the command, as GNU
// parallel). A joblog that cannot be read back (a stream: JoblogStream)
// is refused, as is one that cannot be read or is no joblog; each error
// says so in one line with the fix.
func SkipDone(tasks []job.Task, joblog string, failedOnly bool) (Resumed, error) {
	flag := ResumeFlag(failedOnly)
	if JoblogStream(joblog) {
		return Resumed{}, fmt.Errorf("%s reads the --joblog of an earlier run back, and %s is not a file but a stream (gpulaunch's own output, a pipe, a terminal or a device): give the joblog's file, or drop %s", flag, joblog, flag)
	}
	done, err := ReadJoblog(joblog)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return Resumed{}, fmt.Errorf("--joblog %s: %v: %s cannot read it; nothing was started", joblog, pe.Err, flag)
	case err != nil:
		return Resumed{}, fmt.Errorf("--joblog %v: %s reads it as the joblog of an earlier run; nothing was started", err, flag)
	}
	return Resume(tasks, done, failedOnly), nil
}

// Warning is the one line that says how many of the joblog's records
// are not this sweep's commands (rule 3); "" when all are.
func (r Resumed) Warning(joblog string, failedOnly bool) string {
	if r.Changed == 0 && r.Beyond == 0 {
		return ""
	}
	var what []string
	if r.Changed > 0 {
		what = append(what, fmt.Sprintf("%d of its %d record(s) name another command than this sweep's task of that number (task %d: %q, now %q)",
			r.Changed, r.Records, r.First.Seq, r.First.Recorded, r.First.Now))
	}
	if r.Beyond > 0 {
		what = append(what, fmt.Sprintf("%d record(s) name task numbers beyond this input's %d tasks", r.Beyond, r.Skipped+len(r.Todo)))
	}
	then := "the recorded tasks are skipped"
	if failedOnly {
		then = "the failed ones run again with this sweep's command, the others count as done"
	}
	return fmt.Sprintf("--joblog %s: %s: %s goes by task number, as GNU parallel does, so %s; if the input changed, give this sweep its own --joblog",
		joblog, strings.Join(what, "; "), ResumeFlag(failedOnly), then)
}
