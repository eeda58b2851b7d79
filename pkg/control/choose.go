//go:build linux

package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// Choice is how a client command (status, top, logs, signal) was told
// which running gpulaunch to talk to: --pid, --socket, or neither.
type Choice struct {
	PID      int
	PIDGiven bool // --pid was on the command line (0 given is not "none")
	Socket   string
}

// A Refusal is a choice of run that cannot be right whatever runs here:
// the user's to fix (gpulaunch exits 2), where other errors of Choose
// say that no such run is found now.
type Refusal struct{ error }

func refuse(format string, args ...any) error { return Refusal{fmt.Errorf(format, args...)} }

// Choose is the running gpulaunch the user means: its rules, in order,
// with dirs where this user's sockets live, host this node and jobID the
// Slurm job this shell is in ("" outside a job):
//  1. --pid negative is refused.
//  2. --pid and --socket together are refused: they both choose.
//  3. --socket PATH is that socket, once checked to be one
//     (CheckSocket): a mistyped path is not a run that has ended.
//  4. --pid given as 0 is refused.
//  5. --pid PID is that pid's socket on this node; none is not found.
//  6. Neither: the one run of the job (of this user, outside a job);
//     several are refused, each described, to choose from with --pid;
//     none is not found, with where it looked and, in a job, the runs of
//     other jobs here or how to reach another node of the job.
func Choose(c Choice, dirs []string, host, jobID string) (Client, error) {
	switch {
	case c.PID < 0:
		return Client{}, refuse("--pid %d: a process id is a positive number (see `gpulaunch status` for the runs here)", c.PID)
	case c.Socket != "" && c.PID != 0:
		return Client{}, refuse("--pid and --socket both choose the gpulaunch: give one")
	case c.Socket != "":
		return Client{Path: c.Socket}, CheckSocket(c.Socket, dirs, host)
	case c.PIDGiven && c.PID <= 0:
		return Client{}, refuse("--pid %d: give the pid of a running gpulaunch of yours on this node (`gpulaunch status` lists them when there are several)", c.PID)
	case c.PID != 0:
		for _, d := range dirs {
			p := filepath.Join(d, SocketName(host, c.PID))
			if _, err := os.Lstat(p); err == nil {
				return Client{Path: p}, nil
			}
		}
		return Client{}, fmt.Errorf("no control socket of pid %d in %s: is that a running gpulaunch of yours on this node (%s)?", c.PID, strings.Join(dirs, ", "), host)
	}
	runs, err := Find(dirs, host, jobID)
	if err != nil {
		return Client{}, err
	}
	switch {
	case len(runs) == 1:
		return runs[0].Client, nil
	case len(runs) > 1:
		return Client{}, refuse("%d gpulaunch runs%s on %s: %s; choose one with --pid", len(runs), ofJob(jobID), host, describeRuns(runs))
	}
	msg := fmt.Sprintf("no running gpulaunch%s on %s (looked in %s)", ofJob(jobID), host, strings.Join(dirs, ", "))
	if jobID != "" {
		if others, _ := Find(dirs, host, ""); len(others) > 0 {
			msg += fmt.Sprintf("; %d of other jobs or none run here (%s): choose with --pid", len(others), describeRuns(others))
		} else {
			msg += fmt.Sprintf(": status talks to the gpulaunch of this node; for one on another node of the job use `srun --jobid %s --overlap -w NODE gpulaunch status`", jobID)
		}
	}
	return Client{}, errors.New(msg)
}

func ofJob(job string) string {
	if job == "" {
		return ""
	}
	return " of job " + job
}

// describeRuns lists runs for the user to choose from: "pid 123 (python
// train.py, started 10:04:05); …".
func describeRuns(runs []Run) string {
	list := make([]string, len(runs))
	for i, r := range runs {
		cmd := taskqueue.ShellJoin(r.Info.Command)
		if len(cmd) > 40 {
			cmd = cmd[:37] + "..."
		}
		list[i] = fmt.Sprintf("pid %d (%s, started %s)", r.Info.PID, cmd, r.Info.Started.Format("15:04:05"))
	}
	return strings.Join(list, "; ")
}

// CheckSocket checks --socket PATH before anything dials it: a path
// with nothing there, or something that is not a socket, is a mistyped
// path, not a gpulaunch that has ended (a Refusal, saying where a run's
// socket is).
func CheckSocket(path string, dirs []string, host string) error {
	fi, err := os.Stat(path)
	where := fmt.Sprintf("a run's socket is %s in %s; `gpulaunch status` without --socket finds the one of this job",
		strings.Replace(SocketName(host, 1), ".1.sock", ".PID.sock", 1), strings.Join(dirs, " or "))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return refuse("--socket %s: no such file: %s", path, where)
	case err != nil:
		return refuse("--socket %s: %v", path, err)
	case fi.Mode()&os.ModeSocket == 0:
		return refuse("--socket %s is %s, not a socket: %s", path, fileKind(fi), where)
	}
	return nil
}

// fileKind names what a path is, for messages.
func fileKind(fi fs.FileInfo) string {
	switch {
	case fi.IsDir():
		return "a directory"
	case fi.Mode().IsRegular():
		return "a regular file"
	case fi.Mode()&os.ModeNamedPipe != 0:
		return "a named pipe"
	case fi.Mode()&os.ModeDevice != 0:
		return "a device"
	}
	return "not a plain file"
}
