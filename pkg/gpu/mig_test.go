package gpu

import "testing"

// MIG needs NVML (NamesMIG's rules): a launcher's list that names a MIG
// device is one only NVML can resolve.
func TestNamesMIG(t *testing.T) {
	cases := []struct {
		rule, visible string
		want          bool
	}{
		{"rule 1: MIG devices named", "MIG-1", true},
		{"rule 1: MIG devices among GPUs", "GPU-aaaa,MIG-4f1e", true},
		{"rule 1: GPUs by UUID", "GPU-22222222-2222-3333-4444-555555555555", false},
		{"rule 1: GPUs by index", "0,1", false},
		{"rule 1: unset or empty", "", false},
	}
	for _, tc := range cases {
		if got := NamesMIG(tc.visible); got != tc.want {
			t.Errorf("%s: NamesMIG(%q) = %v, want %v", tc.rule, tc.visible, got, tc.want)
		}
	}
}
