package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/report"
	"github.com/gpulaunch/gpulaunch/pkg/scaling"
	"github.com/gpulaunch/gpulaunch/pkg/table"
)

// amdahlApp is the test app of known scaling (scripts/amdahl-app.sh):
// 1000 samples/s on one GPU, 1 / (0.1 + 0.9/G) times that on G.
const amdahlApp = "../../scripts/amdahl-app.sh"

func amdahlSpeedup(g int) float64 { return 1 / (0.1 + 0.9/float64(g)) }

// scaleStudy runs gpulaunch scale with args and reads its --json.
func scaleStudy(t *testing.T, args ...string) (scaling.Study, string, error) {
	t.Helper()
	dir := t.TempDir()
	jsonFile, svgFile := filepath.Join(dir, "scale.json"), filepath.Join(dir, "scale.svg")
	cmd := gpulaunch(t, append([]string{"scale", "--simulate", "dgx-h100", "--monitor-interval", "50ms", "--json", jsonFile, "--svg", svgFile}, args...)...)
	cmd.Env = append(cmd.Env, "AMDAHL_SECONDS=0.2")
	out, err := cmd.CombinedOutput()
	var st scaling.Study
	b, rerr := os.ReadFile(jsonFile)
	if rerr != nil {
		t.Fatalf("no --json: %v\n%s", rerr, out)
	}
	validateAgainstSchema(t, "scale", b)
	json.Unmarshal(b, &st)
	svg, _ := os.ReadFile(svgFile)
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("--svg is not well-formed: %v", err)
			}
			break
		}
	}
	if !strings.Contains(string(svg), "Parallel efficiency") {
		t.Errorf("--svg lacks the efficiency panel")
	}
	return st, string(out), err
}

// The Amdahl app's speedups, as gpulaunch scale measures them, within 5%
// of the model's, one process on G GPUs and N data-parallel instances.
func TestScaleMeasuresAmdahl(t *testing.T) {
	for _, by := range [][]string{{"-G", "1,2,4,8"}, {"-n", "1,2,4,8", "--ddp"}} {
		t.Run(by[0], func(t *testing.T) {
			st, out, err := scaleStudy(t, append(by, "--metric", `throughput: ([0-9.]+)`, "--unit", "samples/s", "--", amdahlApp)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(st.Points) != 4 {
				t.Fatalf("%d points\n%s", len(st.Points), out)
			}
			for _, p := range st.Points {
				want := amdahlSpeedup(p.GPUs)
				if p.Status != "ok" || p.Speedup == nil || math.Abs(*p.Speedup/want-1) > 0.05 || p.Efficiency == nil ||
					math.Abs(*p.Efficiency-want/float64(p.GPUs)) > 0.05 {
					t.Errorf("%d GPUs: %s, speedup %v efficiency %v; want %.3f, %.3f", p.GPUs, p.Status, p.Speedup, p.Efficiency, want, want/float64(p.GPUs))
				}
			}
			for _, want := range []string{"EFFICIENCY", "59%", "verdict: beyond 4 GPU(s) efficiency drops below 60% (59% at 8): 4 GPU(s) is the efficient size"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in\n%s", want, out)
				}
			}
		})
	}
}

// A regex that never matches: each size is "no metric", never 0, and the
// study, not whole, exits 1.
func TestScaleNoMetric(t *testing.T) {
	st, out, err := scaleStudy(t, "-G", "1,2", "--metric", `latency: ([0-9.]+)`, "--", amdahlApp)
	if exitStatus(err) != 1 {
		t.Fatalf("exit %v\n%s", err, out)
	}
	for _, p := range st.Points {
		if p.Status != "no metric" || p.Median != nil || p.Runs[0].Metric != nil || !strings.Contains(p.Runs[0].NoMetric, "never matched") {
			t.Errorf("%d GPUs: %+v", p.GPUs, p)
		}
	}
	if !strings.Contains(out, "no metric") || !strings.Contains(out, "nothing to compare") {
		t.Errorf("table:\n%s", out)
	}
	if strings.Contains(out, "METRIC ()") || !strings.Contains(out, "METRIC ") {
		t.Errorf("the header names no unit when --unit is not given:\n%s", out)
	}
}

