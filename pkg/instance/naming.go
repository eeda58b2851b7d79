package instance

import "fmt"

// ParseGPUNaming reads how an instance is told its GPUs (--gpu-ids,
// --gpu-visibility): each one of its values, named in the refusal.
func ParseGPUNaming(gpuIDs, visibility string) (GPUIDs, Visibility, error) {
	ids, vis := GPUIDs(gpuIDs), Visibility(visibility)
	if ids != GPUIDsUUID && ids != GPUIDsIndex {
		return ids, vis, fmt.Errorf("--gpu-ids %q: use uuid or index", gpuIDs)
	}
	if vis != VisibleOwn && vis != VisibleAll {
		return ids, vis, fmt.Errorf("--gpu-visibility %q: use own or all", visibility)
	}
	return ids, vis, nil
}
