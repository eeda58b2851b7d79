// Package launcher starts each slot of a binding.Plan through a re-exec
// shim that applies the slot's CPU affinity and memory policy before
// execve, and supervises the instances until every one has exited.
package launcher