// Ctrl-C stops the study and keeps the sizes done: exit 130, the JSON
// and the plot written.
func TestScaleInterrupted(t *testing.T) {
	dir := t.TempDir()
	jsonFile := filepath.Join(dir, "scale.json")
	cmd := gpulaunch(t, append([]string{"scale", "--simulate", "dgx-h100", "-G", "1,2,4", "--metric", `throughput: ([0-9]+)`, "--json", jsonFile, "--"},
		helperArgs("scale-app", dir, "2")[1:]...)...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the 2-GPU run to start", func() bool { _, err := os.Stat(filepath.Join(dir, "started.2")); return err == nil })
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var st scaling.Study
	b, _ := os.ReadFile(jsonFile)
	validateAgainstSchema(t, "scale", b)
	json.Unmarshal(b, &st)
	if exitStatus(err) != 130 || !st.Interrupted || len(st.Points) != 3 || st.Points[0].Status != "ok" || st.Points[1].Status != "interrupted" ||
		len(st.Points[2].Runs) != 0 || st.Points[2].Status != "not run" {
		t.Fatalf("exit %v, study %+v\n%s", err, st, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "started.4")); err == nil {
		t.Error("the 4-GPU size ran after Ctrl-C")
	}
}

// interruptedStudy runs a study of sizes on a simulated DGX H100 with
// app, sends Ctrl-C once the app has made dir/mark, and reads the --json
// the study wrote: the study, its output and its end.
func interruptedStudy(t *testing.T, dir string, sizes, app []string, mark string) (scaling.Study, string, error) {
	t.Helper()
	jsonFile := filepath.Join(dir, "scale.json")
	args := append(append([]string{"scale", "--simulate", "dgx-h100"}, sizes...), "--metric", `throughput: ([0-9]+)`, "--json", jsonFile, "--")
	cmd := gpulaunch(t, append(args, app...)...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, mark, func() bool { _, err := os.Stat(filepath.Join(dir, mark)); return err == nil })
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	b, rerr := os.ReadFile(jsonFile)
	if rerr != nil {
		t.Fatalf("no --json: %v\n%s", rerr, out.String())
	}
	validateAgainstSchema(t, "scale", b)
	var st scaling.Study
	json.Unmarshal(b, &st)
	return st, out.String(), err
}

// Ctrl-C in round 2 of --repeat 2 (issue 34): the size whose run was
// stopped is "interrupted" though round 1 gave it a figure, which it
// keeps; the verdict says the study was interrupted; exit 130.
func TestScaleInterruptedInRound2(t *testing.T) {
	dir := t.TempDir()
	st, out, err := interruptedStudy(t, dir, []string{"-G", "1,2", "--repeat", "2"}, helperArgs("scale-round-app", dir, "1", "2")[1:], "run.1.2")
	if exitStatus(err) != 130 || !st.Interrupted || len(st.Points) != 2 || st.Points[0].Status != "interrupted" || st.Points[0].Median == nil ||
		*st.Points[0].Median != 100 || len(st.Points[0].Runs) != 2 || st.Points[1].Status != "ok" || len(st.Points[1].Runs) != 1 {
		t.Fatalf("exit %v, study %+v\n%s", err, st, out)
	}
	if !strings.Contains(st.Verdict, "interrupted") || !regexp.MustCompile(`(?m)^1 .*interrupted$`).MatchString(out) {
		t.Errorf("verdict %q; table:\n%s", st.Verdict, out)
	}
}

// scale -n with --share-gpus on a node of one GPU (issue 34): the sizes
// run, taking turns on it as `gpulaunch -n 2 --share-gpus` does; each
// size counts the one GPU it used, and the ideal is the instances.
func TestScaleShareGPUs(t *testing.T) {
	dir := t.TempDir()
	node := filepath.Join(dir, "node.json")
	os.WriteFile(node, []byte(`{"name": "one", "gpus": [{"pci": "0000:01:00.0", "numa": 0, "uuid": "GPU-00000000-0000-4000-8000-000000000001", "device": "/dev/null"}]}`), 0o644)
	jsonFile := filepath.Join(dir, "scale.json")
	cmd := gpulaunch(t, "scale", "--node-file", node, "-n", "1,2", "--share-gpus", "-O", "--metric", `throughput: ([0-9.]+)`, "--metric-sum", "--json", jsonFile, "--", amdahlApp)
	cmd.Env = append(cmd.Env, "AMDAHL_SECONDS=0.1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, _ := os.ReadFile(jsonFile)
	validateAgainstSchema(t, "scale", b)
	var st scaling.Study
	json.Unmarshal(b, &st)
	if len(st.Points) != 2 || st.Points[1].GPUs != 1 || st.Points[1].Instances != 2 || st.Points[1].Status != "ok" ||
		st.Points[1].Ideal == nil || *st.Points[1].Ideal != 2 {
		t.Fatalf("study %+v\n%s", st, out)
	}
	if !strings.Contains(st.Verdict, "instance(s)") {
		t.Errorf("verdict %q counts GPUs, not the instances that share one", st.Verdict)
	}
}

// Ctrl-C in the study's first size: that size is "interrupted", the sizes
// never run are "not run" (not "failed") with an empty list of runs, and
// the JSON is valid.
func TestScaleInterruptedInItsFirstSize(t *testing.T) {
	dir := t.TempDir()
	st, out, err := interruptedStudy(t, dir, []string{"-G", "1,2,4"}, helperArgs("scale-app", dir, "1")[1:], "started.1")
	if exitStatus(err) != 130 || len(st.Points) != 3 || st.Points[0].Status != "interrupted" {
		t.Fatalf("exit %v, study %+v\n%s", err, st, out)
	}
	for _, p := range st.Points[1:] {
		if p.Status != "not run" || p.Runs == nil || len(p.Runs) != 0 {
			t.Errorf("%d GPUs: %q, runs %v; want \"not run\", []", p.GPUs, p.Status, p.Runs)
		}
	}
	if !regexp.MustCompile(`(?m)^2 .*not run$`).MatchString(out) || strings.Contains(out, "failed") {
		t.Errorf("the table shows the sizes never run as failed:\n%s", out)
	}
}

// Bad input: one line that says what and how to fix it, exit 2, nothing
// started (the app would leave a mark).
func TestScaleBadInput(t *testing.T) {
	dir := t.TempDir()
	app := append([]string{"--"}, helperArgs("scale-app", dir, "0")[1:]...)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-G", "1,2", "--metric", ""}, "--metric is empty"},
		{[]string{"-G", "1,2", "--metric", "(throughput"}, "is not a regex"},
		{[]string{"-G", "1,2", "--metric", "(a)(b)"}, "has 2 groups"},
		{[]string{"-G", "1,2,16"}, "-G 16: "},
		{[]string{"-n", "4,16"}, "-n 16: "},
		{[]string{"-G", "1,2", "-n", "1,2"}, "one of them"},
		{[]string{}, "give the sizes with -G"},
		{[]string{"-G", "0,1"}, "not a count from 1"},
		{[]string{"-G", "1,2", "--ddp"}, "--ddp is for -n"},
		{[]string{"-G", "1,2", "--metric-mean"}, "give --metric"},
		{[]string{"-G", "1,2", "--efficiency", "2"}, "--efficiency 2"},
		{[]string{"-G", "1,2", "--json", "/nonexistent/dir/s.json"}, "does not exist"},
		{[]string{"-G", "1,2", "--tmux"}, "--tmux is not for a study"},
		{[]string{"-G", "1,16", "--share-gpus"}, "-G 16: one process on 16 GPUs, and the allocation has 8"},
		{[]string{"-n", "1,16"}, "--share-gpus for instances that take turns"},
		{[]string{"-n", "1,99999999999"}, "99999999999 is too large: a size is 1..8192"},
		{[]string{"-G", "1,2147483648"}, "2147483648 is too large: a size is 1..1024"},
		{[]string{"-G", "1", "--repeat", "99999999999"}, "--repeat 99999999999: too large: rounds of a study are 1..1000"},
		// issue 36: the packing study's refusals
		{[]string{"--per-gpu", "1,2", "-n", "1,2"}, "or --per-gpu 1,2,4,8 (K instances on every GPU), one of them"},
		{[]string{"--per-gpu", "0,1"}, `--per-gpu "0,1": "0" is not a count from 1`},
		{[]string{"-n", "1,2", "--mps"}, "--mps is for a packing study: --per-gpu 1,2,4 --mps"},
		{[]string{"--per-gpu", "1,2", "--ddp"}, "--per-gpu packs independent instances"},
		{[]string{"--per-gpu", "1,2", "--metric", "x", "--metric-mean"}, "drop --metric-mean"},
		{[]string{"--per-gpu", "1,2", "--weak"}, "drop --weak"},
		{[]string{"--per-gpu", "1,2048"}, "--per-gpu 2048: 2048 per GPU on 8 GPUs is 16384 instances, and one node runs at most 8192: give sizes up to 1024"},
		{[]string{"--per-gpu", "1,64", "--mps"}, "--per-gpu 64 --mps: MPS serves at most 48 clients per GPU"},
	} {
		stdout, stderr, code := runCLI(t, nil, append(append([]string{"scale", "--simulate", "dgx-h100"}, tc.args...), app...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gpulaunch: error: ") || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q; want one error line with %q", tc.args, code, stderr, tc.want)
		}
	}
	if marks, _ := filepath.Glob(filepath.Join(dir, "started.*")); len(marks) > 0 {
		t.Errorf("a refused study started something: %v", marks)
	}
}

// gpulaunch report FILE --svg on a real simulated run with declared GPU
// use: a well-formed SVG with one series per instance; --html a page.
func TestReportPicture(t *testing.T) {
	dir := t.TempDir()
	reportFile, svg, page := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.svg"), filepath.Join(dir, "run.html")
	cmd := gpulaunch(t, "-n", "4", "--simulate", "dgx-h100", "--monitor-interval", "20ms", "--report", reportFile, "--", amdahlApp)
	cmd.Env = append(cmd.Env, "AMDAHL_SECONDS=2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r report.Run
	b, _ := os.ReadFile(reportFile)
	validateAgainstSchema(t, "report", b)
	json.Unmarshal(b, &r)
	for _, in := range r.Instances {
		if in.Series == nil || len(in.Series.T) == 0 || len(in.Events) < 2 {
			t.Fatalf("instance %d: series %v, events %v", in.Instance, in.Series, in.Events)
		}
	}
	for _, args := range [][]string{{"report", reportFile, "--svg", svg}, {"report", reportFile, "--html", page}} {
		if _, stderr, code := runCLI(t, nil, args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, stderr)
		}
	}
	doc, _ := os.ReadFile(svg)
	d := xml.NewDecoder(strings.NewReader(string(doc)))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v", err)
			}
			break
		}
	}
	for i := range 4 {
		if n := strings.Count(string(doc), fmt.Sprintf(">instance %d (", i)); n != 1 {
			t.Errorf("series of instance %d in the legend: %d", i, n)
		}
	}
	if strings.Count(string(doc), ">instance ") != 4 {
		t.Errorf("%d series, want 4", strings.Count(string(doc), ">instance "))
	}
	html, _ := os.ReadFile(page)
	if !strings.HasPrefix(string(html), "<!DOCTYPE html>") || !strings.Contains(string(html), "<svg") {
		t.Errorf("the page:\n%.200s", html)
	}
	for _, bad := range [][]string{{"report", reportFile}, {"report", filepath.Join(dir, "none.json"), "--svg", svg}, {"report", svg, "--svg", svg + "2"}} {
		if _, stderr, code := runCLI(t, nil, bad...); code != 2 || !strings.HasPrefix(stderr, "gpulaunch: error: ") {
			t.Errorf("%v: exit %d, %q", bad, code, stderr)
		}
	}
}

