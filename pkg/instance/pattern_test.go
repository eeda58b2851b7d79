package instance

import (
	"strings"
	"testing"
)

func TestExpandPattern(t *testing.T) {
	nm := Names{JobID: "42", StepID: "0", Host: "gpu07", NodeIndex: 3}
	cases := map[string]string{
		"out-%t.log":      "out-5.log",
		"%j/%s/%N-%n-%3t": "42/0/gpu07-3-005",
		"100%%-%t":        "100%-5",
		"plain":           "plain",
		"":                "",
		"%2n":             "03",
	}
	for in, want := range cases {
		if got, err := ExpandPattern(in, 5, nm); err != nil || got != want {
			t.Errorf("ExpandPattern(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, _ := ExpandPattern("%j-%s", 0, Names{}); got != "none-none" {
		t.Errorf("outside Slurm: %q", got)
	}
	for _, bad := range []string{"%", "%x", "a-%3", "%99t"} {
		if _, err := ExpandPattern(bad, 0, nm); err == nil {
			t.Errorf("ExpandPattern(%q) accepted", bad)
		}
	}
	if got := ExpandArgs([]string{"--shard=%t", "printf %d"}, 3); got[0] != "--shard=3" || got[1] != "printf %d" {
		t.Errorf("ExpandArgs = %q", got)
	}
}

// NodePath's rules, by name (the per-node file of --report and
// --metrics-file).
func TestNodePath(t *testing.T) {
	names := Names{JobID: "7", Host: "n2", NodeIndex: 1}
	for _, tc := range []struct {
		rule, pattern string
		multiNode     bool
		want, err     string
	}{
		{"one node: the pattern as expanded", "r-%j.json", false, "r-7.json", ""},
		{"several nodes: a pattern naming no node gets the host", "r-%j.json", true, "r-7.n2.json", ""},
		{"several nodes: %N names the node", "d/%N.json", true, "d/n2.json", ""},
		{"several nodes: %n names the node", "d/%n.json", true, "d/1.json", ""},
		{"%t is refused: one file per node", "r-%t.json", false, "", "%t is an instance"},
		{"%%t is a literal, not %t", "r-%%t.json", false, "r-%t.json", ""},
		{"a bad pattern names the flag", "r-%x", false, "", "--report: "},
	} {
		got, err := NodePath("--report", tc.pattern, names, tc.multiNode)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q → %q, %v; want %q, %q", tc.rule, tc.pattern, got, err, tc.want, tc.err)
		}
	}
}

// SrunPatternIn finds a % before a letter, with a width or not.
func TestSrunPatternIn(t *testing.T) {
	for name, want := range map[string]string{"r-%t.x": "%t", "r-%3t.x": "%3t", "r-%%.x": "", "50%": "", "a%%%j": "%j", "plain": ""} {
		if got := SrunPatternIn(name); got != want {
			t.Errorf("SrunPatternIn(%q) = %q, want %q", name, got, want)
		}
	}
}
