package gpuvendor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// AMDVisible is a parsed ROCR_VISIBLE_DEVICES, or a HIP_VISIBLE_DEVICES /
// CUDA_VISIBLE_DEVICES as HIP reads it. The grammar, as ROCm documents it
// and PyTorch's parser mirrors it (torch/cuda/__init__.py,
// _parse_visible_devices):
//
//   - a comma-separated list of entries, each a device index or a UUID
//     GPU-<hex> (rocminfo's form, the unique id in hex), a unique prefix
//     of one allowed; spaces around an entry are ignored;
//   - set but empty: no GPU;
//   - the list ends at the first entry that is neither, as CUDA's does.
//
// ROCR applies its list first; HIP then applies its own list to the GPUs
// ROCR left, numbering them from 0 (AMD's value's Inner; binding.Reconcile's rule 5).
type AMDVisible struct {
	Entries []string // indices in decimal, UUIDs with their GPU- prefix, lower case
	// Stop is the entry that ended the list early and why; "" when every
	// entry was read.
	Stop string
}

// ParseAMDVisible parses the value of an AMD visibility variable.
func ParseAMDVisible(value string) AMDVisible {
	var v AMDVisible
	if strings.TrimSpace(value) == "" {
		return v
	}
	for _, raw := range strings.Split(value, ",") {
		e := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(strings.ToUpper(e), "GPU-") && len(e) > 4 && isHex(e[4:]):
			v.Entries = append(v.Entries, "GPU-"+strings.ToLower(e[4:]))
		case e != "" && isDigits(e):
			n, err := strconv.Atoi(e)
			if err != nil {
				v.Stop = fmt.Sprintf("%q is not a GPU index", raw)
				return v
			}
			v.Entries = append(v.Entries, strconv.Itoa(n))
		default:
			v.Stop = fmt.Sprintf("%q is not a GPU index or GPU-<hex> UUID", raw)
			return v
		}
	}
	return v
}

// Resolve maps the entries to the GPUs visible, in the order the runtime
// numbers them (KFD's node order; for HIP, ROCR's list). Resolution stops
// at the first entry that names no GPU or is ambiguous; a GPU named twice
// leaves none, as for CUDA.
func (v AMDVisible) Resolve(visible []gpu.GPU) (gpus []gpu.GPU, stop string) {
	lookup := func(e string) (gpu.GPU, string) {
		if strings.HasPrefix(e, "GPU-") {
			return matchUUID(e, visible)
		}
		if i, _ := strconv.Atoi(e); i < len(visible) {
			return visible[i], ""
		}
		return gpu.GPU{}, fmt.Sprintf("index %s is beyond the %d GPU(s) visible", e, len(visible))
	}
	twice := func(e string, _ gpu.GPU) string { return fmt.Sprintf("it names %s twice", e) }
	return resolveInOrder(v.Entries, v.Stop, lookup, twice)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}
