package chart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sampleRun is 8 instances over 10 minutes: ramps, a restart, a gap
// without telemetry, exits at one moment.
func sampleRun() Run {
	var r Run
	r.Title = "gpulaunch -n 8 -- python train.py   on gpu07, 2026-11-23 18:00 UTC"
	for i := range 8 {
		in := Instance{Label: fmt.Sprintf("instance %d (0000:%02x:00.0)", i, 0x18+i)}
		for k := 0; k <= 300; k++ {
			t := float64(2 * k)
			util := 60 + 30*math.Sin(t/60+float64(i)) + float64(i)
			if i == 3 && k > 100 && k < 120 {
				util = -1
			}
			in.T, in.GPUUtil, in.GPUMem = append(in.T, t), append(in.GPUUtil, util), append(in.GPUMem, float64(k)*1e8*(1+float64(i)/8))
			in.CPU, in.RSS = append(in.CPU, 100+float64(i)), append(in.RSS, float64(k)*1e6)
		}
		in.Events = []Event{{0, "start"}, {600, "exit"}}
		if i == 5 {
			in.Events = append(in.Events, Event{200, "exit"}, Event{201, "start"}, Event{300, "warning"})
		}
		r.Instances = append(r.Instances, in)
	}
	r.Summary = []string{"INSTANCE  EXIT  WALL   GPU% MEAN/PEAK  GPU MEM", "0         0     600s   61/91           38.1 GiB"}
	return r
}

// wellFormed parses an SVG document whole.
func wellFormed(t *testing.T, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		if _, err := d.Token(); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("not well-formed SVG: %v", err)
		}
	}
}

// A run's picture is an SVG with one legend entry per instance and the
// summary, and its HTML page holds the same picture, its table once.
func TestRunSVG(t *testing.T) {
	r := sampleRun()
	var svg bytes.Buffer
	if err := RunSVG(r, &svg); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg.Bytes())
	for i := range 8 {
		if n := strings.Count(svg.String(), fmt.Sprintf(">instance %d (", i)); n != 1 {
			t.Errorf("legend entry of instance %d: %d", i, n)
		}
	}
	for _, want := range []string{"GPU utilisation (%)", "time since the start (s)", "GPU memory (GiB)", "GPU%\u00a0MEAN/PEAK"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("no %q", want)
		}
	}
	if out := os.Getenv("CHART_OUT"); out != "" {
		os.WriteFile(out+"/run.svg", svg.Bytes(), 0o644)
	}
	var page bytes.Buffer
	if err := RunHTML(r, &page); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(page.String(), "<!DOCTYPE html>") || !strings.Contains(page.String(), "<svg") || strings.Contains(page.String(), "<?xml") {
		t.Errorf("page:\n%.300s", page.String())
	}
	// the table is the picture's: once on the page
	if n := strings.Count(page.String(), "MEAN/PEAK"); n != 1 {
		t.Errorf("the page holds the summary table %d times, want once", n)
	}
}

// The same run draws the same SVG, so that a picture kept in a
// repository (docs/report-example.svg) changes only when the run does.
func TestRunSVGIsStable(t *testing.T) {
	var first, again bytes.Buffer
	if err := RunSVG(sampleRun(), &first); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again.Reset()
		if err := RunSVG(sampleRun(), &again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), again.Bytes()) {
			t.Fatal("two drawings of one run differ")
		}
	}
}

// A run with no GPU telemetry and no samples still draws.
func TestRunSVGWithoutSamples(t *testing.T) {
	var svg bytes.Buffer
	r := Run{Title: "true", Instances: []Instance{{Label: "instance 0: no samples"}}}
	if err := RunSVG(r, &svg); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg.Bytes())
}

func fp(x float64) *float64 { return &x }