// A size that fails is shown with its status and the study goes on;
// --halt stops it there.
func TestScaleFailedSize(t *testing.T) {
	for _, halt := range []bool{false, true} {
		dir := t.TempDir()
		jsonFile := filepath.Join(dir, "scale.json")
		args := []string{"scale", "--simulate", "dgx-h100", "-G", "1,2,4", "--metric", `throughput: ([0-9]+)`, "--json", jsonFile}
		if halt {
			args = append(args, "--halt")
		}
		out, err := gpulaunch(t, append(append(args, "--"), helperArgs("scale-app", dir, "0", "2")[1:]...)...).CombinedOutput()
		var st scaling.Study
		b, _ := os.ReadFile(jsonFile)
		json.Unmarshal(b, &st)
		validateAgainstSchema(t, "scale", b)
		ran4 := len(st.Points) == 3 && len(st.Points[2].Runs) == 1
		if halt && st.Points[2].Status != "not run" {
			t.Errorf("--halt: the size after the failed one is %q, want \"not run\"", st.Points[2].Status)
		}
		if exitStatus(err) != 1 || len(st.Points) != 3 || st.Points[1].Status != "failed" || st.Points[1].Runs[0].ExitCode != 3 || ran4 == halt {
			t.Errorf("--halt %v: exit %v, study %+v\n%s", halt, err, st.Points, out)
		}
		if !strings.Contains(string(out), "out of memory") {
			t.Errorf("the failed size's last lines are not shown:\n%s", out)
		}
	}
}

