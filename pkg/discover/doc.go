// Package discover finds what this process may use: it opens the GPU
// backend that the flags and the environment name (a simulated node, a
// node file, the drivers), reads the machine and reconciles the allocation
// (binding.ReadWorld and binding.Reconcile, which read the scheduler
// through pkg/sched); MayBeRank tells from the environment alone whether
// a rank of several may only bind. Bad input is an InputError, which cmd/
// turns into exit 2.
package discover
