package instance

import "testing"

// Each of --gpu-ids' and --gpu-visibility's values, and a refusal of each.
func TestParseGPUNaming(t *testing.T) {
	for _, tc := range []struct {
		ids, vis string
		ok       bool
	}{
		{"uuid", "own", true}, {"index", "all", true}, {"name", "own", false}, {"uuid", "some", false}, {"", "", false},
	} {
		ids, vis, err := ParseGPUNaming(tc.ids, tc.vis)
		if (err == nil) != tc.ok || string(ids) != tc.ids || string(vis) != tc.vis {
			t.Errorf("%q %q: %q %q %v", tc.ids, tc.vis, ids, vis, err)
		}
	}
}
