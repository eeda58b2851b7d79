package flagvalue

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Duration reads a Go duration ("90s", "1h30m") or plain seconds.
func Duration(flag, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case math.IsNaN(n):
			return 0, fmt.Errorf("%s %q: not a duration (use seconds, or 90s, 15m, 2h)", flag, s)
		case n < 0:
			return 0, fmt.Errorf("%s %q: cannot be negative", flag, s)
		case n*float64(time.Second) >= math.MaxInt64:
			// converted, it would wrap to a negative duration: no limit at all
			return 0, fmt.Errorf("%s %q: too long: the longest is %.0f seconds (%s)", flag, s, float64(math.MaxInt64)/float64(time.Second), time.Duration(math.MaxInt64))
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if durationSyntax().MatchString(s) { // well formed: it overflowed
			return 0, fmt.Errorf("%s %q: too long: the longest is %s", flag, s, time.Duration(math.MaxInt64))
		}
		return 0, fmt.Errorf("%s %q: not a duration (use seconds, or 90s, 15m, 2h)", flag, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s %q: cannot be negative", flag, s)
	}
	return d, nil
}

// durationSyntax is time.ParseDuration's grammar, to tell a duration too
// long for it from one it cannot read (it says "invalid" for both);
// compiled at its first use, not at every start (see jsonerr's).
var durationSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)
})

// Size reads a memory size: K, M, G, T suffixes (binary), plain
// numbers in MiB as Slurm's --mem. 0 (in any unit) is 0: what it means
// is the caller's.
func Size(flag, s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := float64(1 << 20)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult, t = 1<<10, t[:len(t)-1]
		case 'M':
			mult, t = 1<<20, t[:len(t)-1]
		case 'G':
			mult, t = 1<<30, t[:len(t)-1]
		case 'T':
			mult, t = 1<<40, t[:len(t)-1]
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err == nil && n == 0 {
		return 0, nil
	}
	if err == nil && n*mult > 1<<62 {
		return 0, fmt.Errorf("%s %q: too large: a memory size is at most %dT (4 EiB)", flag, s, (1<<62)>>40)
	}
	if err != nil || math.IsNaN(n) || n < 0 || n*mult < 1 {
		return 0, fmt.Errorf("%s %q: not a memory size (use e.g. 512M, 16G, 1.5T)", flag, s)
	}
	return uint64(n * mult), nil
}
