// Package mps is NVIDIA MPS for a run whose instances share GPUs (--mps):
// the rules of a shared plan — which slots are one GPU's clients, how
// many a GPU serves, each client's share of its GPU and what it is told
// (sharing.go, pure) —, how a plan's sharing is shown in the plan, the
// summary and the report (format.go, pure), whether the job has an MPS
// already (existing.go), and a run's MPS decided before anything starts
// (Prepare, rules R1–R6; its pure rules — the wait, the client's share,
// the pipe path's length, a stale directory — in run.go), and, for a run
// that has none of the job's, one control daemon per shared GPU for the
// length of the run (run_linux.go, daemon_linux.go): started before the
// instances, stopped after them on every way the run ends, and never
// outliving gpulaunch.
package mps
