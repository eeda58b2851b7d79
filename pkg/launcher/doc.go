// Package launcher starts each slot of a binding.Plan with the slot's CPU
// affinity and memory policy applied before the app's first instruction,
// and supervises the instances until every one has exited.
package launcher