// A study's picture: three panels, a legend each, the verdict.
func TestStudySVG(t *testing.T) {
	s := Study{Title: "gpulaunch scale -G 1,2,4,8 -- ./amdahl", By: "GPUs (one process)", Threshold: 0.6,
		Verdict: "beyond 4 GPU(s) efficiency drops below 60% (59% at 8): 4 GPU(s) is the efficient size"}
	for _, g := range []int{1, 2, 4, 8} {
		sp := 1 / (0.1 + 0.9/float64(g))
		s.Points = append(s.Points, StudyPoint{GPUs: g, Speedup: fp(sp), Ideal: fp(float64(g)), Efficiency: fp(sp / float64(g)),
			SpeedupLow: fp(sp * 0.97), SpeedupHigh: fp(sp * 1.02), Util: fp(95 - 5*float64(g)), Status: "ok"})
	}
	s.Points = append(s.Points, StudyPoint{GPUs: 16, Status: "failed"})
	var svg bytes.Buffer
	if err := StudySVG(s, &svg); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg.Bytes())
	for _, want := range []string{"Speedup", "Parallel efficiency", "GPU utilisation", "threshold 60%", "ideal", "efficient size", "16 GPU(s): failed"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("no %q", want)
		}
	}
	if out := os.Getenv("CHART_OUT"); out != "" {
		os.WriteFile(out+"/study.svg", svg.Bytes(), 0o644)
	}
}

// A study whose runs measured no GPU use: its utilisation panel carries
// the note, and the speedup's title names the figure and its unit.
func TestStudySVGNotes(t *testing.T) {
	s := Study{Title: "gpulaunch scale -G 1,2 -- ./amdahl", By: "GPUs (one process)", Threshold: 0.6, Verdict: "scales",
		Figure: "the figure (samples/s)", GPUNote: "a node file or simulated node describes GPUs, not their use"}
	for _, g := range []int{1, 2} {
		s.Points = append(s.Points, StudyPoint{GPUs: g, Speedup: fp(float64(g)), Ideal: fp(float64(g)), Efficiency: fp(1), Status: "ok"})
	}
	var svg bytes.Buffer
	if err := StudySVG(s, &svg); err != nil {
		t.Fatal(err)
	}
	d := readSVG(t, svg.Bytes())
	var texts []string
	for _, tx := range d.Texts {
		texts = append(texts, strings.ReplaceAll(tx.Text, "\u00a0", " "))
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"Speedup of the figure (samples/s) over the smallest size", "GPU use not measured: a node file"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in\n%s", want, all)
		}
	}
	if bad := d.overflowing(); len(bad) > 0 {
		t.Errorf("text past the edge:\n%s", strings.Join(bad, "\n"))
	}
}

// svgText is one <text> element of a picture.
type svgText struct {
	X, Size float64
	Anchor  string // text-anchor: where X is on the text
	Family  string
	Text    string
	Rotated bool // in a rotated group: an axis's label
}

// svgDoc is what the tests read of a picture: its width, its texts, and
// its small paths (glyphs) by stroke colour.
type svgDoc struct {
	Width  float64
	Texts  []svgText
	Glyphs []glyphBox
}

// glyphBox is the bounding box of a glyph's paths.
type glyphBox struct {
	Colour                 string
	MinX, MinY, MaxX, MaxY float64
}

func (a glyphBox) overlaps(b glyphBox) bool {
	return a.MinX < b.MaxX && b.MinX < a.MaxX && a.MinY < b.MaxY && b.MinY < a.MaxY
}

// readSVG parses a picture as XML.
func readSVG(t *testing.T, doc []byte) svgDoc {
	t.Helper()
	var d svgDoc
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var cur *svgText
	var rotated []bool // the open groups: rotated or not
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed SVG: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch el.Name.Local {
			case "g":
				rotated = append(rotated, strings.Contains(attr["transform"], "rotate"))
			case "svg":
				d.Width, _ = strconv.ParseFloat(strings.TrimSuffix(attr["width"], "pt"), 64)
			case "text":
				cur = &svgText{Family: styleOf(attr["style"], "font-family"), Rotated: slices.Contains(rotated, true)}
				cur.X, _ = strconv.ParseFloat(attr["x"], 64)
				cur.Anchor = attr["text-anchor"]
				cur.Size, _ = strconv.ParseFloat(strings.TrimSuffix(styleOf(attr["style"], "font-size"), "px"), 64)
			case "path":
				if g, ok := glyphOf(attr); ok {
					d.Glyphs = append(d.Glyphs, g)
				}
			}
		case xml.CharData:
			if cur != nil {
				cur.Text += string(el)
			}
		case xml.EndElement:
			if el.Name.Local == "g" && len(rotated) > 0 {
				rotated = rotated[:len(rotated)-1]
			}
			if el.Name.Local == "text" && cur != nil {
				d.Texts = append(d.Texts, *cur)
				cur = nil
			}
		}
	}
	return d
}

