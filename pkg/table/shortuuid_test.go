package table

import "testing"

// ShortUUID: the first 12 characters and "…"; a UUID of 12 or fewer whole.
func TestShortUUID(t *testing.T) {
	for _, tc := range []struct{ name, uuid, want string }{
		{"an NVIDIA UUID is cut after 12", "GPU-1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d", "GPU-1a2b3c4d…"},
		{"12 characters whole", "GPU-1a2b3c4d", "GPU-1a2b3c4d"},
		{"a short one whole", "GPU-a", "GPU-a"},
		{"none", "", ""},
	} {
		if got := ShortUUID(tc.uuid); got != tc.want {
			t.Errorf("%s: ShortUUID(%q) = %q, want %q", tc.name, tc.uuid, got, tc.want)
		}
	}
}
