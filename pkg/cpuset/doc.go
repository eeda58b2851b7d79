// Package cpuset is a set of small non-negative ids — logical CPUs or NUMA
// nodes — in the list format the kernel prints in sysfs and /proc
// ("0-3,8,10-11") and the hex mask format of local_cpus and Cpus_allowed.
//
// A Set is a value: every operation returns a new Set and never changes its
// operands, so sets can be shared freely between the planner's slots.
package cpuset