func styleOf(style, key string) string {
	for _, kv := range strings.Split(style, ";") {
		if k, v, ok := strings.Cut(kv, ":"); ok && k == key {
			return v
		}
	}
	return ""
}

// glyphOf is a path's box when it is a glyph: stroked in a colour of the
// palette, at most 10 pt across (series lines are longer).
func glyphOf(attr map[string]string) (glyphBox, bool) {
	g := glyphBox{Colour: styleOf(attr["style"], "stroke"), MinX: math.Inf(1), MinY: math.Inf(1), MaxX: math.Inf(-1), MaxY: math.Inf(-1)}
	if g.Colour == "" || g.Colour == "#000000" || styleOf(attr["style"], "fill") != "none" {
		return g, false
	}
	for _, part := range strings.FieldsFunc(attr["d"], func(r rune) bool { return strings.ContainsRune("MLZAC ", r) }) {
		var x, y float64
		if n, _ := fmt.Sscanf(part, "%f,%f", &x, &y); n == 2 {
			g.MinX, g.MaxX, g.MinY, g.MaxY = math.Min(g.MinX, x), math.Max(g.MaxX, x), math.Min(g.MinY, y), math.Max(g.MaxY, y)
		}
	}
	return g, g.MaxX-g.MinX <= 10 && g.MaxY-g.MinY <= 10
}

// fits says which texts of d run past its edges, measured in their font.
func (d svgDoc) overflowing() []string {
	var out []string
	for _, tx := range d.Texts {
		if tx.Rotated {
			continue
		}
		f := face{Mono: strings.Contains(tx.Family, "Mono"), Size: tx.Size}
		w := f.width(tx.Text)
		left := tx.X
		switch tx.Anchor {
		case "middle":
			left -= w / 2
		case "end":
			left -= w
		}
		if left < 0 || left+w > d.Width+0.5 {
			out = append(out, fmt.Sprintf("%q from x %.0f, %.0f pt wide, on a %.0f pt canvas", tx.Text, left, w, d.Width))
		}
	}
	return out
}

// nodeFileRun is a run on a node file: GPU use not measured, CPU and RSS
// sampled, and the summary's note as picture.go writes it.
func nodeFileRun() Run {
	r := Run{Title: "python train.py  on gpu07, 2026-11-23 18:00 UTC", GPUNote: "no GPU telemetry: a node file or simulated node describes GPUs, not their use"}
	for i := range 2 {
		in := Instance{Label: fmt.Sprintf("instance %d (0000:%02x:00.0)", i, 0x18+i)}
		for k := range 20 {
			in.T = append(in.T, 0.2*float64(k+1))
			in.GPUUtil, in.GPUMem = append(in.GPUUtil, -1), append(in.GPUMem, -1)
			in.CPU, in.RSS = append(in.CPU, 90+float64(i)), append(in.RSS, 3<<20)
		}
		in.Events = []Event{{0, "start"}, {4, "exit"}}
		r.Instances = append(r.Instances, in)
	}
	r.Summary = []string{"INST  EXIT  WALL  RESTARTS  GPU% MEAN/PEAK  GPU MEM", "0     0     4s    0         -               -", "",
		"exit status 0, wall 4s", "GPU use not measured: no GPU telemetry: a node file or simulated node describes GPUs, not their use"}
	return r
}

// Rules of runPanels, each by its number.
func TestRunPanelsRules(t *testing.T) {
	titles := func(ps []panel) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Title)
		}
		return strings.Join(s, "|")
	}
	gpu, cpu := gpuUtilPanel.Title+"|"+gpuMemPanel.Title, cpuPanel.Title+"|"+rssPanel.Title
	for _, tc := range []struct {
		rule string
		run  Run
		want string
	}{
		{"1+2: GPU, CPU and RSS measured", sampleRun(), gpu + "|" + cpu},
		{"1: GPU not measured, left out", nodeFileRun(), cpu},
		{"3: no sample at all", Run{Instances: []Instance{{Label: "instance 0"}}}, gpuUtilPanel.Title},
	} {
		if got := titles(runPanels(tc.run)); got != tc.want {
			t.Errorf("%s: panels %s, want %s", tc.rule, got, tc.want)
		}
	}
}

