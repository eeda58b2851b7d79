package metrics

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpulaunch/gpulaunch/pkg/filelock"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
)

// LockFile makes this run the only writer of file: a second gpulaunch
// given the same file (a job submitted twice, a name without %j) would
// replace it every sample with its own run's series, so that series come
// and go and run_finished flips. The lock is the joblog's kind
// (pkg/filelock: dropped by the kernel however gpulaunch ends, SIGKILL
// included) on a hidden file beside it, .NAME.prom.lock — not on the file
// itself, which every write replaces — which node_exporter ignores (it
// reads *.prom) and the run removes at its end. A file system without
// locks: the run goes on unlocked, and unlocked says why. The returned
// function releases it; without a file it does nothing.
func LockFile(file string) (release func(), unlocked string, err error) {
	if file == "" {
		return func() {}, "", nil
	}
	path := filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".lock")
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("--metrics-file %s: its lock %s cannot be made: %v; nothing was started", file, path, outputs.Pathless(err))
	}
	switch err := filelock.Lock(f); {
	case err == nil:
		return func() { os.Remove(path); f.Close() }, "", nil
	case errors.Is(err, filelock.ErrHeld):
		f.Close()
		return nil, "", fmt.Errorf("--metrics-file %s: another gpulaunch on this node is writing it (it holds %s): give each run its own file, e.g. gpulaunch-%%j.prom; nothing was started", file, path)
	default: // any other answer, as no lock: the run goes on
		if statErr != nil {
			os.Remove(path)
		}
		f.Close()
		var ue *filelock.UnsupportedError
		if errors.As(err, &ue) {
			err = ue.Reason
		}
		return func() {}, fmt.Sprintf("--metrics-file %s: this file system does not lock files (%v): a second gpulaunch given the same file would not be refused", file, err), nil
	}
}
