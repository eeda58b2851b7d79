package launcher

import (
	"fmt"
	"syscall"
)

// forkJob starts slot i's job with env through fork, on the slot's
// thread, without the supervisor's lock: it opens the job's output
// streams and forks. What it reads of the supervisor is fixed for the
// run.
func (s *supervisor) forkJob(i int, j job, env []string, fork forkFunc) (*process, error) {
	sl := &s.slots[i]
	streams, err := s.openStreams(j, s.board.Output(i))
	if err != nil {
		return nil, fmt.Errorf("instance %d: %w", i, err)
	}
	attr := &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{s.devnull.Fd(), uintptr(streams[0].child), uintptr(streams[1].child)},
		// Own process group: signals go to the whole instance.
		// Parent-death signal: instances die with gpulaunch, even when it
		// is SIGKILLed.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	for _, st := range streams {
		// counted before the fork: a stream may end on its own goroutine
		// at once
		sl.readers.Add(1)
		release := st.ended
		st.ended = func() {
			release()
			sl.readers.Done()
		}
	}
	proc, err := fork(launch{j.path, j.args, attr, streams[:]})
	if err != nil {
		closeStreams(streams[:])
		return nil, fmt.Errorf("instance %d: starting %s: %w", i, j.path, err)
	}
	for _, st := range streams {
		_ = syscall.Close(st.child)
	}
	return proc, nil
}

// openStreams opens stdout and stderr for one start of j: to the console
// or to j's files (shared with every other job that names them:
// outputFiles), and to the slot's output ring. Lines are labelled with
// -l wherever they go, as srun labels them in its files too.
func (s *supervisor) openStreams(j job, ring *Ring) (out [2]*stream, err error) {
	paths := [2]string{j.stdout, j.stderr}
	own := [2]bool{j.task.OwnStdout, j.task.OwnStderr}
	for k, path := range paths {
		sink, release := []*lineMux{s.stdout, s.stderr}[k], func() {}
		if path != "" {
			if sink, release, err = s.files.acquire(path, own[k]); err != nil {
				closeStreams(out[:k])
				return out, err
			}
		}
		fd, child, err := outputPipe()
		if err != nil {
			release()
			closeStreams(out[:k])
			return out, err
		}
		out[k] = &stream{child: child, fd: fd, copier: sink.copier(s.label(j.label), ring), ended: release}
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

// closeStreams gives up streams that no process will write.
func closeStreams(ss []*stream) {
	for _, s := range ss {
		s.close()
		s.ended()
	}
}
