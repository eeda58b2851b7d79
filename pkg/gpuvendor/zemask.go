package gpuvendor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// Level Zero's device hierarchies (ZE_FLAT_DEVICE_HIERARCHY): whether a
// multi-tile GPU is one device with sub-devices (COMPOSITE) or each tile a
// device of its own (FLAT, the default since late 2023, and COMBINED,
// which adds the composite view on top).
const (
	ZEFlat      = "FLAT"
	ZEComposite = "COMPOSITE"
	ZECombined  = "COMBINED"
)

// ZEHierarchy reads ZE_FLAT_DEVICE_HIERARCHY: FLAT when unset; false for a
// value Level Zero does not know.
func ZEHierarchy(value string) (string, bool) {
	switch v := strings.ToUpper(strings.TrimSpace(value)); v {
	case "":
		return ZEFlat, true
	case ZEFlat, ZEComposite, ZECombined:
		return v, true
	}
	return ZEFlat, false
}

// ZEMask is a parsed ZE_AFFINITY_MASK (the Level Zero core spec,
// "Affinity Mask"), read as Intel's compute runtime reads it (NEO,
// ExecutionEnvironment::parseAffinityMask):
//
//   - a comma-separated list of device ordinals, spaces allowed; the order
//     of the entries does not change the order devices are reported in;
//   - in the COMPOSITE hierarchy an entry is a GPU, "N", or one of its
//     tiles, "N.M"; in FLAT and COMBINED the tiles are the devices, an
//     entry is a tile's ordinal, and an "N.M" entry is skipped;
//   - an entry naming no device is skipped;
//   - set but empty, like unset, masks nothing: every device is reported;
//   - gpulaunch ends the list at an entry that is not an ordinal (the
//     runtime's reading of one is unspecified).
type ZEMask struct {
	Set     bool // not empty: the mask selects
	Entries []ZEEntry
	Stop    string // the entry that ended the list early and why
}

// ZEEntry is one entry: a device ordinal, and a sub-device (tile) ordinal
// or -1 for the whole device.
type ZEEntry struct{ Device, Sub int }

func (e ZEEntry) String() string {
	if e.Sub < 0 {
		return strconv.Itoa(e.Device)
	}
	return fmt.Sprintf("%d.%d", e.Device, e.Sub)
}

// ParseZEMask parses ZE_AFFINITY_MASK.
func ParseZEMask(value string) ZEMask {
	var m ZEMask
	if strings.TrimSpace(value) == "" || strings.TrimSpace(value) == "default" {
		return m
	}
	m.Set = true
	for _, raw := range strings.Split(value, ",") {
		dev, sub, hasSub := strings.Cut(strings.TrimSpace(raw), ".")
		e := ZEEntry{Sub: -1}
		var err error
		if e.Device, err = strconv.Atoi(dev); err != nil || !isDigits(dev) {
			m.Stop = fmt.Sprintf("%q is not a device ordinal", raw)
			return m
		}
		if hasSub {
			if e.Sub, err = strconv.Atoi(sub); err != nil || !isDigits(sub) {
				m.Stop = fmt.Sprintf("%q is not a device.tile ordinal", raw)
				return m
			}
		}
		m.Entries = append(m.Entries, e)
	}
	return m
}

// Resolve maps the entries to devices under a hierarchy (ZEHierarchy):
// cards are the GPUs visible in the order Level Zero reports them (PCI
// order, ZE_ENABLE_PCI_ID_DEVICE_ORDER), each with its tiles (a card
// without tiles is its own only device). The devices come back in that
// order, whatever the order of the entries; why says what was skipped or
// why the list ended, "" when nothing was.
func (m ZEMask) Resolve(cards []gpu.GPU, hierarchy string) (devices []gpu.GPU, why string) {
	var flat []gpu.GPU
	for _, c := range cards {
		flat = append(flat, tilesOf(c)...)
	}
	if !m.Set {
		return flat, ""
	}
	picked := map[string]bool{}
	for _, e := range m.Entries {
		got, skip := m.devicesOf(e, cards, flat, hierarchy)
		if skip != "" && why == "" {
			why = skip
		}
		for _, g := range got {
			picked[g.UUID] = true
		}
	}
	if why == "" {
		why = m.Stop
	}
	return pickedIn(flat, picked), why
}

// devicesOf is what one entry names, or why it is skipped.
func (m ZEMask) devicesOf(e ZEEntry, cards, flat []gpu.GPU, hierarchy string) ([]gpu.GPU, string) {
	switch {
	case hierarchy != ZEComposite && e.Sub >= 0:
		return nil, fmt.Sprintf("%s names a tile, which the %s hierarchy does not have (each tile is a device of its own): skipped", e, hierarchy)
	case hierarchy != ZEComposite && e.Device >= len(flat):
		return nil, fmt.Sprintf("device %d is beyond the %d tile(s) visible: skipped", e.Device, len(flat))
	case hierarchy != ZEComposite:
		return flat[e.Device : e.Device+1], ""
	case e.Device >= len(cards):
		return nil, fmt.Sprintf("device %d is beyond the %d GPU(s) visible: skipped", e.Device, len(cards))
	case e.Sub < 0:
		return tilesOf(cards[e.Device]), ""
	case e.Sub < len(tilesOf(cards[e.Device])):
		return tilesOf(cards[e.Device])[e.Sub : e.Sub+1], ""
	}
	return nil, fmt.Sprintf("%s: GPU %d has %d tile(s): skipped", e, e.Device, len(tilesOf(cards[e.Device])))
}

// tilesOf is a card's devices under FLAT: its tiles, or itself.
func tilesOf(card gpu.GPU) []gpu.GPU {
	if len(card.Tiles) > 0 {
		return card.Tiles
	}
	return []gpu.GPU{card}
}

func pickedIn(flat []gpu.GPU, picked map[string]bool) []gpu.GPU {
	var out []gpu.GPU
	for _, g := range flat {
		if picked[g.UUID] {
			out = append(out, g)
		}
	}
	return out
}
