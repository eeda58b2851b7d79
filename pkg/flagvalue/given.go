package flagvalue

import "strings"

// Given finds a flag among a command line's flags, before the command
// (--), as pflag would read it: short ("-n") or long ("--ntasks") with its
// value as the next word, long=VALUE, or the short flag joined to its
// value ("-n4"). It returns the flag as given — "-n 4" for two words —
// and whether it was.
func Given(args []string, short, long string) (string, bool) {
	for i, a := range args {
		switch {
		case a == "--":
			return "", false
		case a == short || a == long:
			if i+1 < len(args) {
				return a + " " + args[i+1], true
			}
			return a, true
		case strings.HasPrefix(a, long+"="), strings.HasPrefix(a, short) && !strings.HasPrefix(a, "--"):
			return a, true
		}
	}
	return "", false
}

// GivenValue is the value in a flag as Given returns it ("-n 2", "-n2",
// "--ntasks=2": "2"); "" when it has none.
func GivenValue(flag, short, long string) string {
	if _, v, ok := strings.Cut(flag, " "); ok {
		return v
	}
	return strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(flag, long), short), "=")
}
