package chart

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// Pictures of little or odd input still draw, well-formed: no instance,
// no point, figures that are not numbers, a title with XML's characters.
func TestPicturesOfOddInput(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		what string
		draw func(*bytes.Buffer) error
		want string
	}{
		{"a run of no instance", func(b *bytes.Buffer) error { return RunSVG(Run{Title: "x"}, b) }, ">x<"},
		{"a title with < & >", func(b *bytes.Buffer) error {
			return RunSVG(Run{Title: "sh -c 'a && b < c'", Instances: []Instance{{Label: "instance 0"}}}, b)
		}, "sh -c &#39;a &amp;&amp; b &lt; c&#39;"},
		{"figures that are not numbers", func(b *bytes.Buffer) error {
			in := Instance{Label: "instance 0", T: []float64{0, 1, nan, 3}, GPUUtil: []float64{nan, 50, 60, math.Inf(1)},
				GPUMem: []float64{1, 2, 3, 4}, CPU: []float64{1, 1, 1, 1}, RSS: []float64{1, 1, 1, 1}, Events: []Event{{nan, "start"}, {3, "exit"}}}
			return RunSVG(Run{Title: "nan", Instances: []Instance{in}}, b)
		}, "GPU utilisation"},
		{"a study of no point", func(b *bytes.Buffer) error { return StudySVG(Study{Title: "none", Verdict: "no size ran"}, b) }, "no size ran"},
		{"a study of one size", func(b *bytes.Buffer) error {
			return StudySVG(Study{Title: "one", Points: []StudyPoint{{GPUs: 4, Speedup: fp(1), Ideal: fp(1), Efficiency: fp(1), Status: "ok"}}}, b)
		}, ">4<"},
	} {
		var b bytes.Buffer
		if err := tc.draw(&b); err != nil {
			t.Errorf("%s: %v", tc.what, err)
			continue
		}
		wellFormed(t, b.Bytes())
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s: no %q in\n%.400s", tc.what, tc.want, b.String())
		}
		if strings.Contains(b.String(), "NaN") || strings.Contains(b.String(), "Inf") {
			t.Errorf("%s: a coordinate is not a number", tc.what)
		}
	}
}
