// Package nvml adapts NVIDIA's management library, through go-nvml, to
// pkg/gpu's vendor-neutral types: the only package of gpulaunch that
// imports go-nvml, and only with cgo (nvml_cgo.go). It also serves the
// simulated NVIDIA nodes through go-nvml's mock of NVML, with the GPUs of
// its mock servers of the same machines (simulated_cgo.go), so that
// simulated runs take the same code path as real ones.
package nvml