// The run flags scale refuses are refused with the reason, and offered
// nowhere: not in scale --help, the man page's scale section, or the
// completion scripts.
func TestScaleOffersNoFlagItRefuses(t *testing.T) {
	help, _, _ := runCLI(t, nil, "scale", "--help")
	man, _, _ := runCLI(t, nil, "man")
	_, scaleSection, _ := strings.Cut(man, "\n.SS \"gpulaunch scale\"")
	scaleSection, _, _ = strings.Cut(scaleSection, "\n.SS ")
	bash, _, _ := runCLI(t, nil, "completion", "bash")
	for _, name := range scaling.NotForAStudy {
		if strings.Contains(help, "--"+name+" ") {
			t.Errorf("scale --help offers --%s, which scale refuses", name)
		}
		if strings.Contains(scaleSection, `\-\-`+name) || strings.Contains(scaleSection, "--"+name) {
			t.Errorf("the man page's scale section offers --%s", name)
		}
		if strings.Contains(bash, "'scale --"+name+"'") {
			t.Errorf("the bash completion offers scale --%s", name)
		}
	}
}

// scale --help speaks of a study's runs (issue 34): its -o, --open-mode
// and --master-port say nothing of a task queue or --resume, which scale
// does not have.
func TestScaleHelpSpeaksOfRuns(t *testing.T) {
	help, _, code := runCLI(t, nil, "scale", "--help")
	if code != 0 {
		t.Fatalf("scale --help: exit %d", code)
	}
	for _, word := range []string{"queue", "--resume", "{#}", "{%}", "a task"} {
		if strings.Contains(help, word) {
			t.Errorf("scale --help speaks of %q:\n%s", word, help)
		}
	}
	for _, flag := range []string{"--output", "--open-mode", "--overcommit", "--share-gpus"} {
		if !strings.Contains(help, flag) {
			t.Errorf("scale --help lacks %s", flag)
		}
	}
}

