package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// NormalizeBusID turns any PCI address form gpulaunch meets into the sysfs
// form "dddd:bb:dd.f" (lower case, 4-digit domain):
//
//	NVML busId        "00000000:3B:00.0"  (8-digit domain, upper case)
//	NVML busIdLegacy  "0000:3B:00.0"
//	/proc/driver      "0000:3b:00.0"
//	short             "3b:00.0"           (domain 0)
//
// Comparing the parsed numbers, not the strings, is what makes NVML ids
// and sysfs ids meet.
func NormalizeBusID(s string) (string, error) {
	s = strings.TrimSpace(strings.TrimRight(s, "\x00"))
	parts := strings.Split(s, ":")
	var dom, bus, devfn string
	switch len(parts) {
	case 3:
		dom, bus, devfn = parts[0], parts[1], parts[2]
	case 2:
		dom, bus, devfn = "0", parts[0], parts[1]
	default:
		return "", fmt.Errorf("PCI address %q is not domain:bus:device.function", s)
	}
	dev, fn, ok := strings.Cut(devfn, ".")
	if !ok {
		fn = "0"
	}
	d, err1 := strconv.ParseUint(dom, 16, 32)
	b, err2 := strconv.ParseUint(bus, 16, 8)
	v, err3 := strconv.ParseUint(dev, 16, 5)
	f, err4 := strconv.ParseUint(fn, 16, 3)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || len(dom) > 8 {
		return "", fmt.Errorf("PCI address %q is not domain:bus:device.function in hex", s)
	}
	if d > 0xffff {
		// Some platforms (VMD, Hyper-V) really have 8-digit domains; keep them.
		return fmt.Sprintf("%08x:%02x:%02x.%x", d, b, v, f), nil
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, v, f), nil
}
