package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsApp is the fake app of the metrics tests (helper "metrics-app"
// DIR): it writes the GPUs it was given to DIR/cvd.INSTANCE, instance 0
// declares 60% use and 1 GiB on its GPU to the simulated node, and each
// waits for DIR/release, then exits 3 × its instance.
func metricsApp(dir string) int {
	i, cvd := thisInstance(), os.Getenv("CUDA_VISIBLE_DEVICES")
	if i == 0 {
		_ = os.WriteFile(filepath.Join(os.Getenv("GPULAUNCH_SIMULATED_USAGE_DIR"), fmt.Sprint(os.Getpid())), []byte(cvd+" 60 1024\n"), 0o644)
	}
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("cvd.%d", i)), []byte(cvd), 0o644)
	for {
		if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
			return 3 * i
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// parseMetrics reads a .prom file as node_exporter's textfile collector
// would; an error when it does not parse.
func parseMetrics(b []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(b))
}

// value is the series of family name whose labels include want; ok false
// when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		}
	}
	return 0, false
}

// --metrics-file on a simulated node: the file is replaced whole (every
// read while the run goes on parses, and holds its last family), it
// shows the running instance's GPU use under the UUID the instance was
// given, and its last write has the end states. --metrics-listen serves
// the same registry over HTTP.
func TestRunMetricsFile(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "run.prom")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := gpulaunch(t, append([]string{"-n", "2", "--simulate", "dgx-h100", "--monitor-interval", "10ms", "--metrics-file", prom,
		"--metrics-listen", addr}, helperArgs("metrics-app", dir)...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	reads := 0
	var uuid string
	waitFor(t, "instance 0's GPU use in "+prom, func() bool {
		b, err := os.ReadFile(prom)
		if os.IsNotExist(err) {
			return false
		}
		reads++
		mfs, err := parseMetrics(b)
		if err != nil || mfs["gpulaunch_run_finished"] == nil {
			t.Fatalf("read %d of %s is not a whole metrics file (%v):\n%s", reads, prom, err, b)
		}
		cvd, _ := os.ReadFile(filepath.Join(dir, "cvd.0"))
		uuid = string(cvd)
		inst0 := map[string]string{"gpulaunch_instance": "0", "gpu_uuid": uuid}
		util, ok := value(mfs, "gpulaunch_instance_gpu_utilization_ratio", inst0)
		mem, _ := value(mfs, "gpulaunch_instance_gpu_memory_used_bytes", inst0)
		return uuid != "" && ok && util == 0.6 && mem == 1<<30
	})
	// the same registry on HTTP
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("--metrics-listen %s: %v", addr, err)
	}
	body := new(bytes.Buffer)
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), `gpulaunch_instance_gpu_info{gpu_uuid="`+uuid+`",gpulaunch_instance="0"`) {
		t.Errorf("/metrics lacks instance 0's GPU %s:\n%s", uuid, body)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := exitStatus(cmd.Wait()); code != 3 {
		t.Fatalf("exit %d, want 3 (instance 1's)\n%s", code, &out)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := parseMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"gpulaunch_run_finished", nil, 1},
		{"gpulaunch_instance_state", map[string]string{"gpulaunch_instance": "0", "state": "exited"}, 1},
		{"gpulaunch_instance_state", map[string]string{"gpulaunch_instance": "1", "state": "exited"}, 1},
		{"gpulaunch_instance_state", map[string]string{"gpulaunch_instance": "1", "state": "running"}, 0},
		{"gpulaunch_instance_gpu_info", map[string]string{"gpulaunch_instance": "0", "gpu_uuid": uuid, "rank": "0"}, 1},
	} {
		if got, ok := value(mfs, want.name, want.labels); !ok || got != want.value {
			t.Errorf("final %s%v = %v (found %v), want %v:\n%s", want.name, want.labels, got, ok, want.value, b)
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "run.prom*")); len(entries) != 1 {
		t.Errorf("the directory holds %q: a temporary file was left beside the metrics", entries)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Errorf("--metrics-listen %s still accepts after the run", addr)
	}
}

