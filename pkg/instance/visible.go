package instance

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// visibilityVars are every vendor's variables that say which GPUs a
// process may use. An instance gets its vendor's, and none inherited: a
// stale one (Slurm writes its list into all of them) would contradict it.
var visibilityVars = []string{
	"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK",
}

// visibleVars tell an instance its GPUs, own, as its vendor's runtime
// reads them. The rules:
//  1. NVIDIA: CUDA_VISIBLE_DEVICES, the GPUs' UUIDs (--gpu-ids index: CUDA's
//     ordinals), and CUDA_DEVICE_ORDER=PCI_BUS_ID so that ordinals follow
//     PCI order, as gpulaunch numbers them.
//  2. AMD: ROCR_VISIBLE_DEVICES alone, as ROCm recommends —
//     HIP_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES would select again
//     inside it and can leave a process no GPU (Parsl #3858 on Frontier):
//     the GPUs' UUIDs (GPU-<hex>), or ROCR's ordinals with --gpu-ids index;
//     a GPU without a unique id is named by its ordinal.
//  3. Intel: ZE_AFFINITY_MASK with Level Zero's ordinals, as it takes no
//     UUID — a tile's FLAT ordinal under FLAT and COMBINED, "card.tile"
//     under COMPOSITE, or "card" for every tile of one card — and
//     ZE_ENABLE_PCI_ID_DEVICE_ORDER=1, so that Level Zero's order is the
//     PCI order the ordinals were counted in.
//  4. An instance without a GPU: CUDA's and ROCR's variable empty (no
//     device). An empty ZE_AFFINITY_MASK masks nothing, so an Intel one
//     gets the ordinal one past the last device, which the runtime skips,
//     reporting none.
//  5. --gpu-visibility all: every GPU of the allocation, the instance's own
//     first for CUDA and ROCR, which number devices in list order; Level
//     Zero reports devices in its own order whatever the mask's, so there
//     the instance's own come where they fall (GPULAUNCH_GPUS names them).
func visibleVars(vendor gpu.Vendor, own []gpu.GPU, o EnvOptions) ([]string, error) {
	show := own
	if o.Visibility == VisibleAll {
		show = ownFirst(own, o.AllGPUs)
	}
	switch vendor {
	case gpu.AMD:
		ids, err := idList(show, o, func(g gpu.GPU) bool { return strings.HasPrefix(g.UUID, "GPU-") })
		return []string{"ROCR_VISIBLE_DEVICES=" + ids}, err
	case gpu.Intel:
		mask, err := zeMask(show, o)
		return []string{"ZE_AFFINITY_MASK=" + mask, "ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"}, err
	}
	ids, err := idList(show, o, func(gpu.GPU) bool { return true })
	return []string{"CUDA_VISIBLE_DEVICES=" + ids, "CUDA_DEVICE_ORDER=PCI_BUS_ID"}, err
}

// idList names gpus by UUID where hasUUID allows and --gpu-ids uuid, else
// by ordinal.
func idList(gpus []gpu.GPU, o EnvOptions, hasUUID func(gpu.GPU) bool) (string, error) {
	ids := make([]string, 0, len(gpus))
	for _, g := range gpus {
		if o.IDs != GPUIDsIndex && hasUUID(g) {
			ids = append(ids, g.UUID)
			continue
		}
		i, ok := o.Ordinal[g.UUID]
		if !ok {
			return "", fmt.Errorf("--gpu-ids index: %s has no ordinal (MIG devices are named by UUID only)", g.UUID)
		}
		ids = append(ids, strconv.Itoa(i))
	}
	return strings.Join(ids, ","), nil
}

// zeMask writes Level Zero's mask for tiles under o.ZEHierarchy (rules 3
// and 4); a card whose every tile is listed is named whole under
// COMPOSITE.
func zeMask(tiles []gpu.GPU, o EnvOptions) (string, error) {
	if len(tiles) == 0 {
		past := 0
		for _, n := range o.Ordinal {
			past = max(past, n+1)
		}
		if o.ZEHierarchy == binding.ZEComposite {
			past = 0
			for _, c := range o.CardOrdinal {
				past = max(past, c+1)
			}
		}
		return strconv.Itoa(past), nil
	}
	var entries []string
	perCard := map[int][]gpu.GPU{}
	for _, t := range tiles {
		n, ok := o.Ordinal[t.UUID]
		c, okCard := o.CardOrdinal[t.UUID]
		if !ok || !okCard {
			return "", fmt.Errorf("%s has no Level Zero ordinal", t.UUID)
		}
		if o.ZEHierarchy != binding.ZEComposite {
			entries = append(entries, strconv.Itoa(n))
			continue
		}
		perCard[c] = append(perCard[c], t)
	}
	for _, c := range slices.Sorted(maps.Keys(perCard)) {
		ts := perCard[c]
		if len(ts) == tilesOn(c, o) {
			entries = append(entries, strconv.Itoa(c))
			continue
		}
		for _, t := range ts {
			entries = append(entries, fmt.Sprintf("%d.%d", c, t.Tile))
		}
	}
	return strings.Join(entries, ","), nil
}

// tilesOn counts the tiles of card c among the devices this process can
// open.
func tilesOn(c int, o EnvOptions) int {
	n := 0
	for id, card := range o.CardOrdinal {
		if _, isDevice := o.Ordinal[id]; isDevice && card == c {
			n++
		}
	}
	return n
}
