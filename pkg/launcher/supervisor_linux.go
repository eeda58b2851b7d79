package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/process"
)

// forkJob starts slot i's job with env through spawn, on the slot's
// thread, without the supervisor's lock: it opens the job's output
// streams and forks. What it reads of the supervisor is fixed for the
// run.
func (s *supervisor) forkJob(i int, j job.Job, env []string, spawn process.SpawnFunc) (*process.Process, error) {
	sl := &s.slots[i]
	if j.ErrorFile != "" {
		// a fresh directory per attempt; torch's record does not make it
		if err := os.MkdirAll(filepath.Dir(j.ErrorFile), 0o700); err != nil {
			return nil, fmt.Errorf("instance %d: its error file's directory: %w", i, err)
		}
	}
	streams, err := s.openStreams(j, s.board.Output(i), &sl.readers)
	if err != nil {
		return nil, fmt.Errorf("instance %d: %w", i, err)
	}
	attr := &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{s.devnull.Fd(), streams[0].ChildFd(), streams[1].ChildFd()},
		// Own process group: signals go to the whole instance.
		// Parent-death signal: instances die with gpulaunch, even when it
		// is SIGKILLed.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	proc, err := spawn(process.Spawn{Path: j.Path, Argv: j.Args, Attr: attr, Streams: streams[:]})
	if err != nil {
		process.CloseStreams(streams[:])
		return nil, fmt.Errorf("instance %d: starting %s: %w", i, j.Path, err)
	}
	for _, st := range streams {
		st.CloseChild()
	}
	return proc, nil
}

// openStreams opens stdout and stderr for one start of j: to the console
// or to j's files (shared with every other job that names them:
// process.OutputFiles), and to the slot's output ring. Lines are labelled
// with -l wherever they go, as srun labels them in its files too. readers
// counts each stream until it has ended: the slot's ring ends after them.
func (s *supervisor) openStreams(j job.Job, ring *process.Ring, readers *sync.WaitGroup) (out [2]*process.Stream, err error) {
	paths := [2]string{j.Stdout, j.Stderr}
	own := [2]bool{j.Task.OwnStdout, j.Task.OwnStderr}
	for k, path := range paths {
		sink, release := []*process.LineMux{s.stdout, s.stderr}[k], func() {}
		if path != "" {
			if sink, release, err = s.files.Acquire(path, own[k]); err != nil {
				process.CloseStreams(out[:k])
				return out, err
			}
		}
		// counted before the fork: a stream may end on its own goroutine
		// at once
		readers.Add(1)
		ended := func() {
			release()
			readers.Done()
		}
		if out[k], err = process.OpenStream(sink, s.label(j.Label), ring, ended); err != nil {
			ended()
			process.CloseStreams(out[:k])
			return out, err
		}
	}
	return out, nil
}

// label is the console prefix of a job's lines: "3: ", or "node2:3: "
// over several nodes; "" without -l.
func (s *supervisor) label(n int) string {
	switch {
	case !s.spec.Label:
		return ""
	case s.spec.LabelHost != "":
		return fmt.Sprintf("%s:%d: ", s.spec.LabelHost, n)
	}
	return fmt.Sprintf("%d: ", n)
}
