package gpuvendor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// VisibleDevices is a parsed CUDA_VISIBLE_DEVICES, following CUDA's grammar
// (CUDA Programming Guide, "CUDA Environment Variables", and PyTorch's
// _parse_visible_devices, which mirrors it):
//
//   - unset: every GPU; set but empty: no GPU;
//   - a comma-separated list of integer ordinals, of GPU-<uuid> or of
//     MIG-<uuid> ids; a UUID may be shortened to a unique prefix;
//   - integers are read like strtoul ("1gpu2" is 1);
//   - the kind of the first entry sets the kind of the list, and the list
//     ends at the first entry that is invalid or of another kind: "0,2,-1,1"
//     is GPUs 0 and 2.
type VisibleDevices struct {
	Set     bool     // the variable exists
	Kind    string   // "index", "GPU" or "MIG"; "" for an empty list
	Entries []string // the valid entries, in order (indices in decimal)
	// Stop is the entry that ended the list early and why; "" when every
	// entry was read.
	Stop string
}

// ParseVisibleDevices parses the value of CUDA_VISIBLE_DEVICES; set says
// whether the variable exists at all.
func ParseVisibleDevices(value string, set bool) VisibleDevices {
	vd := VisibleDevices{Set: set}
	if !set || strings.TrimSpace(value) == "" {
		return vd
	}
	for _, raw := range strings.Split(value, ",") {
		e := strings.TrimSpace(raw)
		kind, norm, ok := classify(e)
		if !ok {
			vd.Stop = fmt.Sprintf("%q is not a GPU index or UUID", raw)
			return vd
		}
		if vd.Kind == "" {
			vd.Kind = kind
		} else if kind != vd.Kind {
			vd.Stop = fmt.Sprintf("%q mixes a %s id into a list of %s ids", raw, kind, vd.Kind)
			return vd
		}
		vd.Entries = append(vd.Entries, norm)
	}
	return vd
}

func classify(e string) (kind, norm string, ok bool) {
	switch {
	case strings.HasPrefix(e, "GPU-"):
		return "GPU", strings.ToLower(e[4:]), true
	case strings.HasPrefix(e, "MIG-"):
		return "MIG", strings.ToLower(e[4:]), true
	}
	digits := 0
	for digits < len(e) && e[digits] >= '0' && e[digits] <= '9' {
		digits++
	}
	if digits == 0 {
		return "", "", false
	}
	n, err := strconv.Atoi(e[:digits])
	if err != nil {
		return "", "", false
	}
	return "index", strconv.Itoa(n), true
}

// Resolve maps the entries to devices. visible are the physical GPUs this
// process can open, in PCI bus order: CUDA numbers them from 0 in that order
// (with CUDA_DEVICE_ORDER=PCI_BUS_ID, which gpulaunch always sets for its
// children, and in practice on homogeneous nodes). UUIDs and prefixes match
// GPU or MIG UUIDs. Resolution stops, as CUDA does, at the first entry that
// names no device or is ambiguous; stop says why. A device named twice makes
// CUDA see none, so Resolve then returns no device and says so.
func (vd VisibleDevices) Resolve(visible []gpu.GPU) (gpus []gpu.GPU, stop string) {
	lookup := func(e string) (gpu.GPU, string) {
		switch vd.Kind {
		case "GPU":
			return matchUUID("GPU-"+e, visible)
		case "MIG":
			var migs []gpu.GPU
			for _, v := range visible {
				migs = append(migs, v.MIG...)
			}
			return matchUUID("MIG-"+e, migs)
		}
		i, _ := strconv.Atoi(e)
		if i >= len(visible) {
			return gpu.GPU{}, fmt.Sprintf("index %d is beyond the %d GPU(s) this process can open", i, len(visible))
		}
		return visible[i], ""
	}
	twice := func(e string, g gpu.GPU) string {
		name := g.UUID
		if vd.Kind == "index" {
			name = "GPU " + e
		}
		return fmt.Sprintf("it names %s twice, and CUDA then sees no GPU at all", name)
	}
	return resolveInOrder(vd.Entries, vd.Stop, lookup, twice)
}

// resolveInOrder is the rule CUDA and HIP share for a visibility list:
// the entries are looked up in order, the first that names no device
// ends the list (its why is the stop), and a device named twice leaves
// none (twice says so).
func resolveInOrder(entries []string, stop string, lookup func(e string) (gpu.GPU, string), twice func(e string, g gpu.GPU) string) ([]gpu.GPU, string) {
	var gpus []gpu.GPU
	seen := map[string]bool{}
	for _, e := range entries {
		g, why := lookup(e)
		if why != "" {
			return gpus, why
		}
		if seen[g.UUID] {
			return nil, twice(e, g)
		}
		seen[g.UUID] = true
		gpus = append(gpus, g)
	}
	return gpus, stop
}

func matchUUID(prefix string, devices []gpu.GPU) (gpu.GPU, string) {
	var found []gpu.GPU
	for _, d := range devices {
		if d.UUID == prefix {
			return d, ""
		}
		if strings.HasPrefix(strings.ToLower(d.UUID), strings.ToLower(prefix)) {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 1:
		return found[0], ""
	case 0:
		return gpu.GPU{}, fmt.Sprintf("%s matches no GPU this process can open", prefix)
	}
	return gpu.GPU{}, fmt.Sprintf("%s is ambiguous: it is a prefix of %d GPUs' UUIDs", prefix, len(found))
}
