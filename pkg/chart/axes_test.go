package chart

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Rules of niceTicks, each by its number: a table of ranges and their
// ticks.
func TestNiceTicksRules(t *testing.T) {
	for _, tc := range []struct {
		rule   string
		lo, hi float64
		want   string
	}{
		{"1: 105/5 = 21 rounds to 20 (2.1 < 3)", 0, 105, "0 20 40 60 80 100"},
		{"1: 600/5 = 120 rounds to 100 (1.2 < 1.5)", 0, 600, "0 100 200 300 400 500 600"},
		{"1: 10/5 = 2 is a step already", 0, 10, "0 2 4 6 8 10"},
		{"1: 38.1/5 = 7.62 rounds to 10 (7.62 ≥ 7)", 0, 38.1, "0 10 20 30"},
		{"1: 300/5 = 60 rounds to 50 (6 < 7)", 0, 300, "0 50 100 150 200 250 300"},
		{"1+3: 1.12/5 = 0.224 rounds to 0.2, one decimal", 0, 1.12, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{"2: 0.3 is a tick though 3 × 0.1 is 0.30000000000000004", 0, 0.3, "0.00 0.05 0.10 0.15 0.20 0.25 0.30"},
		{"2: ticks from the first multiple after lo", 2.5, 7.5, "3 4 5 6 7"},
		{"2+3: below zero, and no -0", -1, 1, "-1.0 -0.5 0.0 0.5 1.0"},
		{"3: a whole step has no decimals", 0, 5000, "0 1000 2000 3000 4000 5000"},
		{"4: an empty range, one tick", 3, 3, "3"},
		{"4: a range backwards, one tick", 3, 1, "3"},
	} {
		var got []string
		for _, tk := range niceTicks(tc.lo, tc.hi) {
			got = append(got, tk.Label)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: ticks of [%v, %v]: %s, want %s", tc.rule, tc.lo, tc.hi, strings.Join(got, " "), tc.want)
		}
	}
}

// A text's width is its characters' advances in the font: what the
// summary's columns and the wrapping of notes rely on.
func TestFaceWidth(t *testing.T) {
	for _, tc := range []struct {
		what string
		f    face
		s    string
		want float64
	}{
		{"sans: 'i' and 'W' differ", face{Size: 10}, "iW", 2.22 + 9.44},
		{"sans: a no-break space is a space", face{Size: 10}, "a\u00a0b", 5.56 + 2.78 + 5.56},
		{"sans: a character off the table is a digit's width", face{Size: 10}, "é", 5.56},
		{"mono: 0.6 em a character, however wide", face{Mono: true, Size: 8}, "iW\u00a0é", 4 * 4.8},
	} {
		if got := tc.f.width(tc.s); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%s: %q is %v pt wide, want %v", tc.what, tc.s, got, tc.want)
		}
	}
}

// pkg/chart imports the standard library only: every gpulaunch process
// runs the init of every package it links, at its start, pictures drawn
// or not (a plotting library parsing its fonts cost each start about
// 1.8 ms; see the package comment).
func TestChartLinksTheStandardLibraryOnly(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			// a module path's first element has a dot; the standard
			// library's has none
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s, linked into every gpulaunch start", name, path)
			}
		}
	}
}

// Series beyond the palette's ten repeat its colours, dashed.
func TestSeriesStroke(t *testing.T) {
	for _, tc := range []struct {
		i      int
		colour rgb
		dashed bool
	}{
		{0, palette[0], false}, {9, palette[9], false}, {10, palette[0], true}, {23, palette[3], true},
	} {
		if s := seriesStroke(tc.i); s.Colour != tc.colour || (len(s.Dashes) > 0) != tc.dashed {
			t.Errorf("series %d: %v, want colour %v, dashed %v", tc.i, s, tc.colour, tc.dashed)
		}
	}
}
