package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a "major.minor" version: a driver's CUDA version (13.1), a
// GPU's compute capability (9.0).
type Version struct{ Major, Minor int }

// ParseVersion reads "major.minor", both whole numbers ("13.1", "7.0");
// what says what the version is, in the error.
func ParseVersion(s, what string) (Version, error) {
	major, minor, ok := strings.Cut(s, ".")
	m, err1 := strconv.ParseUint(major, 10, 16)
	n, err2 := strconv.ParseUint(minor, 10, 16)
	if !ok || err1 != nil || err2 != nil {
		return Version{}, fmt.Errorf("%s %q: give it as major.minor (e.g. 13.1)", what, s)
	}
	return Version{int(m), int(n)}, nil
}

// Below says whether v is an earlier version than w.
func (v Version) Below(w Version) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }
