package flagvalue

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// Duration's and Size's grammars, by rule.
func TestDurationAndSize(t *testing.T) {
	for _, tc := range []struct {
		rule, in string
		want     time.Duration
		err      string
	}{
		{"plain numbers are seconds", "1.5", 1500 * time.Millisecond, ""},
		{"a Go duration", "1h30m", 90 * time.Minute, ""},
		{"empty is none", "", 0, ""},
		{"negative is refused", "-3", 0, "cannot be negative"},
		{"NaN is no duration", "NaN", 0, "not a duration"},
		{"a wrapping number of seconds is too long", "1e12", 0, "too long"},
		{"a well-formed duration past int64 is too long", "9999999999h", 0, "too long"},
		{"garbage is no duration", "soon", 0, "not a duration"},
	} {
		got, err := Duration("--timeout", tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Duration(%q) = %v, %v; want %v, %q", tc.rule, tc.in, got, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		rule, in string
		want     uint64
		err      string
	}{
		{"plain numbers are MiB, as Slurm's --mem", "16", 16 << 20, ""},
		{"binary suffixes, B and i allowed", "1.5GiB", 3 << 29, ""},
		{"0 in any unit is 0", "0G", 0, ""},
		{"beyond 4 EiB is too large", "5000000T", 0, "too large"},
		{"a fraction of a unit", "0.1K", 102, ""},
		{"less than a byte is no size", "0.0001K", 0, "not a memory size"},
		{"garbage is no size", "lots", 0, "not a memory size"},
	} {
		got, err := Size("--mem-per-task", tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Size(%q) = %d, %v; want %d, %q", tc.rule, tc.in, got, err, tc.want, tc.err)
		}
	}
}

// Strict, Empty and Explain on a flag set, by rule.
func TestStrictEmptyExplain(t *testing.T) {
	ranges := Ranges{{Name: "ntasks", Lo: 1, Hi: 8, Of: "instances are"}}
	parse := func(args ...string) (*pflag.FlagSet, error) {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.IntP("ntasks", "n", 0, "")
		fs.Int("other", 0, "")
		fs.Float64("factor", 0, "")
		fs.StringP("output", "o", "", "")
		fs.String("format", "console", "")
		Strict(fs, ranges)
		return fs, fs.Parse(args)
	}
	for _, tc := range []struct {
		rule string
		args []string
		want string // Explain's text, or "" for none
	}{
		{"counts are decimal: 010 is ten", []string{"--other", "010"}, ""},
		{"08 is eight, not bad octal", []string{"--other", "08"}, ""},
		{"above the range is refused as parsed, with the range", []string{"-n", "9"}, "-n/--ntasks 9: too large: instances are 1..8"},
		{"a number is finite", []string{"--factor", "NaN"}, `--factor: invalid argument "NaN": not a number`},
		{"a word is no whole number", []string{"-n", "abc"}, `-n/--ntasks: invalid argument "abc": not a whole number`},
		{"past int64 without a range", []string{"--other", "99999999999999999999"}, "too large: a whole number here is at most"},
		{"an unknown flag gets the likely one", []string{"--outptu", "x"}, "unknown flag: --outptu: did you mean --output?"},
	} {
		fs, err := parse(tc.args...)
		got := ""
		if err != nil {
			got = Explain(err, fs, ranges)
		}
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %v → %q, want %q", tc.rule, tc.args, got, tc.want)
		}
	}
	fs, _ := parse("-o", "")
	if err := Empty(fs, nil); err == nil || !strings.HasPrefix(err.Error(), `-o/--output "": an empty value`) {
		t.Errorf("an empty word is refused: %v", err)
	}
	fs, _ = parse("--format", "")
	if err := Empty(fs, map[string]bool{"format": true}); err != nil {
		t.Errorf("a flag with its own check is left to it: %v", err)
	}
	if err := Empty(fs, nil); err == nil || !strings.Contains(err.Error(), "(its default is console)") {
		t.Errorf("the default is named: %v", err)
	}
}
