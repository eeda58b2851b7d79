package cpuset

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MaxID bounds the ids a Set accepts from text. The kernel's NR_CPUS tops
// out at 8192; the margin keeps a hostile or corrupt file from making the
// parser allocate gigabytes.
const MaxID = 1 << 16

// Set is an immutable set of ids. The zero value is the empty set.
type Set struct {
	words []uint64 // bit i of words[i/64]; no trailing zero words
}

// New returns the set of the given ids. It panics on a negative id, which
// is a programming error, never input.
func New(ids ...int) Set {
	top := -1
	for _, id := range ids {
		if id < 0 {
			panic(fmt.Sprintf("cpuset: negative id %d", id))
		}
		top = max(top, id)
	}
	if top < 0 {
		return Set{}
	}
	w := make([]uint64, top/64+1) // one allocation: ids may come in any order
	for _, id := range ids {
		w[id/64] |= 1 << (id % 64)
	}
	return trim(w)
}

// Range returns {lo, lo+1, …, hi}; empty when hi < lo.
func Range(lo, hi int) Set {
	ids := make([]int, 0, max(hi-lo+1, 0))
	for i := lo; i <= hi; i++ {
		ids = append(ids, i)
	}
	return New(ids...)
}

func trim(w []uint64) Set {
	for len(w) > 0 && w[len(w)-1] == 0 {
		w = w[:len(w)-1]
	}
	if len(w) == 0 {
		return Set{}
	}
	return Set{words: w}
}

// Parse reads the kernel's list format: comma-separated ids and ranges
// "lo-hi", each range optionally strided as "lo-hi:used/group" (bitmap_parselist).
// Surrounding white space and a trailing newline, as sysfs files have, are
// ignored; an empty string is the empty set.
func Parse(s string) (Set, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Set{}, nil
	}
	var w []uint64
	set := func(id int) {
		for len(w) <= id/64 {
			w = append(w, 0)
		}
		w[id/64] |= 1 << (id % 64)
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return Set{}, fmt.Errorf("cpu list %q: empty element", s)
		}
		rng, stride, hasStride := strings.Cut(part, ":")
		loS, hiS, isRange := strings.Cut(rng, "-")
		lo, err := parseID(loS)
		if err != nil {
			return Set{}, fmt.Errorf("cpu list %q: %w", s, err)
		}
		hi := lo
		if isRange {
			if hi, err = parseID(hiS); err != nil {
				return Set{}, fmt.Errorf("cpu list %q: %w", s, err)
			}
			if hi < lo {
				return Set{}, fmt.Errorf("cpu list %q: range %d-%d runs backwards", s, lo, hi)
			}
		}
		used, group := 1, 1
		if hasStride {
			if !isRange {
				return Set{}, fmt.Errorf("cpu list %q: stride %q needs a range", s, stride)
			}
			u, g, ok := strings.Cut(stride, "/")
			if !ok {
				return Set{}, fmt.Errorf("cpu list %q: stride %q is not used/group", s, stride)
			}
			if used, err = parseID(u); err != nil {
				return Set{}, fmt.Errorf("cpu list %q: %w", s, err)
			}
			if group, err = parseID(g); err != nil {
				return Set{}, fmt.Errorf("cpu list %q: %w", s, err)
			}
			if used == 0 || group == 0 || used > group {
				return Set{}, fmt.Errorf("cpu list %q: stride %d/%d is invalid", s, used, group)
			}
		}
		for id := lo; id <= hi; id++ {
			if (id-lo)%group < used {
				set(id)
			}
		}
	}
	return trim(w), nil
}

