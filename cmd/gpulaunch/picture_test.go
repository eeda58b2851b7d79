package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// svgTexts are the texts of an SVG document, parsed as XML.
func svgTexts(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	d := xml.NewDecoder(f)
	in := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return texts
		} else if err != nil {
			t.Fatalf("%s is not well-formed: %v", file, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if in = el.Name.Local == "text"; in {
				texts = append(texts, "")
			}
		case xml.CharData:
			if in {
				texts[len(texts)-1] += string(el)
			}
		case xml.EndElement:
			in = false
		}
	}
}

// A node-file run measures CPU and RSS but not GPU use: its picture has
// the CPU and memory panels, no empty GPU panel, and says why.
func TestReportPictureNodeFile(t *testing.T) {
	dir := t.TempDir()
	report, svg := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.svg")
	cmd := gpulaunch(t, append([]string{"-n", "2", "--node-file", nodeFile(t, 2), "--monitor-interval", "20ms", "--report", report}, helperArgs("burn", "300ms")...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, stderr, code := runCLI(t, nil, "report", report, "--svg", svg); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	texts := strings.Join(svgTexts(t, svg), "\n")
	for _, want := range []string{"\nCPU use of each instance's process tree\n", "\nResident memory of each instance's process tree\n", "GPU use not measured (a node file"} {
		if !strings.Contains(texts, want) {
			t.Errorf("no %q in the picture's texts:\n%s", want, texts)
		}
	}
	if strings.Contains(texts, "\nGPU utilisation\n") {
		t.Error("an empty GPU utilisation panel is drawn")
	}
}

// A scaling study on a node file measures no GPU use: its utilisation
// panel says so instead of standing empty, and the speedup's title names
// the figure and its unit. With -q, only the table is printed.
func TestScalePictureNotes(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "scale.svg")
	cmd := gpulaunch(t, "scale", "-q", "-G", "1,2", "--node-file", nodeFile(t, 2), "--monitor-interval", "50ms",
		"--metric", "throughput: ([0-9.]+)", "--unit", "samples/s", "--svg", svg, "--", amdahlApp)
	cmd.Env = append(cmd.Env, "AMDAHL_SECONDS=0.2")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// -q: the table, no line per run
	if !strings.Contains(string(out), "verdict:") || strings.Contains(string(out), "run 1 of 1") {
		t.Errorf("scale -q printed:\n%s", out)
	}
	texts := strings.Join(svgTexts(t, svg), "\n")
	for _, want := range []string{"Speedup of the figure (samples/s) over the smallest size", "GPU use not measured: a node file"} {
		if !strings.Contains(texts, want) {
			t.Errorf("no %q in the picture's texts:\n%s", want, texts)
		}
	}
}

// report --svg and --html together write both (issue 34: refused as "one
// of them"); OUT - is stdout, not a file named -.
func TestReportBothAndStdout(t *testing.T) {
	dir := t.TempDir()
	report, svg, html := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.svg"), filepath.Join(dir, "run.html")
	cmd := gpulaunch(t, append([]string{"-n", "1", "--node-file", nodeFile(t, 1), "--monitor-interval", "20ms", "--report", report}, helperArgs("burn", "100ms")...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, stderr, code := runCLI(t, nil, "report", report, "--svg", svg, "--html", html); code != 0 {
		t.Fatalf("report --svg --html: exit %d: %s", code, stderr)
	}
	svgTexts(t, svg) // well-formed
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("--html: %v, a page without the picture", err)
	}
	wd, _ := os.Getwd()
	stdout, stderr, code := runCLI(t, nil, "report", report, "--svg", "-")
	if code != 0 || !strings.HasPrefix(stdout, "<svg") || !strings.HasSuffix(strings.TrimSpace(stdout), "</svg>") {
		t.Fatalf("--svg -: exit %d, stdout %.60q, stderr %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(wd, "-")); err == nil {
		t.Error("--svg - wrote a file named -")
	}
}
