package launcher

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

func TestExitCode(t *testing.T) {
	o := func(code int, sig syscall.Signal, by Ended) Outcome {
		return Outcome{Code: code, Signal: sig, EndedBy: by}
	}
	cases := []struct {
		name string
		outs []Outcome
		want int
	}{
		{"all zero", []Outcome{o(0, 0, ""), o(0, 0, "")}, 0},
		{"highest code", []Outcome{o(0, 0, ""), o(3, 0, ""), o(0, 0, ""), o(7, 0, "")}, 7},
		{"signal beats code", []Outcome{o(7, 0, ""), o(-1, syscall.SIGSEGV, "")}, 139},
		{"highest signal", []Outcome{o(-1, syscall.SIGTERM, ""), o(-1, syscall.SIGKILL, "")}, 143},
		{"-K: instances gpulaunch ended do not count", []Outcome{o(5, 0, ""), o(-1, syscall.SIGTERM, EndedBadExit)}, 5},
		{"--ddp's group stop: likewise", []Outcome{o(5, 0, ""), o(-1, syscall.SIGTERM, EndedGroup)}, 5},
		{"-W counts as the TERM it sent", []Outcome{o(0, 0, ""), o(-1, syscall.SIGTERM, EndedWait)}, 143},
		{"-W: also when the instance exited 0 on the TERM", []Outcome{o(0, 0, ""), o(0, 0, EndedWait)}, 143},
		{"-W: also when the instance was KILLed after the kill wait", []Outcome{o(0, 0, ""), o(-1, syscall.SIGKILL, EndedWait)}, 143},
		{"timeout counts", []Outcome{o(0, 0, ""), o(-1, syscall.SIGTERM, EndedTimeout)}, 143},
		{"timeout: an exit 0 on the TERM counts as the TERM", []Outcome{o(0, 0, EndedTimeout)}, 143},
		{"memory cap counts as the TERM", []Outcome{o(0, 0, ""), o(3, 0, EndedMemory)}, 143},
	}
	for _, tc := range cases {
		if got := ExitCode(tc.outs); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A run a signal stopped never exits 0 (Result.ExitCode).
func TestResultExitCode(t *testing.T) {
	ok, term := Outcome{}, Outcome{Code: -1, Signal: syscall.SIGTERM}
	for _, tc := range []struct {
		name string
		res  Result
		want int
	}{
		{"finished: srun's rule", Result{Outcomes: []Outcome{ok, {Code: 3}}}, 3},
		{"stopped, the instances exited 0 on the TERM: 128+TERM", Result{Outcomes: []Outcome{ok, ok}, Signal: syscall.SIGTERM}, 143},
		{"stopped by Ctrl-C", Result{Outcomes: []Outcome{ok}, Signal: syscall.SIGINT}, 130},
		{"stopped, an instance died of the TERM: srun's rule", Result{Outcomes: []Outcome{ok, term}, Signal: syscall.SIGTERM}, 143},
		{"stopped, an instance failed on its own: the signal still", Result{Outcomes: []Outcome{{Code: 4}, ok}, Signal: syscall.SIGHUP}, 129},
		{"Ctrl-C twice: the instances KILLed, still 130", Result{Outcomes: []Outcome{{Code: -1, Signal: syscall.SIGKILL, EndedBy: EndedSignalled}}, Signal: syscall.SIGINT}, 130},
		{"stopped by INT, then TERM, an instance died of the TERM: the first", Result{Outcomes: []Outcome{term}, Signal: syscall.SIGINT}, 130},
	} {
		if got := tc.res.ExitCode(); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestInstanceEnv(t *testing.T) {
	g := func(i int) gpu.GPU {
		return gpu.GPU{UUID: fmt.Sprintf("GPU-%d", i), BusID: fmt.Sprintf("0000:%02x:00.0", i)}
	}
	all := []gpu.GPU{g(0), g(1), g(2), g(3)}
	slot := binding.Slot{Index: 2, GPUs: []gpu.GPU{g(2)}, CPUs: cpuset.MustParse("4-7")}
	base := []string{"PATH=/bin", "CUDA_VISIBLE_DEVICES=0,1,2,3", "ROCR_VISIBLE_DEVICES=0", "GPU_DEVICE_ORDINAL=0", "ZE_AFFINITY_MASK=0",
		"RANK=0", "WORLD_SIZE=1", "GPULAUNCH_INSTANCE=9", "SLURM_PROCID=0", "GPULAUNCH_NODE_FILE=/etc/node.json"}
	local := binding.LocalGroup(4, "h").Ranks(2)
	env := func(o EnvOptions, base []string, r ...binding.Ranks) map[string]string {
		ranks := local
		if len(r) > 0 {
			ranks = r[0]
		}
		list, err := InstanceEnv(base, slot, ranks, o)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range list {
			k, v, _ := strings.Cut(kv, "=")
			if _, dup := m[k]; dup {
				t.Fatalf("%s set twice", k)
			}
			m[k] = v
		}
		return m
	}
	m := env(EnvOptions{IDs: GPUIDsUUID, Visibility: VisibleOwn}, base)
	step := binding.Slurm{JobID: "7", StepID: "0", NodeID: 3, Nodes: []string{"a", "b", "c", "d"}}
	procid := binding.GlobalRank{Rank: 14, Size: 16, Source: "SLURM_PROCID"}
	wrapped := binding.WrapperRanks(procid, true, 2, binding.WrapperGroup(procid, true, 4, step, "d"))
	rv := &binding.Rendezvous{Addr: "a", Port: 23456, RunID: "slurm-7.0"}
	global := env(EnvOptions{IDs: GPUIDsUUID, Visibility: VisibleOwn, Rendezvous: rv}, append(base, "MASTER_ADDR=stale", "TORCHELASTIC_RUN_ID=old"), wrapped)
	for k, v := range map[string]string{"RANK": "14", "WORLD_SIZE": "16", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "3", "GROUP_WORLD_SIZE": "4",
		"ROLE_RANK": "14", "MASTER_ADDR": "a", "MASTER_PORT": "23456", "TORCHELASTIC_RUN_ID": "slurm-7.0"} {
		if global[k] != v {
			t.Errorf("rank mode with --ddp: %s = %q, want %q", k, global[k], v)
		}
	}
	if _, ok := m["MASTER_PORT"]; ok {
		t.Error("MASTER_PORT set without --ddp")
	}
	want := map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "GPULAUNCH_INSTANCE": "2", "GPULAUNCH_NINSTANCES": "4",
		"GPULAUNCH_GPUS": "GPU-2", "GPULAUNCH_CPUS": "4-7", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "4", "RANK": "2", "WORLD_SIZE": "4",
		"OMP_NUM_THREADS": "4", "PATH": "/bin", "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "SLURM_PROCID": "0", "GPULAUNCH_NODE_FILE": "/etc/node.json"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %q, want %q", k, m[k], v)
		}
	}
	for _, gone := range []string{"ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK"} {
		if _, ok := m[gone]; ok {
			t.Errorf("stale %s kept", gone)
		}
	}
	m = env(EnvOptions{IDs: GPUIDsIndex, Visibility: VisibleAll, AllGPUs: all, Ordinal: map[string]int{"GPU-0": 0, "GPU-1": 1, "GPU-2": 2, "GPU-3": 3}},
		append(base, "OMP_NUM_THREADS=2"))
	if m["CUDA_VISIBLE_DEVICES"] != "2,0,1,3" || m["OMP_NUM_THREADS"] != "2" || m["GPULAUNCH_GPUS"] != "GPU-2" {
		t.Errorf("all-visible index env: CVD %q OMP %q", m["CUDA_VISIBLE_DEVICES"], m["OMP_NUM_THREADS"])
	}
	if _, err := InstanceEnv(base, slot, local, EnvOptions{IDs: GPUIDsIndex, Ordinal: map[string]int{}}); err == nil {
		t.Error("an index for a GPU without one was accepted")
	}
	cpuOnly := binding.Slot{Index: 0, CPUs: cpuset.MustParse("0")}
	list, _ := InstanceEnv(nil, cpuOnly, binding.LocalGroup(1, "h").Ranks(0), EnvOptions{})
	if !strings.Contains(strings.Join(list, "\n"), "CUDA_VISIBLE_DEVICES=\n") {
		t.Errorf("a CPU-only instance must see no GPU (empty CUDA_VISIBLE_DEVICES): %q", list)
	}
}

func TestExpandPattern(t *testing.T) {
	nm := Names{JobID: "42", StepID: "0", Host: "gpu07", NodeIndex: 3}
	cases := map[string]string{
		"out-%t.log":      "out-5.log",
		"%j/%s/%N-%n-%3t": "42/0/gpu07-3-005",
		"100%%-%t":        "100%-5",
		"plain":           "plain",
		"":                "",
		"%2n":             "03",
	}
	for in, want := range cases {
		if got, err := ExpandPattern(in, 5, nm); err != nil || got != want {
			t.Errorf("ExpandPattern(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, _ := ExpandPattern("%j-%s", 0, Names{}); got != "none-none" {
		t.Errorf("outside Slurm: %q", got)
	}
	for _, bad := range []string{"%", "%x", "a-%3", "%99t"} {
		if _, err := ExpandPattern(bad, 0, nm); err == nil {
			t.Errorf("ExpandPattern(%q) accepted", bad)
		}
	}
	if got := ExpandArgs([]string{"--shard=%t", "printf %d"}, 3); got[0] != "--shard=3" || got[1] != "printf %d" {
		t.Errorf("ExpandArgs = %q", got)
	}
}

// slowReader hands out data in small, irregular pieces, as pipes do.
type slowReader struct {
	data []byte
	step int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.step, len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	r.step = r.step%7919 + 1
	return n, nil
}

func TestLineMux(t *testing.T) {
	var out bytes.Buffer
	m := &lineMux{w: &out}
	long := strings.Repeat("y", 3*chunkSize+17)
	streams := map[string]string{
		"0: ": "alpha\nbeta\n",
		"1: ": "no newline at end",
		"2: ": long + "\nshort\n",
		"3: ": "bin\x00ary\xff\n",
	}
	var wg sync.WaitGroup
	for label, data := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.copyLabelled(&slowReader{data: []byte(data), step: 3}, label, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := out.String()
	for _, want := range []string{"0: alpha\n", "0: beta\n", "1: no newline at end\n", "2: " + long + "\n", "2: short\n", "3: bin\x00ary\xff\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want[:min(len(want), 40)])
		}
	}
	if lines := strings.Count(got, "\n"); lines != 6 {
		t.Errorf("%d lines, want 6", lines)
	}
}

func BenchmarkLineMux(b *testing.B) {
	line := []byte(strings.Repeat("z", 79) + "\n")
	data := bytes.Repeat(line, 1<<14)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		m := &lineMux{w: io.Discard}
		_ = m.copyLabelled(bytes.NewReader(data), "7: ", nil)
	}
}
