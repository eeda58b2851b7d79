// Package gpu is gpulaunch's view of a node's accelerators, whoever made
// them: their identity, PCI address, memory, NUMA locality and the devices
// they split into (NVIDIA MIG devices, Intel tiles), and, for simulated and
// described nodes, the CPU layout.
//
// The rest of gpulaunch sees only the plain structs and the Source
// interface here. The backends sit side by side, one entry each in
// backends (backends.go), which Open and the descriptions ask rather than
// switch on a vendor's name:
//
//   - NVIDIA: NVML, adapted in pkg/nvml (the only package importing
//     go-nvml, handed to Open as NVML); without it /proc/driver/nvidia and
//     sysfs (nvidia.go);
//   - AMD: the KFD topology in sysfs, and amdgpu's sysfs for telemetry
//     (amd.go), as AMD's own device plugin reads them;
//   - Intel: the DRM devices in sysfs, with their tiles (intel.go);
//   - described nodes: topology files, the built-in simulated nodes
//     (nodes/*.json) and node files (topology.go).
//
// Open picks one; the rules are numbered above it. What a vendor's runtime
// is told (its visibility variable and grammar, its ordinals) is
// pkg/gpuvendor's, above this package.
package gpu
