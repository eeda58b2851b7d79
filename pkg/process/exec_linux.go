package process

import (
	"fmt"
	"runtime"
	"syscall"
)

// Exec replaces gpulaunch with the app, bound: the rank-wrapper mode, where
// a launcher (srun, mpirun, hydra) must remain the app's parent. The
// calling thread is locked and bound, and execve keeps that thread's CPU
// affinity and memory policy for the new program's only thread. It returns
// only on failure, with nothing started.
func Exec(b Binding, path string, argv, env []string) error {
	runtime.LockOSThread()
	// On failure the thread stays locked, and bound, until the caller
	// exits: it must not run other goroutines with this binding.
	if err := bindThread(b); err != nil {
		return err
	}
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}