// packingApp is an instance of a packing study on a simulated node: it
// declares 30% of each of its GPUs and 512 MiB (odd instances 1 GiB),
// runs a second, and prints its own throughput, its instance number + 1.
const packingApp = `for u in $(echo "$GPULAUNCH_GPUS" | tr , ' '); do echo "$u 30 $((512 * (GPULAUNCH_INSTANCE % 2 + 1)))"; done >"$GPULAUNCH_SIMULATED_USAGE_DIR/$$"
sleep 1
echo "throughput: $((GPULAUNCH_INSTANCE + 1))"`

// packingStudy runs `gpulaunch scale` as cmd and reads its --json (valid
// against the schema) and --svg (well-formed, a packing picture).
func packingStudy(t *testing.T, cmd *exec.Cmd, dir string) (scaling.Study, string, error) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	b, rerr := os.ReadFile(filepath.Join(dir, "scale.json"))
	if rerr != nil {
		t.Fatalf("no --json: %v\n%s", rerr, out)
	}
	validateAgainstSchema(t, "scale", b)
	var st scaling.Study
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "scale.svg"))
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("--svg is not well-formed: %v", err)
			}
			break
		}
	}
	if !strings.Contains(string(svg), "instances per GPU") || strings.Contains(string(svg), "Parallel efficiency") {
		t.Errorf("--svg is not a packing study's picture:\n%.400s", svg)
	}
	return st, string(out), err
}