// A task queue's file ends with its counts: done, failed, none left.
func TestQueueMetricsFile(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "codes")
	if err := os.WriteFile(input, []byte("0\n1\n0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(dir, "q.prom")
	cmd := gpulaunch(t, "-n", "2", "--simulate", "dgx-h100", "--metrics-file", prom, "--each-line", input, "--", "sh", "-c", "exit $0", "{}")
	out, err := cmd.CombinedOutput()
	if code := exitStatus(err); code != 1 {
		t.Fatalf("exit %d, want 1 (one task failed)\n%s", code, out)
	}
	b, _ := os.ReadFile(prom)
	mfs, err := parseMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"gpulaunch_queue_tasks": 3, "gpulaunch_queue_tasks_done_total": 3,
		"gpulaunch_queue_tasks_failed_total": 1, "gpulaunch_queue_tasks_left": 0, "gpulaunch_run_finished": 1} {
		if got, ok := value(mfs, name, nil); !ok || got != want {
			t.Errorf("%s = %v (found %v), want %v:\n%s", name, got, ok, want, b)
		}
	}
	if _, ok := value(mfs, "gpulaunch_instance_restarts_total", nil); ok {
		t.Errorf("a queue's slots have no restarts counter:\n%s", b)
	}
	if _, ok := mfs["gpulaunch_instance_task_info"]; ok {
		t.Errorf("the final file names tasks running after the run:\n%s", b)
	}
}

// A queue a signal stops: the tasks it killed are left, as the summary and
// --resume count them (done + left = tasks), and the final file names no
// task as running.
func TestQueueMetricsFileAfterAStop(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "secs")
	if err := os.WriteFile(input, []byte("30\n30\n30\n30\n30\n30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(dir, "q.prom")
	cmd := gpulaunch(t, "-n", "2", "--simulate", "dgx-h100", "--monitor-interval", "50ms", "--metrics-file", prom, "--each-line", input, "--", "sleep", "{}")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both slots running a task, in the metrics file", func() bool {
		b, _ := os.ReadFile(prom)
		mfs, err := parseMetrics(b)
		v, ok := value(mfs, "gpulaunch_queue_tasks_running", nil)
		return err == nil && ok && v == 2
	})
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitStatus(cmd.Wait()); code != 255 {
		t.Fatalf("exit %d, want 255 (tasks left unfinished)", code)
	}
	b, _ := os.ReadFile(prom)
	mfs, err := parseMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"gpulaunch_queue_tasks": 6, "gpulaunch_queue_tasks_done_total": 0,
		"gpulaunch_queue_tasks_running": 0, "gpulaunch_queue_tasks_left": 6, "gpulaunch_run_finished": 1} {
		if got, ok := value(mfs, name, nil); !ok || got != want {
			t.Errorf("%s = %v (found %v), want %v:\n%s", name, got, ok, want, b)
		}
	}
	if _, ok := mfs["gpulaunch_instance_task_info"]; ok {
		t.Errorf("the final file names tasks running after the run:\n%s", b)
	}
}

