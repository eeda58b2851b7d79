package metrics

import (
	"bytes"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var states = []string{"running", "exited"}

// A run of two instances under Slurm: instance 0 measured on its GPU by
// its processes' samples (75% of a GPU busy 90%), instance 1 exited, its
// GPU never sampled.
var instancesRun = Snapshot{Job: "42", Step: "0", Host: "node1", Instances: []Instance{
	{Index: 0, Rank: 4, State: "running", CPUSeconds: 12.5, RSS: 1 << 30, Restarts: 1,
		GPUs: []GPU{{UUID: "GPU-aaa", Sampled: true, Utilization: 0.75, Source: "processes", DeviceUtilization: 0.9, MemoryBytes: 2 << 30}}},
	{Index: 1, Rank: 5, State: "exited", CPUSeconds: 3, GPUs: []GPU{{UUID: "GPU-bbb"}}},
}}

const instancesWant = `
# HELP gpulaunch_gpu_utilization_ratio Utilisation of the GPU at the last sample, 0 to 1, whoever used it (one series per GPU of the run's instances).
# TYPE gpulaunch_gpu_utilization_ratio gauge
gpulaunch_gpu_utilization_ratio{gpu_uuid="GPU-aaa",host="node1",slurm_job="42",slurm_step="0"} 0.9
# HELP gpulaunch_instance_cpu_seconds_total CPU time (user and system) of the instance's process trees, every process it ran so far.
# TYPE gpulaunch_instance_cpu_seconds_total counter
gpulaunch_instance_cpu_seconds_total{gpulaunch_instance="0",host="node1",rank="4",slurm_job="42",slurm_step="0"} 12.5
gpulaunch_instance_cpu_seconds_total{gpulaunch_instance="1",host="node1",rank="5",slurm_job="42",slurm_step="0"} 3
# HELP gpulaunch_instance_gpu_info 1 for each GPU of the instance: the join key with DCGM's and jobstats' series.
# TYPE gpulaunch_instance_gpu_info gauge
gpulaunch_instance_gpu_info{gpu_uuid="GPU-aaa",gpulaunch_instance="0",host="node1",rank="4",slurm_job="42",slurm_step="0"} 1
gpulaunch_instance_gpu_info{gpu_uuid="GPU-bbb",gpulaunch_instance="1",host="node1",rank="5",slurm_job="42",slurm_step="0"} 1
# HELP gpulaunch_instance_gpu_memory_used_bytes GPU memory the instance's processes hold on the GPU at the last sample.
# TYPE gpulaunch_instance_gpu_memory_used_bytes gauge
gpulaunch_instance_gpu_memory_used_bytes{gpu_uuid="GPU-aaa",gpulaunch_instance="0",host="node1",rank="4",slurm_job="42",slurm_step="0"} 2.147483648e+09
# HELP gpulaunch_instance_gpu_utilization_ratio The instance's own use of the GPU at the last sample, 0 to 1: its processes' SM share (gpu_util_source=processes), or the GPU's where the driver cannot tell processes apart (gpu_util_source=gpu: MPS, MIG, AMD, Intel).
# TYPE gpulaunch_instance_gpu_utilization_ratio gauge
gpulaunch_instance_gpu_utilization_ratio{gpu_util_source="processes",gpu_uuid="GPU-aaa",gpulaunch_instance="0",host="node1",rank="4",slurm_job="42",slurm_step="0"} 0.75
# HELP gpulaunch_instance_resident_memory_bytes Resident memory of the instance's process tree at the last sample.
# TYPE gpulaunch_instance_resident_memory_bytes gauge
gpulaunch_instance_resident_memory_bytes{gpulaunch_instance="0",host="node1",rank="4",slurm_job="42",slurm_step="0"} 1.073741824e+09
gpulaunch_instance_resident_memory_bytes{gpulaunch_instance="1",host="node1",rank="5",slurm_job="42",slurm_step="0"} 0
# HELP gpulaunch_instance_restarts_total How often the instance was restarted (--restarts, a --ddp group's restarts).
# TYPE gpulaunch_instance_restarts_total counter
gpulaunch_instance_restarts_total{gpulaunch_instance="0",host="node1",rank="4",slurm_job="42",slurm_step="0"} 1
gpulaunch_instance_restarts_total{gpulaunch_instance="1",host="node1",rank="5",slurm_job="42",slurm_step="0"} 0
# HELP gpulaunch_instance_state 1 for the instance's current state, 0 for the others.
# TYPE gpulaunch_instance_state gauge
gpulaunch_instance_state{gpulaunch_instance="0",host="node1",rank="4",slurm_job="42",slurm_step="0",state="exited"} 0
gpulaunch_instance_state{gpulaunch_instance="0",host="node1",rank="4",slurm_job="42",slurm_step="0",state="running"} 1
gpulaunch_instance_state{gpulaunch_instance="1",host="node1",rank="5",slurm_job="42",slurm_step="0",state="exited"} 1
gpulaunch_instance_state{gpulaunch_instance="1",host="node1",rank="5",slurm_job="42",slurm_step="0",state="running"} 0
# HELP gpulaunch_run_finished 1 once the run has ended: the states are the final ones.
# TYPE gpulaunch_run_finished gauge
gpulaunch_run_finished{host="node1",slurm_job="42",slurm_step="0"} 0
`

// A queue outside Slurm: slot 0 runs task 7 on a MIG device whose
// utilisation the driver does not tell; the slot's retries are no
// counter, so no restarts series.
var queueRun = Snapshot{Host: "ws", Finished: true, Queue: &Queue{Total: 10, Done: 6, Failed: 1, Running: 1, Left: 4},
	Instances: []Instance{{Index: 0, Rank: 0, State: "running", Task: 7, CPUSeconds: 1, Restarts: 2,
		GPUs: []GPU{{UUID: "MIG-ccc", Sampled: true, Utilization: -1, DeviceUtilization: -1, MemoryBytes: 100}}}}}

// Two MPS clients of one GPU busy 90%: each instance's series is the
// GPU's figure, said by its source; the GPU's own series is one.
var sharedRun = Snapshot{Host: "n1", Instances: []Instance{
	{Index: 0, State: "running", GPUs: []GPU{{UUID: "GPU-aaa", Sampled: true, Utilization: 0.9, Source: "gpu", DeviceUtilization: 0.9}}},
	{Index: 1, Rank: 1, State: "running", GPUs: []GPU{{UUID: "GPU-aaa", Sampled: true, Utilization: 0.9, Source: "gpu", DeviceUtilization: 0.9}}},
}}

const sharedWant = `
# HELP gpulaunch_gpu_utilization_ratio Utilisation of the GPU at the last sample, 0 to 1, whoever used it (one series per GPU of the run's instances).
# TYPE gpulaunch_gpu_utilization_ratio gauge
gpulaunch_gpu_utilization_ratio{gpu_uuid="GPU-aaa",host="n1",slurm_job="",slurm_step=""} 0.9
# HELP gpulaunch_instance_gpu_utilization_ratio The instance's own use of the GPU at the last sample, 0 to 1: its processes' SM share (gpu_util_source=processes), or the GPU's where the driver cannot tell processes apart (gpu_util_source=gpu: MPS, MIG, AMD, Intel).
# TYPE gpulaunch_instance_gpu_utilization_ratio gauge
gpulaunch_instance_gpu_utilization_ratio{gpu_util_source="gpu",gpu_uuid="GPU-aaa",gpulaunch_instance="0",host="n1",rank="0",slurm_job="",slurm_step=""} 0.9
gpulaunch_instance_gpu_utilization_ratio{gpu_util_source="gpu",gpu_uuid="GPU-aaa",gpulaunch_instance="1",host="n1",rank="1",slurm_job="",slurm_step=""} 0.9
`

const queueWant = `
# HELP gpulaunch_instance_gpu_memory_used_bytes GPU memory the instance's processes hold on the GPU at the last sample.
# TYPE gpulaunch_instance_gpu_memory_used_bytes gauge
gpulaunch_instance_gpu_memory_used_bytes{gpu_uuid="MIG-ccc",gpulaunch_instance="0",host="ws",rank="0",slurm_job="",slurm_step=""} 100
# HELP gpulaunch_instance_gpu_utilization_ratio The instance's own use of the GPU at the last sample, 0 to 1: its processes' SM share (gpu_util_source=processes), or the GPU's where the driver cannot tell processes apart (gpu_util_source=gpu: MPS, MIG, AMD, Intel).
# TYPE gpulaunch_instance_gpu_utilization_ratio gauge
# HELP gpulaunch_instance_restarts_total How often the instance was restarted (--restarts, a --ddp group's restarts).
# TYPE gpulaunch_instance_restarts_total counter
# HELP gpulaunch_instance_task_info 1 for the task a queue slot runs now (join on host and gpulaunch_instance for a task's series).
# TYPE gpulaunch_instance_task_info gauge
gpulaunch_instance_task_info{gpulaunch_instance="0",host="ws",rank="0",slurm_job="",slurm_step="",task="7"} 1
# HELP gpulaunch_queue_tasks Tasks in the queue's input.
# TYPE gpulaunch_queue_tasks gauge
gpulaunch_queue_tasks{host="ws",slurm_job="",slurm_step=""} 10
# HELP gpulaunch_queue_tasks_done_total Tasks finished, succeeded or failed after their tries.
# TYPE gpulaunch_queue_tasks_done_total counter
gpulaunch_queue_tasks_done_total{host="ws",slurm_job="",slurm_step=""} 6
# HELP gpulaunch_queue_tasks_failed_total Tasks that failed after their tries.
# TYPE gpulaunch_queue_tasks_failed_total counter
gpulaunch_queue_tasks_failed_total{host="ws",slurm_job="",slurm_step=""} 1
# HELP gpulaunch_queue_tasks_left Tasks not finished yet: waiting or running.
# TYPE gpulaunch_queue_tasks_left gauge
gpulaunch_queue_tasks_left{host="ws",slurm_job="",slurm_step=""} 4
# HELP gpulaunch_queue_tasks_running Tasks running now.
# TYPE gpulaunch_queue_tasks_running gauge
gpulaunch_queue_tasks_running{host="ws",slurm_job="",slurm_step=""} 1
# HELP gpulaunch_run_finished 1 once the run has ended: the states are the final ones.
# TYPE gpulaunch_run_finished gauge
gpulaunch_run_finished{host="ws",slurm_job="",slurm_step=""} 1
`

func TestCollectorSeries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snap  Snapshot
		want  string
		names []string // the metrics compared; nil: all
	}{
		{"instances: state enum, counters, GPU series by gpu_uuid, unsampled GPU owned only", instancesRun, instancesWant, nil},
		{"a shared GPU: each instance's utilisation with its source, the GPU's once", sharedRun, sharedWant,
			[]string{"gpulaunch_gpu_utilization_ratio", "gpulaunch_instance_gpu_utilization_ratio"}},
		{"queue: task info, counts, no restarts counter, unknown utilisation left out", queueRun, queueWant, []string{
			"gpulaunch_gpu_utilization_ratio", "gpulaunch_instance_gpu_memory_used_bytes", "gpulaunch_instance_gpu_utilization_ratio", "gpulaunch_instance_restarts_total",
			"gpulaunch_instance_task_info", "gpulaunch_queue_tasks", "gpulaunch_queue_tasks_done_total", "gpulaunch_queue_tasks_failed_total",
			"gpulaunch_queue_tasks_left", "gpulaunch_queue_tasks_running", "gpulaunch_run_finished"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCollector(func() Snapshot { return tc.snap }, states)
			if err := testutil.GatherAndCompare(gatherer(t, c), strings.NewReader(tc.want), tc.names...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The collector reads the run at every collect: it keeps no copy.
func TestCollectorReadsEachCollect(t *testing.T) {
	snap := instancesRun
	c := NewCollector(func() Snapshot { return snap }, states)
	if n, _ := testutil.GatherAndCount(gatherer(t, c), "gpulaunch_instance_gpu_utilization_ratio"); n != 1 {
		t.Fatalf("first collect: %d utilisation series, want 1", n)
	}
	snap = queueRun
	if n, _ := testutil.GatherAndCount(gatherer(t, c), "gpulaunch_instance_task_info"); n != 1 {
		t.Fatalf("second collect: %d task series, want 1 (the new snapshot's)", n)
	}
}

// The names follow Prometheus's conventions (promlint: base units,
// _total counters, no reserved labels' clashes it knows of).
func TestNamesLint(t *testing.T) {
	problems, err := promlint.NewWithMetricFamilies(gather(t, NewCollector(func() Snapshot { return instancesRun }, states))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// Text is the format node_exporter's textfile collector reads: it parses
// back to the same series.
func TestTextParses(t *testing.T) {
	b := NewCollector(func() Snapshot { return instancesRun }, states).Text()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	util := mfs["gpulaunch_instance_gpu_utilization_ratio"]
	if util == nil || len(util.Metric) != 1 || util.Metric[0].GetGauge().GetValue() != 0.75 {
		t.Fatalf("utilisation did not parse back as 0.75:\n%s", b)
	}
	if _, ok := mfs["go_goroutines"]; ok {
		t.Fatal("the run's registry exposes Go's runtime metrics, which node_exporter has already")
	}
}

// gather is c's series as Prometheus's text parser reads them back.
func gather(t *testing.T, c *Collector) []*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(bytes.NewReader(c.Text()))
	if err != nil {
		t.Fatalf("the text does not parse: %v\n%s", err, c.Text())
	}
	mfs := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		mfs = append(mfs, mf)
	}
	slices.SortFunc(mfs, func(x, y *dto.MetricFamily) int { return strings.Compare(x.GetName(), y.GetName()) })
	return mfs
}

// gatherer is c read through client_golang's text parser, for its
// testutil: the series are compared as its registry would gather them,
// in the order c wrote them.
func gatherer(t *testing.T, c *Collector) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return gather(t, c), nil })
}

// The text is byte for byte what client_golang's registry and
// expfmt.MetricFamilyToText wrote before gpulaunch wrote it itself: the
// same order of metrics, series and labels, the same numbers.
func TestTextAsClientGolangWroteIt(t *testing.T) {
	got := NewCollector(func() Snapshot { return instancesRun }, states).Text()
	if want := strings.TrimPrefix(instancesWant, "\n"); string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// /metrics serves the text with the format's media type.
func TestServeHTTP(t *testing.T) {
	c := NewCollector(func() Snapshot { return instancesRun }, states)
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if got := rec.Body.String(); got != string(c.Text()) {
		t.Errorf("served\n%s\nwant the text\n%s", got, c.Text())
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := parser.TextToMetricFamilies(rec.Body); err != nil {
		t.Fatal(err)
	}
}

// Label values and help are escaped as the format says; values keep
// Go's shortest form and the format's special names.
func TestTextEscapesAndValues(t *testing.T) {
	var b bytes.Buffer
	err := WriteText(&b, []Family{{Name: "x", Help: "a \\ b\nc", Type: Gauge, Samples: []Sample{
		{Labels: []Label{{"l", "q\"\\\n"}}, Value: 0.1},
		{Value: 1e21}, {Value: -1}, {Value: posInf()}}}, {Name: "empty", Help: "h", Type: Counter}})
	if err != nil {
		t.Fatal(err)
	}
	want := "# HELP x a \\\\ b\\nc\n# TYPE x gauge\nx{l=\"q\\\"\\\\\\n\"} 0.1\nx 1e+21\nx -1\nx +Inf\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func posInf() float64 { return 1 / zero }

var zero float64