// A node-file run's picture draws the CPU % and RSS it has, says that
// GPU use was not measured, and every line of it, the note included,
// fits the picture.
func TestRunSVGNodeFileRun(t *testing.T) {
	var svg bytes.Buffer
	if err := RunSVG(nodeFileRun(), &svg); err != nil {
		t.Fatal(err)
	}
	d := readSVG(t, svg.Bytes())
	if bad := d.overflowing(); len(bad) > 0 {
		t.Errorf("text past the edge:\n%s", strings.Join(bad, "\n"))
	}
	texts := map[string]bool{}
	for _, tx := range d.Texts {
		texts[tx.Text] = true
	}
	for _, want := range []string{cpuPanel.Title, rssPanel.Title, cpuPanel.YLabel, "RSS (MiB)"} {
		if !texts[want] {
			t.Errorf("no %q", want)
		}
	}
	if !strings.Contains(svg.String(), "GPU use not measured (a node file") {
		t.Error("no note that GPU use was not measured")
	}
	if texts[gpuUtilPanel.Title] {
		t.Error("an empty GPU utilisation panel is drawn")
	}
	if out := os.Getenv("CHART_OUT"); out != "" {
		os.WriteFile(out+"/nodefile.svg", svg.Bytes(), 0o644)
	}
}

// Eight instances that start and exit at one moment: no two instances'
// event glyphs overlap.
func TestRunSVGEventsApart(t *testing.T) {
	var svg bytes.Buffer
	if err := RunSVG(sampleRun(), &svg); err != nil {
		t.Fatal(err)
	}
	d := readSVG(t, svg.Bytes())
	// a cross is two paths: one glyph per colour and place
	var glyphs []glyphBox
	perColour := map[string]int{}
	for _, g := range d.Glyphs {
		same := false
		for _, h := range glyphs {
			same = same || (h.Colour == g.Colour && h.overlaps(g))
		}
		if !same {
			glyphs = append(glyphs, g)
			perColour[g.Colour]++
		}
	}
	// each instance's start and exit (an instance's own restart, a second
	// after its exit, may share their place)
	if len(perColour) != 8 {
		t.Fatalf("event glyphs in %d colours, want 8: %v", len(perColour), glyphs)
	}
	for c, n := range perColour {
		if n < 2 {
			t.Errorf("colour %s: %d event glyph(s), want its start and exit", c, n)
		}
	}
	for i, a := range glyphs {
		for _, b := range glyphs[i+1:] {
			if a.Colour != b.Colour && a.overlaps(b) {
				t.Errorf("glyphs overlap: %v and %v", a, b)
			}
		}
	}
}

// A study's spread is drawn: one vertical bar in the measured line's
// colour at each size whose runs have a spread, as tall as the spread.
func TestStudySVGSpread(t *testing.T) {
	s := Study{Title: "spread", Threshold: 0.6, Verdict: "scales"}
	for _, g := range []int{1, 2, 4} {
		sp := float64(g) * 0.9
		s.Points = append(s.Points, StudyPoint{GPUs: g, Speedup: fp(sp), Ideal: fp(float64(g)), Efficiency: fp(0.9),
			SpeedupLow: fp(sp - 0.5), SpeedupHigh: fp(sp + 0.5), Status: "ok"})
	}
	s.Points = append(s.Points, StudyPoint{GPUs: 8, Speedup: fp(6), Ideal: fp(8), Efficiency: fp(0.75), Status: "ok"}) // one run: no spread
	var svg bytes.Buffer
	if err := StudySVG(s, &svg); err != nil {
		t.Fatal(err)
	}
	var heights []float64
	dec := xml.NewDecoder(&svg)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok || el.Name.Local != "path" {
			continue
		}
		attr := map[string]string{}
		for _, a := range el.Attr {
			attr[a.Name.Local] = a.Value
		}
		var x0, y0, x1, y1 float64
		if n, _ := fmt.Sscanf(attr["d"], "M%f,%f L%f,%f", &x0, &y0, &x1, &y1); n == 4 && x0 == x1 && y0 != y1 &&
			styleOf(attr["style"], "stroke") == palette[0].String() {
			heights = append(heights, math.Abs(y1-y0))
		}
	}
	if len(heights) != 3 {
		t.Fatalf("%d spread bars, want 3 (the sizes with a spread): %v", len(heights), heights)
	}
	// each spread is 1 (×) on one axis: three bars of one height
	if math.Abs(heights[0]-heights[1]) > 0.02 || math.Abs(heights[0]-heights[2]) > 0.02 || heights[0] < 5 {
		t.Errorf("bars of heights %v, want three equal ones", heights)
	}
}

