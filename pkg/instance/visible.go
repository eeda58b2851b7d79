package instance

import (
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
)

// visibleVars tell an instance its GPUs, own, as its vendor's runtime
// reads them. The rules:
//  1. The vendor's variables, as its value writes them
//     (gpuvendor.Vendor.Tell: CUDA_VISIBLE_DEVICES and CUDA's PCI order,
//     ROCR_VISIBLE_DEVICES alone, ZE_AFFINITY_MASK and Level Zero's PCI
//     order), naming GPUs by UUID, or by ordinal with --gpu-ids index (and
//     always for Level Zero).
//  2. An instance without a GPU is told no device, in its vendor's way.
//  3. --gpu-visibility all: every GPU of the allocation, the instance's own
//     first for CUDA and ROCR, which number devices in list order; Level
//     Zero reports devices in its own order whatever the mask's, so there
//     the instance's own come where they fall (GPULAUNCH_GPUS names them).
func visibleVars(vendor gpu.Vendor, own []gpu.GPU, o EnvOptions) ([]string, error) {
	show := own
	if o.Visibility == VisibleAll {
		show = ownFirst(own, o.AllGPUs)
	}
	return gpuvendor.Of(vendor).Tell(show, gpuvendor.Naming{ByIndex: o.IDs == GPUIDsIndex, Ordinal: o.Ordinal, CardOrdinal: o.CardOrdinal, Model: o.ZEHierarchy})
}
