//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Debian's real Prometheus scrapes a running gpulaunch's --metrics-listen
// inside a job step, and its query API returns each instance's GPU by
// UUID, labelled with the job and step Slurm gave it: the join a site's
// dashboards make with DCGM's or jobstats' series. The same run's
// --metrics-file ends with the final states.
func TestMetricsScrapedByPrometheus(t *testing.T) {
	const server = "/usr/bin/prometheus"
	if _, err := os.Stat(server); err != nil {
		t.Fatalf("%s: %v: the testbed installs Debian's prometheus (scripts/slurm-testbed.sh PKGS): run `scripts/slurm-testbed.sh up`", server, err)
	}
	dir := jobDir(t)
	target, web := freeLoopbackPort(t), freeLoopbackPort(t)
	script := fmt.Sprintf("#!/bin/bash\nexec srun -n 1 gpulaunch -n 2 --monitor-interval 200ms --metrics-listen %s --metrics-file %s/run.prom -- ./my_app\n", target, dir)
	j := sbatch(t, dir, script, "--gres=gpu:2", "-c", "2", "--export=ALL,APP_MODE=wait")
	defer exec.Command("scancel", j.id).Run()
	waitFiles(t, dir, "started.", 2)

	config := fmt.Sprintf("global:\n  scrape_interval: 200ms\n  scrape_timeout: 200ms\nscrape_configs:\n  - job_name: gpulaunch\n    static_configs:\n      - targets: ['%s']\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := exec.Command(server, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+web)
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	prom.Stdout, prom.Stderr = log, log
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = prom.Process.Signal(syscall.SIGTERM)
		_ = prom.Wait()
	}()

	// the UUIDs the instances were told, from their probe lines
	cvd := map[string]string{}
	for _, p := range probes(j.output(t))[""] {
		cvd[p["inst"]] = p["cvd"]
	}
	query := `gpulaunch_instance_gpu_info{slurm_job="` + j.id + `"}`
	var got []promSeries
	for deadline := time.Now().Add(60 * time.Second); len(got) < 2; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			logText, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("Prometheus never returned both instances' GPUs for %s (last answer %v); its log:\n%s", query, got, logText)
		}
		got = promQuery(t, web, query)
		if len(cvd) < 2 {
			for _, p := range probes(j.output(t))[""] {
				cvd[p["inst"]] = p["cvd"]
			}
		}
	}
	t.Logf("Prometheus: %s: %v", query, got)
	for _, s := range got {
		inst := s.Metric["gpulaunch_instance"]
		if s.Metric["gpu_uuid"] == "" || s.Metric["gpu_uuid"] != cvd[inst] {
			t.Errorf("instance %s: gpu_uuid %q, but it was told CUDA_VISIBLE_DEVICES=%q", inst, s.Metric["gpu_uuid"], cvd[inst])
		}
		if s.Metric["slurm_step"] != "0" || s.Metric["host"] == "" || s.Metric["job"] != "gpulaunch" {
			t.Errorf("instance %s: labels %v: want slurm_step 0 (the srun step), the host, and Prometheus's own job label", inst, s.Metric)
		}
	}
	if running := promQuery(t, web, `gpulaunch_instance_state{slurm_job="`+j.id+`",state="running"} == 1`); len(running) != 2 {
		t.Errorf("Prometheus has %d instances running, want 2: %v", len(running), running)
	}

	exec.Command("scancel", j.id).Run()
	rec, out := j.wait(t, time.Minute)
	final, err := os.ReadFile(filepath.Join(dir, "run.prom"))
	if err != nil {
		t.Fatalf("job %s ended %s without its metrics file: %v\n%s", j.id, rec["JobState"], err, out)
	}
	for _, want := range []string{
		`gpulaunch_run_finished{host=`,
		`slurm_job="` + j.id + `",slurm_step="0"} 1`,
		`gpulaunch_instance_state{gpulaunch_instance="0",host=`,
	} {
		if !strings.Contains(string(final), want) {
			t.Errorf("the final metrics file lacks %q:\n%s", want, final)
		}
	}
	for _, line := range strings.Split(string(final), "\n") {
		if strings.HasPrefix(line, "gpulaunch_instance_state{") && strings.Contains(line, `state="exited"`) && !strings.HasSuffix(line, " 1") {
			t.Errorf("the final metrics file has an instance not exited: %s", line)
		}
	}
}

// promSeries is one series of a Prometheus instant query's answer.
type promSeries struct {
	Metric map[string]string `json:"metric"`
}

// promQuery asks Prometheus's HTTP API; no answer yet (it is starting) is
// an empty result.
func promQuery(t *testing.T, addr, query string) []promSeries {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil // not ready: a page that is not the API's JSON
	}
	if answer.Status != "success" {
		t.Fatalf("Prometheus: %s: %s", query, answer.Error)
	}
	return answer.Data.Result
}

// freeLoopbackPort is a port on 127.0.0.1 that nothing listens on now.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