// A port in use is refused before anything starts: one error line, exit
// 2, no instance started, no metrics file made.
func TestRunMetricsListenPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	prom := filepath.Join(dir, "run.prom")
	cmd := gpulaunch(t, append([]string{"-n", "1", "--simulate", "dgx-h100", "--metrics-file", prom, "--metrics-listen", ln.Addr().String()},
		helperArgs("metrics-app", dir)...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	code := exitStatus(cmd.Run())
	line := strings.TrimSuffix(stderr.String(), "\n")
	if code != exitUsage || strings.Contains(line, "\n") || !strings.HasPrefix(line, "gpulaunch: error: --metrics-listen "+ln.Addr().String()+": the port is in use") {
		t.Fatalf("exit %d, stderr %q: want exit 2 and one line saying the port is in use", code, stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused run left %v: an instance started or the metrics file was made", entries)
	}
}

// A queue over two nodes: each node writes its own file (the host in its
// name), labelled with the job, the step and its host; the holder's ends
// with the queue's counts.
func TestQueueOverTwoNodesMetricsFiles(t *testing.T) {
	qn := newQueueNodes(t, 2, 10)
	pattern := filepath.Join(qn.dir, "q.prom")
	holder, hout := qn.start(0, qn.keys, "--metrics-file", pattern)
	node, nout := qn.start(1, qn.keys, "--metrics-file", pattern)
	waitFor(t, "node 1 to start tasks", func() bool { return qn.ranOn("node1") == 2 })
	qn.release()
	qn.succeeded("holder", holder, hout)
	qn.succeeded("node 1", node, nout)
	for _, host := range []string{"node0", "node1"} {
		b, err := os.ReadFile(filepath.Join(qn.dir, "q."+host+".prom"))
		if err != nil {
			t.Fatalf("%s wrote no metrics file of its own: %v", host, err)
		}
		mfs, err := parseMetrics(b)
		if err != nil {
			t.Fatal(err)
		}
		run := map[string]string{"host": host, "slurm_job": qn.job, "slurm_step": "0"}
		if v, ok := value(mfs, "gpulaunch_run_finished", run); !ok || v != 1 {
			t.Errorf("%s: gpulaunch_run_finished%v = %v (found %v), want 1:\n%s", host, run, v, ok, b)
		}
		if host == "node0" {
			if v, ok := value(mfs, "gpulaunch_queue_tasks_done_total", run); !ok || v != 10 {
				t.Errorf("the holder's file: %v tasks done (found %v), want 10:\n%s", v, ok, b)
			}
		}
	}
}

// --ddp: a group restart counts in every rank's restarts counter, and the
// final write has every rank exited.
func TestDDPMetricsFileCountsGroupRestart(t *testing.T) {
	prom := filepath.Join(t.TempDir(), "ddp.prom")
	cmd := gpulaunch(t, "-q", "--simulate", "dgx-h100", "-n", "2", "--ddp", "--restarts", "1", "--metrics-file", prom, "--",
		"sh", "-c", `[ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ "$RANK" = 1 ] && exit 5; exit 0`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, _ := os.ReadFile(prom)
	mfs, err := parseMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, rank := range []string{"0", "1"} {
		if v, ok := value(mfs, "gpulaunch_instance_restarts_total", map[string]string{"rank": rank}); !ok || v != 1 {
			t.Errorf("rank %s: %v restarts (found %v), want the group's 1:\n%s", rank, v, ok, b)
		}
		if v, ok := value(mfs, "gpulaunch_instance_state", map[string]string{"rank": rank, "state": "exited"}); !ok || v != 1 {
			t.Errorf("rank %s not exited in the final write:\n%s", rank, b)
		}
	}
}

// A second gpulaunch given the same metrics file is refused before it
// starts (one line, exit 2) while the first runs on; the first leaves no
// lock behind.
func TestMetricsFileHasOneWriter(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "same.prom")
	first := gpulaunch(t, "-n", "1", "--simulate", "dgx-h100", "--metrics-file", prom, "--", "sleep", "30")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first run's metrics file", func() bool { _, err := os.Stat(prom); return err == nil })
	second := gpulaunch(t, "-n", "1", "--simulate", "dgx-h100", "--metrics-file", prom, "--", "true")
	var stderr bytes.Buffer
	second.Stderr = &stderr
	code := exitStatus(second.Run())
	line := strings.TrimSuffix(stderr.String(), "\n")
	if code != exitUsage || strings.Contains(line, "\n") || !strings.Contains(line, "another gpulaunch on this node is writing it") {
		t.Errorf("the second run: exit %d, stderr %q", code, stderr.String())
	}
	if first.ProcessState != nil || first.Process.Signal(syscall.Signal(0)) != nil {
		t.Fatal("the first run ended")
	}
	first.Process.Signal(syscall.SIGINT)
	first.Wait()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "same.prom" {
		t.Errorf("left in the directory: %v", entries)
	}
}