// scale --per-gpu 1,2 on a simulated DGX H100 (issue 36): two sizes, 8
// and 16 instances on its 8 GPUs; each size's figure is the sum of its
// instances' own, each instance keeps its figure, GPU% and GPU memory,
// the headroom is the H100's memory less K × 1 GiB, and the verdict
// names the best packing.
func TestScalePerGPU(t *testing.T) {
	dir := t.TempDir()
	cmd := gpulaunch(t, "scale", "--simulate", "dgx-h100", "--per-gpu", "1,2", "-O", "--monitor-interval", "50ms", "--metric", `throughput: ([0-9]+)`,
		"--json", filepath.Join(dir, "scale.json"), "--svg", filepath.Join(dir, "scale.svg"), "--", "sh", "-c", packingApp)
	st, out, err := packingStudy(t, cmd, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if st.By != "per_gpu" || len(st.Points) != 2 || st.Metric == nil || st.Metric.Of != "sum" {
		t.Fatalf("study %+v\n%s", st, out)
	}
	for i, k := range []int{1, 2} {
		p := st.Points[i]
		n := 8 * k
		want := float64(n * (n + 1) / 2) // 1 + 2 + … + n
		if p.PerGPU != k || p.Mode != scaling.Turns || p.Instances != n || p.GPUs != 8 || p.Status != "ok" || p.Median == nil || *p.Median != want || len(p.Each) != n {
			t.Fatalf("%d per GPU: %+v; want %d instances summing to %v\n%s", k, p, n, want, out)
		}
		for j, e := range p.Each {
			if e.Metric == nil || *e.Metric != float64(j+1) || e.GPUUtil == nil || e.GPUMemPeak == nil || *e.GPUMemPeak != float64((j%2+1)*512<<20) {
				t.Errorf("%d per GPU, instance %d: %+v", k, j, e)
			}
			// its own 30%, not its GPU's 60 when two take turns on it
			if e.GPUUtil != nil && (*e.GPUUtil > 30 || e.GPUUtilSource != "processes") {
				t.Errorf("%d per GPU, instance %d: GPU%% %v from %q; want at most its own 30, from its processes", k, j, *e.GPUUtil, e.GPUUtilSource)
			}
		}
		// the H100's memory as the backend gives it: go-nvml's mock's
		// 80 GiB with cgo, the description's 79.6 GiB without
		if p.GPUMemTotal == nil || *p.GPUMemTotal < 79<<30 || *p.GPUMemTotal > 80<<30 {
			t.Fatalf("%d per GPU: GPU memory %v, want an H100's", k, p.GPUMemTotal)
		}
		if p.Headroom == nil || *p.Headroom != *p.GPUMemTotal-float64(k*(1<<30)) {
			t.Errorf("%d per GPU: headroom %v, want the GPU's %v less %d GiB", k, p.Headroom, *p.GPUMemTotal, k)
		}
	}
	left := table.Bytes(uint64(*st.Points[1].GPUMemTotal) - 2<<30)
	if sp := st.Points[1].Speedup; sp == nil || math.Abs(*sp-136.0/36) > 1e-9 || st.Points[1].Efficiency != nil {
		t.Errorf("speedup %v, efficiency %v; want 136/36 and none", sp, st.Points[1].Efficiency)
	}
	for _, want := range []string{"PER GPU", "HEADROOM/GPU", left, "verdict: 2 per GPU taking turns: 3.8× one per GPU, leaving " + left + " of each GPU's memory"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// A packing study's GPU% is how busy each GPU was (study.GPUBusy), the
// same quantity in both modes (issue 36's review: taking turns showed
// each instance's own 30, under MPS the GPU's 60, and a user read that
// MPS filled the GPU better): 2 per GPU declaring 30% each keep each GPU
// about 60% busy taking turns and under MPS alike, while each instance
// keeps its own figure — its own 30 from its processes taking turns, its
// GPU's 60 under MPS, where the simulated backend, as NVML, gives a
// client its GPU's summed figure.
func TestScalePerGPUBusyAlike(t *testing.T) {
	b := newMPSBed(t)
	dir := t.TempDir()
	cmd := b.cmd(t, nil, "scale", "--simulate", "dgx-h100", "--per-gpu", "2", "--mps", "-O", "--monitor-interval", "50ms", "--metric", `throughput: ([0-9]+)`,
		"--json", filepath.Join(dir, "scale.json"), "--svg", filepath.Join(dir, "scale.svg"), "--", "sh", "-c", packingApp)
	st, out, err := packingStudy(t, cmd, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(st.Points) != 2 || st.Points[0].Mode != scaling.Turns || st.Points[1].Mode != scaling.MPS {
		t.Fatalf("points %+v, want 2 per GPU taking turns and under MPS\n%s", st.Points, out)
	}
	if !strings.Contains(out, "GPU% (each GPU)") {
		t.Errorf("the table's GPU%% column does not say it is each GPU's:\n%s", out)
	}
	// a sample taken before an instance declared its use reads 0 for
	// it: the means may fall short of 60 on a loaded machine, and are
	// bounded here by what tells the two quantities apart (over 40: not
	// an instance's own 30)
	for _, p := range st.Points {
		name, least, most, source := scaling.PackingName(p), 0.0, 30.0, "processes"
		if p.Mode == scaling.MPS {
			least, most, source = 40, 60, "gpu"
		}
		if p.GPUUtil == nil || *p.GPUUtil <= 40 || *p.GPUUtil > 60 {
			t.Errorf("%s: GPU%% %s, want about 60: each GPU's two instances at 30%% each\n%s", name, pct(p.GPUUtil), out)
		} else if row := regexp.MustCompile(`(?m)^2 +` + p.Mode.Words(2) + ` +16 .*$`).FindString(out); !strings.Contains(row, fmt.Sprintf("  %.0f  ", *p.GPUUtil)) {
			t.Errorf("%s: the table's row %q lacks its GPU%% %.0f\n%s", name, row, *p.GPUUtil, out)
		}
		for j, e := range p.Each {
			if e.GPUUtil == nil || *e.GPUUtil <= least || *e.GPUUtil > most || e.GPUUtilSource != source {
				t.Errorf("%s, instance %d: GPU%% %s from %q; want over %v, at most %v, from %q", name, j, pct(e.GPUUtil), e.GPUUtilSource, least, most, source)
			}
		}
	}
}

// -n with --share-gpus has the same GPU% (study.GPUBusy): 16 instances
// declaring 30% each, two on each of a DGX H100's 8 GPUs, keep each GPU
// about 60% busy — not each instance's own 30.
func TestScaleShareGPUsBusy(t *testing.T) {
	dir := t.TempDir()
	jsonFile := filepath.Join(dir, "scale.json")
	out, err := gpulaunch(t, "scale", "--simulate", "dgx-h100", "-n", "16", "--share-gpus", "-O", "--monitor-interval", "50ms", "--json", jsonFile,
		"--", "sh", "-c", packingApp).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, _ := os.ReadFile(jsonFile)
	validateAgainstSchema(t, "scale", b)
	var st scaling.Study
	json.Unmarshal(b, &st)
	// over 40: not an instance's own 30 (TestScalePerGPUBusyAlike)
	if len(st.Points) != 1 || st.Points[0].GPUs != 8 {
		t.Fatalf("points %+v, want one of 16 instances on 8 GPUs\n%s", st.Points, out)
	}
	if u := st.Points[0].GPUUtil; u == nil || *u <= 40 || *u > 60 {
		t.Errorf("16 instances on 8 GPUs at 30%% each: GPU%% %s, want about 60\n%s", pct(u), out)
	}
	if !strings.Contains(string(out), "GPU% (each GPU)") {
		t.Errorf("the table's GPU%% column does not say it is each GPU's:\n%s", out)
	}
}

// pct is a measured percentage as a test's message says it.
func pct(x *float64) string {
	if x == nil {
		return "not measured"
	}
	return fmt.Sprintf("%.4g", *x)
}

// scale --per-gpu 1,2 --mps (issue 36), with the MPS stand-in: every
// size takes turns, and 2 per GPU also runs under MPS, side by side —
// its 16 instances clients of their GPU's daemon (8 daemons, up before
// them, stopped after), the runs taking turns told nothing of MPS.
func TestScalePerGPUUnderMPS(t *testing.T) {
	b := newMPSBed(t)
	app := `if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
  echo get_server_list | nvidia-cuda-mps-control >/dev/null || exit 8
  echo "$CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" >"$UPDIR/mps.$GPULAUNCH_INSTANCE"
else
  echo x >>"$UPDIR/turns"
fi`
	dir := t.TempDir()
	cmd := b.cmd(t, nil, "scale", "--simulate", "dgx-h100", "--per-gpu", "1,2", "--mps", "-O", "--monitor-interval", "0",
		"--json", filepath.Join(dir, "scale.json"), "--svg", filepath.Join(dir, "scale.svg"), "--", "sh", "-c", app)
	st, out, err := packingStudy(t, cmd, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, p := range st.Points {
		got = append(got, fmt.Sprintf("%d %s %d %s", p.PerGPU, p.Mode, p.Instances, p.Status))
		if p.Speedup == nil || len(p.Each) != p.Instances {
			t.Errorf("%d per GPU %s: speedup %v, %d instances' figures", p.PerGPU, p.Mode, p.Speedup, len(p.Each))
		}
	}
	if want := "1 turns 8 ok|2 turns 16 ok|2 mps 16 ok"; strings.Join(got, "|") != want {
		t.Fatalf("points %q, want %q\n%s", strings.Join(got, "|"), want, out)
	}
	if !strings.Contains(st.Verdict, "per GPU") || !regexp.MustCompile(`(?m)^2 +under MPS +16 `).MatchString(out) || !regexp.MustCompile(`(?m)^2 +taking turns +16 `).MatchString(out) {
		t.Errorf("verdict %q; table:\n%s", st.Verdict, out)
	}
	turns, _ := os.ReadFile(filepath.Join(b.dir, "turns"))
	pipes := map[string]bool{}
	for i := range 16 {
		told, err := os.ReadFile(filepath.Join(b.dir, "mps."+strconv.Itoa(i)))
		f := strings.Fields(string(told))
		if err != nil || len(f) != 2 || f[1] != "50" {
			t.Fatalf("instance %d under MPS was told %q (%v), want its GPU's pipe directory and 50%%\n%s", i, told, err, out)
		}
		pipes[f[0]] = true
	}
	if n := strings.Count(string(turns), "x"); n != 8+16 || len(pipes) != 8 {
		t.Errorf("%d instances took turns (want 24: no MPS told them), %d pipe directories (want 8)", n, len(pipes))
	}
	started, quit := b.daemons(t)
	gone(t, started)
	if len(started) != 8 || quit != 8 || len(b.left()) > 0 {
		t.Errorf("%d daemons started, %d quit, left %q; want 8, 8, none\n%s", len(started), quit, b.left(), out)
	}
}

// The H200's day-one command (issue 36; gpu-h200.md, measured at
// b911b4e, where it was refused "-n 2: the allocation has 1 GPU(s)… give
// sizes up to 1"): on a node of one GPU and 16 CPUs, `scale -n 1,2,4
// --share-gpus` runs its three sizes taking turns on the GPU, without
// -O; and --per-gpu 1,2,4 asks the same of the packing study.
func TestScaleSharingOneGPU(t *testing.T) {
	dir := t.TempDir()
	topo := filepath.Join(dir, "h200.json")
	os.WriteFile(topo, []byte(`{"name": "h200vm", "cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 16, "threads_per_core": 1},
		"gpus": [{"pci": "0000:00:06.0", "numa": 0}]}`), 0o644)
	for _, sizes := range [][]string{{"-n", "1,2,4", "--share-gpus"}, {"--per-gpu", "1,2,4"}} {
		jsonFile := filepath.Join(dir, "scale.json")
		out, err := gpulaunch(t, append(append([]string{"scale", "--simulate", topo, "--json", jsonFile}, sizes...), "--", "true")...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", sizes, err, out)
		}
		b, _ := os.ReadFile(jsonFile)
		validateAgainstSchema(t, "scale", b)
		var st scaling.Study
		json.Unmarshal(b, &st)
		var got []string
		for _, p := range st.Points {
			got = append(got, fmt.Sprintf("%d on %d: %s", p.Instances, p.GPUs, p.Status))
		}
		if want := "1 on 1: ok, 2 on 1: ok, 4 on 1: ok"; strings.Join(got, ", ") != want {
			t.Errorf("%v: %s, want %s\n%s", sizes, strings.Join(got, ", "), want, out)
		}
	}
}

// A packing size whose MPS daemons do not come up (P5): that size gives
// no figure, with the daemon's reason, and the study goes on (exit 1); a
// Ctrl-C while they come up stops the study there (exit 130, the size
// interrupted, the JSON written). Either way no daemon and no directory
// is left.
func TestScalePerGPUMPSDaemonDown(t *testing.T) {
	for _, ctrlC := range []bool{false, true} {
		t.Run(map[bool]string{false: "it does not come up", true: "Ctrl-C while it comes up"}[ctrlC], func(t *testing.T) {
			b := newMPSBed(t)
			wait := "300ms"
			if ctrlC {
				wait = "60s"
			}
			dir := t.TempDir()
			jsonFile := filepath.Join(dir, "scale.json")
			cmd := b.cmd(t, []string{"GPULAUNCH_MPS_WAIT=" + wait, "MPS_STANDIN_NO_PIDFILE=1"}, "scale", "--node-file", nodeFile(t, 1), "--per-gpu", "1,2", "--mps",
				"-O", "--monitor-interval", "0", "--json", jsonFile, "--", "true")
			var out lockedBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if ctrlC {
				waitFor(t, "the daemon to start", func() bool { started, _ := b.daemons(t); return len(started) > 0 })
				cmd.Process.Signal(syscall.SIGINT)
			}
			code := exitStatus(cmd.Wait())
			b2, err := os.ReadFile(jsonFile)
			if err != nil {
				t.Fatalf("no --json: %v\n%s", err, out.String())
			}
			validateAgainstSchema(t, "scale", b2)
			var st scaling.Study
			json.Unmarshal(b2, &st)
			wantCode, wantStatus := 1, "failed"
			if ctrlC {
				wantCode, wantStatus = 130, "interrupted"
			}
			if code != wantCode || len(st.Points) != 3 || st.Points[2].Mode != scaling.MPS || st.Points[2].Status != wantStatus || st.Points[1].Status != "ok" {
				t.Fatalf("exit %d, points %+v; want %d and the MPS size %s\n%s", code, st.Points, wantCode, wantStatus, out.String())
			}
			if !ctrlC && !strings.Contains(st.Points[2].Runs[0].NoMetric, "MPS: the control daemon for GPU") {
				t.Errorf("the MPS size's reason: %q", st.Points[2].Runs[0].NoMetric)
			}
			if ctrlC != strings.Contains(st.Verdict, "interrupted") {
				t.Errorf("verdict %q", st.Verdict)
			}
			started, _ := b.daemons(t)
			gone(t, started)
			if left := b.left(); len(started) != 1 || len(left) > 0 {
				t.Errorf("%d daemons started (want 1), left behind: %q", len(started), left)
			}
		})
	}
}