func parseID(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("missing number")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("%q is not a CPU number", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n >= MaxID {
		return 0, fmt.Errorf("CPU number %s is larger than %d", s, MaxID-1)
	}
	return n, nil
}

// MustParse is Parse for literals in tests and fixtures.
func MustParse(s string) Set {
	set, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return set
}

// ParseMask reads the kernel's hex mask format ("ff,00000000ffffffff", as in
// /sys/bus/pci/devices/*/local_cpus and the Cpus_allowed line of
// /proc/<pid>/status): comma-separated 32-bit words, most significant first.
func ParseMask(s string) (Set, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Set{}, nil
	}
	chunks := strings.Split(s, ",")
	if len(chunks)*32 > MaxID {
		return Set{}, fmt.Errorf("cpu mask %q: more than %d bits", s, MaxID)
	}
	var ids []int
	for i, c := range chunks {
		if c == "" || len(c) > 8 {
			return Set{}, fmt.Errorf("cpu mask %q: word %q is not 1-8 hex digits", s, c)
		}
		v, err := strconv.ParseUint(c, 16, 32)
		if err != nil {
			return Set{}, fmt.Errorf("cpu mask %q: word %q is not hex", s, c)
		}
		base := (len(chunks) - 1 - i) * 32
		for b := 0; b < 32; b++ {
			if v&(1<<b) != 0 {
				ids = append(ids, base+b)
			}
		}
	}
	return New(ids...), nil
}

// String prints the set in the kernel's list format, "" for the empty set.
func (s Set) String() string {
	var b strings.Builder
	ids := s.List()
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Hash is a hash of the set (FNV-1a over its words) for a map of sets:
// one pass over the words, nothing allocated (String, on a node of 8,192
// CPUs, formats every id). Equal sets hash alike; check Equal on a match.
func (s Set) Hash() uint64 {
	h := uint64(14695981039346656037)
	for _, w := range s.words {
		h ^= w
		h *= 1099511628211
	}
	return h
}

// MarshalText makes a Set print as its list in JSON.
func (s Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the list format.
func (s *Set) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// List returns the ids in ascending order.
func (s Set) List() []int {
	ids := make([]int, 0, s.Size())
	for i, w := range s.words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			ids = append(ids, i*64+b)
			w &^= 1 << b
		}
	}
	return ids
}

// Size is the number of ids in the set.
func (s Set) Size() int {
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// IsEmpty reports whether the set has no ids.
func (s Set) IsEmpty() bool { return len(s.words) == 0 }

// Contains reports whether id is in the set.
func (s Set) Contains(id int) bool {
	return id >= 0 && id/64 < len(s.words) && s.words[id/64]&(1<<(id%64)) != 0
}

// Min is the smallest id, or -1 for the empty set.
func (s Set) Min() int {
	for i, w := range s.words {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

// Union returns s ∪ o.
func (s Set) Union(o Set) Set {
	switch { // sets are immutable: an empty side needs no copy
	case len(s.words) == 0:
		return o
	case len(o.words) == 0:
		return s
	}
	n := max(len(s.words), len(o.words))
	w := make([]uint64, n)
	copy(w, s.words)
	for i, x := range o.words {
		w[i] |= x
	}
	return trim(w)
}

// Intersect returns s ∩ o.
func (s Set) Intersect(o Set) Set {
	n := min(len(s.words), len(o.words))
	w := make([]uint64, n)
	for i := range n {
		w[i] = s.words[i] & o.words[i]
	}
	return trim(w)
}

// Difference returns s \ o.
func (s Set) Difference(o Set) Set {
	w := make([]uint64, len(s.words))
	copy(w, s.words)
	for i := 0; i < len(w) && i < len(o.words); i++ {
		w[i] &^= o.words[i]
	}
	return trim(w)
}

// Equal reports whether both sets hold the same ids.
func (s Set) Equal(o Set) bool {
	if len(s.words) != len(o.words) {
		return false
	}
	for i := range s.words {
		if s.words[i] != o.words[i] {
			return false
		}
	}
	return true
}

// IsSubsetOf reports whether every id of s is in o.
func (s Set) IsSubsetOf(o Set) bool {
	if len(s.words) > len(o.words) {
		return false // trimmed: s has an id past o's last word
	}
	for i, w := range s.words {
		if w&^o.words[i] != 0 {
			return false
		}
	}
	return true
}

// Overlaps reports whether s and o share an id.
func (s Set) Overlaps(o Set) bool { return s.IntersectSize(o) > 0 }

// IntersectSize is |s ∩ o|, without making the set: a plan counts each
// instance's local CPUs this way (binding.countLocal).
func (s Set) IntersectSize(o Set) int {
	n := 0
	for i := range min(len(s.words), len(o.words)) {
		n += bits.OnesCount64(s.words[i] & o.words[i])
	}
	return n
}
