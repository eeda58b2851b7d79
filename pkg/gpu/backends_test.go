package gpu

import "testing"

// Every vendor has a backend, and messages name them all.
func TestParseVendor(t *testing.T) {
	for _, name := range []string{"nvidia", "amd", "intel"} {
		if v, ok := ParseVendor(name); !ok || string(v) != name || backendOf(v).vendor != v {
			t.Errorf("ParseVendor(%q) = %q %v", name, v, ok)
		}
	}
	for _, name := range []string{"", "NVIDIA", "cuda", "habana"} {
		if v, ok := ParseVendor(name); ok {
			t.Errorf("ParseVendor(%q) = %q, want none", name, v)
		}
	}
	if got := VendorNames(); got != "nvidia, amd or intel" {
		t.Errorf("VendorNames() = %q", got)
	}
	if backendOf("").vendor != NVIDIA {
		t.Error("a description without a vendor is not NVIDIA's")
	}
}
