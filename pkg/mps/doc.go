// Package mps is NVIDIA MPS for a run whose instances share GPUs (--mps):
// the rules of a shared plan — which slots are one GPU's clients, how
// many a GPU serves, each client's share of its GPU and what it is told
// (sharing.go, pure) —, whether the job has an MPS already (existing.go),
// and, for a run that has none, one control daemon per shared GPU for the
// length of the run (daemon_linux.go): started before the instances,
// stopped after them on every way the run ends, and never outliving
// gpulaunch.
package mps