// A packing study's picture: speedup and GPU use against the instances
// per GPU, a line per mode (MPS's starting at 2: one per GPU shares
// nothing), no ideal and no efficiency; its text stays inside.
func TestPackingSVG(t *testing.T) {
	s := Study{Title: "gpulaunch scale --per-gpu: python matmul.py", By: "instances per GPU", Packing: true, Figure: "the summed figure (matmul/s)",
		Verdict: "4 per GPU under MPS: 4.3× one per GPU, leaving 137.0 GiB of each GPU's memory"}
	s.Points = []StudyPoint{{GPUs: 1, Speedup: fp(1), Util: fp(46), Mode: "taking turns", Status: "ok"},
		{GPUs: 2, Speedup: fp(1.3), Util: fp(30), Mode: "taking turns", Status: "ok"}, {GPUs: 2, Speedup: fp(2.4), Util: fp(90), Mode: "under MPS", Status: "ok"},
		{GPUs: 4, Speedup: fp(1.5), Util: fp(16), Mode: "taking turns", Status: "ok"}, {GPUs: 4, Mode: "under MPS", Status: "failed"}}
	var svg bytes.Buffer
	if err := StudySVG(s, &svg); err != nil {
		t.Fatal(err)
	}
	d := readSVG(t, svg.Bytes())
	var texts []string
	for _, tx := range d.Texts {
		texts = append(texts, strings.ReplaceAll(tx.Text, "\u00a0", " "))
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"Speedup of the summed figure (matmul/s) over the baseline", "taking turns", "under MPS", "instances per GPU", "GPU utilisation",
		"4 per GPU under MPS: failed"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in\n%s", want, all)
		}
	}
	for _, absent := range []string{"Parallel efficiency", "ideal", "threshold"} {
		if strings.Contains(all, absent) {
			t.Errorf("a packing picture shows %q", absent)
		}
	}
	if bad := d.overflowing(); len(bad) > 0 {
		t.Errorf("text past the edge:\n%s", strings.Join(bad, "\n"))
	}
	if out := os.Getenv("CHART_OUT"); out != "" {
		os.WriteFile(out+"/packing.svg", svg.Bytes(), 0o644)
	}
}

// Rules of gpuUtilTitle and legendLabel, each by its number: the GPU
// panel says whose use its lines are, and where sources mix the legend
// marks the instances whose line is their GPU's.
func TestGPUUtilSourceRules(t *testing.T) {
	with := func(sources ...string) Run {
		r := sampleRun()
		r.Instances = r.Instances[:len(sources)]
		for i, s := range sources {
			r.Instances[i].GPUUtilSource = s
		}
		return r
	}
	for _, tc := range []struct {
		rule   string
		run    Run
		title  string
		legend string // instance 1's legend line
	}{
		{"1: every instance's own processes'", with("processes", "processes"), "GPU utilisation of each instance's own processes (SM %)", "instance 1 (0000:19:00.0)"},
		{"2: every instance's GPU's", with("gpu", "gpu"), "GPU utilisation of each instance's GPU, whoever used it", "instance 1 (0000:19:00.0)"},
		{"3: mixed, the legend marks the GPU's", with("processes", "gpu"), "GPU utilisation: each instance's own processes', or its GPU's where the legend says", "instance 1 (0000:19:00.0) · GPU%: its GPU's"},
		{"4: no source known", with("", ""), "GPU utilisation", "instance 1 (0000:19:00.0)"},
	} {
		if got := gpuUtilTitle(tc.run); got != tc.title {
			t.Errorf("%s: title %q, want %q", tc.rule, got, tc.title)
		}
		if got := legendLabel(tc.run, tc.run.Instances[1]); got != tc.legend {
			t.Errorf("%s: legend %q, want %q", tc.rule, got, tc.legend)
		}
		var b bytes.Buffer
		if err := RunSVG(tc.run, &b); err != nil {
			t.Fatal(err)
		}
		if svg := html.UnescapeString(b.String()); !strings.Contains(svg, tc.title) || !strings.Contains(svg, tc.legend) {
			t.Errorf("%s: the picture lacks %q or %q", tc.rule, tc.title, tc.legend)
		}
	}
}
