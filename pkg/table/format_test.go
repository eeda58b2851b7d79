package table

import "testing"

// Bytes' rules, each by its number.
func TestBytesRules(t *testing.T) {
	for _, tc := range []struct {
		rule string
		b    uint64
		want string
	}{
		{"1: 0 is a dash", 0, "-"},
		{"2: GiB", 3 << 29, "1.5 GiB"},
		{"2: exactly 1 GiB", 1 << 30, "1.0 GiB"},
		{"3: MiB", 640 << 20, "640.0 MiB"},
		{"4: KiB", 12 << 10, "12 KiB"},
		{"4: under 1 KiB", 100, "0 KiB"},
	} {
		if got := Bytes(tc.b); got != tc.want {
			t.Errorf("rule %s: Bytes(%d) %q, want %q", tc.rule, tc.b, got, tc.want)
		}
	}
	four := float64(4 << 30)
	for _, tc := range []struct {
		x    *float64
		want string
	}{{nil, "-"}, {&four, "4.0 GiB"}} {
		if got := BytesOf(tc.x); got != tc.want {
			t.Errorf("BytesOf: %q, want %q", got, tc.want)
		}
	}
}

// BytesShort's rules, each by its number.
func TestBytesShortRules(t *testing.T) {
	for _, tc := range []struct {
		rule string
		b    uint64
		want string
	}{
		{"1: G", 2 << 30, "2.0G"},
		{"2: M", 640 << 20, "640M"},
		{"3: K", 12 << 10, "12K"},
		{"4: 0", 0, "0"},
	} {
		if got := BytesShort(tc.b); got != tc.want {
			t.Errorf("rule %s: BytesShort(%d) %q, want %q", tc.rule, tc.b, got, tc.want)
		}
	}
}

func TestOrDash(t *testing.T) {
	if OrDash("") != "-" || OrDash("0-3") != "0-3" {
		t.Errorf("OrDash: %q, %q", OrDash(""), OrDash("0-3"))
	}
}
