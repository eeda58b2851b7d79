package cgroup

import (
	"fmt"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// ParseProcStatus reads Cpus_allowed_list and Mems_allowed_list from
// /proc/<pid>/status.
func ParseProcStatus(s string) (cpus, mems cpuset.Set, err error) {
	for _, line := range strings.Split(s, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch key {
		case "Cpus_allowed_list":
			if cpus, err = cpuset.Parse(val); err != nil {
				return cpus, mems, fmt.Errorf("/proc/self/status: %w", err)
			}
		case "Mems_allowed_list":
			if mems, err = cpuset.Parse(val); err != nil {
				return cpus, mems, fmt.Errorf("/proc/self/status: %w", err)
			}
		}
	}
	return cpus, mems, nil
}
