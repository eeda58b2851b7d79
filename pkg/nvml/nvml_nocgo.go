//go:build !cgo

package nvml

import "github.com/gpulaunch/gpulaunch/pkg/gpu"

// Library is nil without cgo: go-nvml cannot be built, so gpu.Open reads
// NVIDIA's GPUs from sysfs and serves simulated nodes from their
// descriptions.
var Library gpu.NVML
