package cpuset

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, in, want string
		wantErr        string
	}{
		{name: "empty string is the empty set", in: "", want: ""},
		{name: "sysfs trailing newline", in: "0-3\n", want: "0-3"},
		{name: "single id", in: "7", want: "7"},
		{name: "ids and ranges", in: "0-3,8,10-11", want: "0-3,8,10-11"},
		{name: "unsorted and overlapping", in: "10-11,0-3,2-4", want: "0-4,10-11"},
		{name: "adjacent ranges merge", in: "0-1,2-3", want: "0-3"},
		{name: "kernel stride: 2 of every 4", in: "0-15:2/4", want: "0-1,4-5,8-9,12-13"},
		{name: "stride of one", in: "0-5:1/2", want: "0,2,4"},
		{name: "spaces around elements", in: " 1 , 3 ", want: "1,3"},
		{name: "backwards range", in: "3-1", wantErr: "backwards"},
		{name: "negative id", in: "-1", wantErr: "missing number"},
		{name: "letters", in: "0-a", wantErr: "not a CPU number"},
		{name: "empty element", in: "1,,2", wantErr: "empty element"},
		{name: "trailing comma", in: "1,", wantErr: "empty element"},
		{name: "huge id", in: "99999999999", wantErr: "larger than"},
		{name: "stride without range", in: "3:1/2", wantErr: "needs a range"},
		{name: "stride zero group", in: "0-3:1/0", wantErr: "invalid"},
		{name: "stride used above group", in: "0-3:3/2", wantErr: "invalid"},
		{name: "stride not a fraction", in: "0-3:2", wantErr: "not used/group"},
		{name: "plus sign", in: "+1", wantErr: "not a CPU number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got.String() != tc.want {
				t.Fatalf("Parse(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseMask(t *testing.T) {
	cases := []struct{ in, want string }{
		{"3", "0-1"},
		{"00000000,0000000f", "0-3"},
		{"ff000000,00000000", "56-63"},
		{"1,00000001", "0,32"},
		{"0\n", ""},
	}
	for _, tc := range cases {
		got, err := ParseMask(tc.in)
		if err != nil || got.String() != tc.want {
			t.Errorf("ParseMask(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"xyz", "1,,2", "123456789"} {
		if _, err := ParseMask(bad); err == nil {
			t.Errorf("ParseMask(%q) accepted bad input", bad)
		}
	}
}

func TestAlgebra(t *testing.T) {
	a, b := MustParse("0-7"), MustParse("4-11")
	checks := []struct {
		name string
		got  Set
		want string
	}{
		{"union", a.Union(b), "0-11"},
		{"intersect", a.Intersect(b), "4-7"},
		{"difference", a.Difference(b), "0-3"},
		{"difference leaves operands alone", a, "0-7"},
		{"intersect disjoint is empty", MustParse("0-1").Intersect(MustParse("64-65")), ""},
		{"range", Range(62, 66), "62-66"},
		{"union with empty is the other", (Set{}).Union(b), "4-11"},
		{"union onto empty", a.Union(Set{}), "0-7"},
		{"new takes ids in any order", New(130, 2, 64, 1), "1-2,64,130"},
		{"new with no ids is empty", New(), ""},
	}
	for _, c := range checks {
		if c.got.String() != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	subsets := []struct {
		s, o string
		want bool
	}{
		{"4-5", "0-7", true}, {"4-11", "0-7", false}, {"", "0-7", true}, {"", "", true},
		{"3", "", false}, {"70", "0-7", false}, {"0-7", "0-127", true}, {"1,65", "0-64", false},
	}
	for _, c := range subsets {
		if got := MustParse(c.s).IsSubsetOf(MustParse(c.o)); got != c.want {
			t.Errorf("%q IsSubsetOf %q = %v, want %v", c.s, c.o, got, c.want)
		}
	}
	if MustParse("0-7").Hash() != New(7, 6, 5, 4, 3, 2, 1, 0).Hash() || a.Hash() == b.Hash() || (Set{}).Hash() == MustParse("0").Hash() {
		t.Error("Hash: equal sets must hash alike, and these distinct ones differ")
	}
	if !a.Overlaps(b) || a.Overlaps(MustParse("100")) {
		t.Error("Overlaps wrong")
	}
	for _, c := range [][2]string{{"0-7", "4-200"}, {"0-3,64-127", "60-70,300"}, {"", "0-9"}, {"5", "6"}, {"0-1023", "1000-2047"}} {
		s, o := MustParse(c[0]), MustParse(c[1])
		if got, want := s.IntersectSize(o), s.Intersect(o).Size(); got != want {
			t.Errorf("%q IntersectSize %q = %d, want %d", c[0], c[1], got, want)
		}
	}
	if MustParse("64").Min() != 64 || (Set{}).Min() != -1 {
		t.Error("Min wrong")
	}
	if !a.Difference(a).Equal(Set{}) || a.Difference(a).Size() != 0 {
		t.Error("empty difference should equal the zero Set")
	}
}

func TestJSON(t *testing.T) {
	var v struct{ CPUs Set }
	if err := json.Unmarshal([]byte(`{"CPUs":"0-3,8"}`), &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	if string(out) != `{"CPUs":"0-3,8"}` {
		t.Fatalf("round trip = %s", out)
	}
}

// FuzzParse checks that whatever Parse accepts prints back to an equal set
// and that printing is canonical.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "0-3,8,10-11", "0-15:2/4", "1,,2", "3-1", "0\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(set.String())
		if err != nil {
			t.Fatalf("Parse(%q) = %q, which does not parse: %v", s, set, err)
		}
		if !again.Equal(set) || again.String() != set.String() {
			t.Fatalf("round trip of %q: %q != %q", s, again, set)
		}
		if set.Size() != len(set.List()) {
			t.Fatalf("Size %d != len(List) %d", set.Size(), len(set.List()))
		}
	})
}
