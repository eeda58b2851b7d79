//go:build !cgo

package nvml

import "io/fs"

// OpenNVML cannot load NVML without cgo; Open then falls back to sysfs.
func OpenNVML(fs.FS) (Source, error) { return nil, ErrNoCgo }

// simulatedSource serves the description directly: go-nvml's mock servers
// need cgo, so builds without it skip the NVML adapter.
func simulatedSource(t Topology, usageDir string) (Source, error) {
	n := t.Node("simulated " + t.Name + " (no cgo: description only)")
	return staticSource{node: n, usageDir: usageDir}, nil
}
