package mps

import "strings"

// DefaultPipeDir is where MPS's daemon and clients meet when
// CUDA_MPS_PIPE_DIRECTORY is unset (NVIDIA's MPS documentation).
const DefaultPipeDir = "/tmp/nvidia-mps"

// Existing is an MPS the job has already, which gpulaunch uses instead of
// starting its own: a second daemon for the same GPUs would compete with
// the first.
type Existing struct {
	// PipeDir is where its daemon answers.
	PipeDir string
	// From says how gpulaunch knows of it, for the log.
	From string
}

// FindExisting is the job's MPS, or nil. The rules, in order:
//
//	E1. CUDA_MPS_PIPE_DIRECTORY is set: the job's MPS is there (a site
//	    prolog or wrapper started it, and every client must use that
//	    directory).
//	E2. Another CUDA_MPS_* is set (Slurm's gres/mps sets
//	    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and leaves the daemon to a
//	    prolog, at the default directory): the job's MPS is at
//	    DefaultPipeDir.
//	E3. A daemon answers at DefaultPipeDir (answers, which asks it): a
//	    daemon of this user, or the node's.
//
// Otherwise the job has none, and gpulaunch starts its own.
func FindExisting(env map[string]string, answers func(pipeDir string) bool) *Existing {
	if d := env["CUDA_MPS_PIPE_DIRECTORY"]; d != "" {
		return &Existing{PipeDir: d, From: "CUDA_MPS_PIPE_DIRECTORY"}
	}
	for k := range env {
		if strings.HasPrefix(k, "CUDA_MPS_") {
			return &Existing{PipeDir: DefaultPipeDir, From: k + " (Slurm's gres/mps, or a site's MPS)"}
		}
	}
	if answers != nil && answers(DefaultPipeDir) {
		return &Existing{PipeDir: DefaultPipeDir, From: "a daemon answering at " + DefaultPipeDir}
	}
	return nil
}
