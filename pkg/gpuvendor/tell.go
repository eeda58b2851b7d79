package gpuvendor

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// idList names gpus by UUID where hasUUID allows and --gpu-ids uuid, else
// by ordinal (rules 1 and 2).
func idList(gpus []gpu.GPU, n Naming, hasUUID func(gpu.GPU) bool) (string, error) {
	ids := make([]string, 0, len(gpus))
	for _, g := range gpus {
		if !n.ByIndex && hasUUID(g) {
			ids = append(ids, g.UUID)
			continue
		}
		i, ok := n.Ordinal[g.UUID]
		if !ok {
			return "", fmt.Errorf("--gpu-ids index: %s has no ordinal (MIG devices are named by UUID only)", g.UUID)
		}
		ids = append(ids, strconv.Itoa(i))
	}
	return strings.Join(ids, ","), nil
}

// zeMask writes Level Zero's mask for tiles under n.Model (rules 3
// and 4); a card whose every tile is listed is named whole under
// COMPOSITE.
func zeMask(tiles []gpu.GPU, n Naming) (string, error) {
	if len(tiles) == 0 {
		past := 0
		for _, o := range n.Ordinal {
			past = max(past, o+1)
		}
		if n.Model == ZEComposite {
			past = 0
			for _, c := range n.CardOrdinal {
				past = max(past, c+1)
			}
		}
		return strconv.Itoa(past), nil
	}
	var entries []string
	perCard := map[int][]gpu.GPU{}
	for _, t := range tiles {
		o, ok := n.Ordinal[t.UUID]
		c, okCard := n.CardOrdinal[t.UUID]
		if !ok || !okCard {
			return "", fmt.Errorf("%s has no Level Zero ordinal", t.UUID)
		}
		if n.Model != ZEComposite {
			entries = append(entries, strconv.Itoa(o))
			continue
		}
		perCard[c] = append(perCard[c], t)
	}
	for _, c := range slices.Sorted(maps.Keys(perCard)) {
		ts := perCard[c]
		if len(ts) == tilesOn(c, n) {
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
func tilesOn(c int, n Naming) int {
	count := 0
	for id, card := range n.CardOrdinal {
		if _, isDevice := n.Ordinal[id]; isDevice && card == c {
			count++
		}
	}
	return count
}
