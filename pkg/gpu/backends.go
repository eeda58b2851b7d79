package gpu

import (
	"fmt"
	"strings"
)

// backend is what this package knows of one vendor's GPUs: how this
// machine's are found and how a described one is identified. What the
// vendor's runtime is told (its variable, grammar, ordinals) is
// pkg/gpuvendor's value; a new vendor is one entry here, its backend
// file beside nvidia.go, amd.go and intel.go, and its value there.
type backend struct {
	vendor Vendor
	// open is this machine's backend for the vendor's GPUs (Open's rule
	// 3); its Inventory is read next, once.
	open func(o Options) (Source, error)
	// identify checks a described GPU and gives it its id, as the backend
	// would (Topology; the device file is renderNode's).
	identify func(t Topology, g *GPU, tg TopologyGPU, i int) error
	// renderNode: a GPU's device file, which a device cgroup decides, is
	// its DRM render node (else /dev/nvidia<minor>).
	renderNode bool
	// tiles: a device with a parent is one of its GPU's tiles, at the
	// GPU's address (else a MIG device, which its UUID names).
	tiles bool
	// sharedBus: the partitions of one GPU are GPUs of their own at its
	// PCI address.
	sharedBus bool
}

// backends are every vendor's, in the order Open looks for their GPUs.
var backends = []backend{
	{vendor: NVIDIA, open: openNVIDIA, identify: identifyNVIDIA},
	{vendor: AMD, open: openAMD, identify: identifyAMD, renderNode: true, sharedBus: true},
	{vendor: Intel, open: openIntel, identify: identifyIntel, renderNode: true, tiles: true},
}

// backendOf is vendor v's backend; NVIDIA's, the default of a
// description, for a vendor not known.
func backendOf(v Vendor) backend {
	for _, b := range backends {
		if b.vendor == v {
			return b
		}
	}
	return backends[0]
}

// ParseVendor reads a vendor's name.
func ParseVendor(s string) (Vendor, bool) {
	for _, b := range backends {
		if string(b.vendor) == s {
			return b.vendor, true
		}
	}
	return "", false
}

// VendorNames lists the vendors' names for a message: "nvidia, amd or
// intel".
func VendorNames() string {
	names := make([]string, len(backends))
	for i, b := range backends {
		names[i] = string(b.vendor)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// uuidOfGPU checks a described id in the GPU-… shape that NVIDIA's and
// AMD's runtimes take.
func uuidOfGPU(uuid string) error {
	if !strings.HasPrefix(uuid, "GPU-") {
		return fmt.Errorf("uuid %q does not start with GPU-", uuid)
	}
	return nil
}
