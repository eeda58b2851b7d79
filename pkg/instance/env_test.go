package instance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

func TestInstanceEnv(t *testing.T) {
	g := func(i int) gpu.GPU {
		return gpu.GPU{UUID: fmt.Sprintf("GPU-%d", i), BusID: fmt.Sprintf("0000:%02x:00.0", i)}
	}
	all := []gpu.GPU{g(0), g(1), g(2), g(3)}
	slot := binding.Slot{Index: 2, GPUs: []gpu.GPU{g(2)}, CPUs: cpuset.MustParse("4-7")}
	base := []string{"PATH=/bin", "CUDA_VISIBLE_DEVICES=0,1,2,3", "ROCR_VISIBLE_DEVICES=0", "GPU_DEVICE_ORDINAL=0", "ZE_AFFINITY_MASK=0",
		"RANK=0", "WORLD_SIZE=1", "GPULAUNCH_INSTANCE=9", "SLURM_PROCID=0", "GPULAUNCH_NODE_FILE=/etc/node.json"}
	local := nodegroup.Local(4, "h").Ranks(2)
	env := func(o EnvOptions, base []string, r ...nodegroup.Ranks) map[string]string {
		ranks := local
		if len(r) > 0 {
			ranks = r[0]
		}
		list, err := Env(base, slot, ranks, o)
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
	step := sched.Allocation{Scheduler: "slurm", JobID: "7", StepID: "0", NodeID: 3, Nodes: []string{"a", "b", "c", "d"}}
	procid := sched.GlobalRank{Rank: 14, Size: 16, Source: "SLURM_PROCID"}
	wrapped := nodegroup.WrapperRanks(procid, true, 2, nodegroup.Wrapper(procid, true, 4, step, "d"))
	rv := &nodegroup.Rendezvous{Addr: "a", Port: 23456, RunID: "slurm-7.0"}
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
	if _, err := Env(base, slot, local, EnvOptions{IDs: GPUIDsIndex, Ordinal: map[string]int{}}); err == nil {
		t.Error("an index for a GPU without one was accepted")
	}
	cpuOnly := binding.Slot{Index: 0, CPUs: cpuset.MustParse("0")}
	list, _ := Env(nil, cpuOnly, nodegroup.Local(1, "h").Ranks(0), EnvOptions{})
	if !strings.Contains(strings.Join(list, "\n"), "CUDA_VISIBLE_DEVICES=\n") {
		t.Errorf("a CPU-only instance must see no GPU (empty CUDA_VISIBLE_DEVICES): %q", list)
	}
}

// torchrun's worker contract under --ddp (torchrunVars, signalsToHandle),
// rule by rule: its role and store variables, inherited ones replaced;
// NCCL's async error handling on by the name torch 2.2+ reads alone,
// unless the user set either of its variables, whose choice then stands
// alone; the signals torchrun handles, its default or the user's; none
// of them without --ddp. (Issue 36 changed "the contract under --ddp":
// it pinned NCCL_ASYNC_ERROR_HANDLING=1 beside the TORCH_ name, which
// torch 2.11 warns about on every rank.)
func TestTorchrunContract(t *testing.T) {
	slot := binding.Slot{Index: 0, CPUs: cpuset.MustParse("0-1")}
	ranks := nodegroup.Local(2, "h").Ranks(0)
	rv := &nodegroup.Rendezvous{Addr: "127.0.0.1", Port: 29500, RunID: "r"}
	contract := []string{"ROLE_NAME", "TORCHELASTIC_USE_AGENT_STORE", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING", SignalsToHandleVar}
	run := []string{"SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"}
	for _, tc := range []struct {
		name      string
		ddp       bool
		forwarded []string // nil: rank mode
		base      []string
		want      map[string]string // "" for a variable that must be absent
	}{
		{"the contract under --ddp", true, run, nil,
			map[string]string{"ROLE_NAME": "default", "TORCHELASTIC_USE_AGENT_STORE": "False", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "NCCL_ASYNC_ERROR_HANDLING": "",
				SignalsToHandleVar: "SIGTERM,SIGINT,SIGHUP,SIGQUIT"}},
		{"the contract of a rank", true, nil, nil,
			map[string]string{"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "NCCL_ASYNC_ERROR_HANDLING": "", SignalsToHandleVar: "SIGTERM,SIGINT,SIGHUP,SIGQUIT"}},
		{"inherited role and store variables are replaced", true, run, []string{"ROLE_NAME=trainer", "TORCHELASTIC_USE_AGENT_STORE=True"},
			map[string]string{"ROLE_NAME": "default", "TORCHELASTIC_USE_AGENT_STORE": "False"}},
		{"the user's NCCL_ASYNC_ERROR_HANDLING stands alone", true, run, []string{"NCCL_ASYNC_ERROR_HANDLING=0"},
			map[string]string{"NCCL_ASYNC_ERROR_HANDLING": "0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": ""}},
		{"the user's TORCH_NCCL_ASYNC_ERROR_HANDLING stands alone", true, run, []string{"TORCH_NCCL_ASYNC_ERROR_HANDLING=3"},
			map[string]string{"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3", "NCCL_ASYNC_ERROR_HANDLING": ""}},
		{"the user's signals stand", true, run, []string{SignalsToHandleVar + "=SIGTERM,SIGUSR1"},
			map[string]string{SignalsToHandleVar: "SIGTERM,SIGUSR1"}},
		{"a rank's user's signals stand unread", true, nil, []string{SignalsToHandleVar + "=SIGALRM"},
			map[string]string{SignalsToHandleVar: "SIGALRM"}},
		{"none without --ddp", false, run, nil,
			map[string]string{"ROLE_NAME": "", "TORCHELASTIC_USE_AGENT_STORE": "", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "", "NCCL_ASYNC_ERROR_HANDLING": "", SignalsToHandleVar: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := EnvOptions{IDs: GPUIDsUUID, Visibility: VisibleOwn, Forwarded: tc.forwarded}
			if tc.ddp {
				o.Rendezvous = rv
			}
			list, err := Env(append([]string{"PATH=/bin"}, tc.base...), slot, ranks, o)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, kv := range list {
				k, v, _ := strings.Cut(kv, "=")
				got[k] = append(got[k], v)
			}
			for _, k := range contract {
				want, listed := tc.want[k]
				switch {
				case !listed:
				case want == "" && len(got[k]) > 0:
					t.Errorf("%s = %q, want it unset", k, got[k])
				case want != "" && (len(got[k]) != 1 || got[k][0] != want):
					t.Errorf("%s = %q, want once %q", k, got[k], want)
				}
			}
		})
	}
}

// TORCHELASTIC_SIGNALS_TO_HANDLE, rule by rule (signalsToHandle): the
// default when unset; a rank's value unread; the user's value kept when
// it names only signals the run passes on, spaces as torchrun strips
// them; any other name refused, naming the signals passed on, with the
// spelling torchrun reads where a name was meant as one of them.
func TestSignalsToHandleRules(t *testing.T) {
	run := []string{"SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"}
	for _, tc := range []struct {
		name      string
		value     string
		set       bool
		forwarded []string
		want      string // what the instance is told besides the user's value
		fail      string
	}{
		{name: "1: unset: torchrun's default", forwarded: run, want: "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
		{name: "1: unset in rank mode: torchrun's default", want: "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
		{name: "2: a rank's value stands unread", value: "SIGALRM,USR1,", set: true},
		{name: "3: the default named by the user", value: "SIGTERM,SIGINT,SIGHUP,SIGQUIT", set: true, forwarded: run},
		{name: "3: USR1 and USR2 for Slurm, spaces dropped", value: " SIGUSR1 , SIGUSR2,SIGTERM", set: true, forwarded: run},
		{name: "4: a signal the run does not pass on", value: "SIGTERM,SIGALRM", set: true, forwarded: run,
			fail: "TORCHELASTIC_SIGNALS_TO_HANDLE=SIGTERM,SIGALRM: gpulaunch passes SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to every rank, not SIGALRM: list only those (Slurm's checkpoint signal: --signal=USR1@120), or unset it for torchrun's default SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
		{name: "4: SIGXCPU", value: "SIGXCPU", set: true, forwarded: run, fail: "to every rank, not SIGXCPU:"},
		{name: "4: KILL cannot be handled", value: "SIGKILL", set: true, forwarded: run, fail: "to every rank, not SIGKILL:"},
		{name: "4: a name torchrun would skip: USR1", value: "SIGTERM,USR1", set: true, forwarded: run, fail: "TORCHELASTIC_SIGNALS_TO_HANDLE=SIGTERM,USR1: USR1 is not a signal name as torchrun reads them (Python's): write SIGUSR1"},
		{name: "4: a name torchrun would skip: sigusr2", value: "sigusr2", set: true, forwarded: run, fail: "sigusr2 is not a signal name as torchrun reads them (Python's): write SIGUSR2"},
		{name: "4: a number: its name", value: "10", set: true, forwarded: run, fail: "10 is not a signal name as torchrun reads them (Python's): write SIGUSR1"},
		{name: "4: a number of a signal not passed on", value: "14", set: true, forwarded: run, fail: "to every rank, not 14:"},
		{name: "4: names separated by spaces", value: "SIGUSR1 SIGUSR2", set: true, forwarded: run, fail: "SIGUSR1 SIGUSR2: torchrun reads names separated by commas: write SIGUSR1,SIGUSR2"},
		{name: "4: names separated by semicolons", value: "SIGTERM;SIGINT", set: true, forwarded: run, fail: "write SIGTERM,SIGINT"},
		{name: "4: an empty name", value: "SIGTERM,", set: true, forwarded: run, fail: "an empty name is no signal"},
		{name: "4: an empty value", value: "", set: true, forwarded: run, fail: "TORCHELASTIC_SIGNALS_TO_HANDLE=: an empty name is no signal: name them as torchrun reads them (SIGTERM,SIGUSR1), or unset it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := signalsToHandle(tc.value, tc.set, tc.forwarded)
			switch {
			case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
				t.Errorf("error %v, want one with %q", err, tc.fail)
			case tc.fail == "" && (err != nil || got != tc.want):
				t.Errorf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// Error files as torch 1.13's record writes them, and as a child's own
// reply may: the exception's type and text apart, where it was raised,
// when; anything else is refused, not guessed at.
func TestParseErrorFile(t *testing.T) {
	stack := "Traceback (most recent call last):\n  File \"/x/errors/__init__.py\", line 346, in wrapper\n    return f(*args, **kwargs)\n  File \"/tmp/raise.py\", line 6, in main\n    raise ValueError(\"bad shard 7\")\nValueError: bad shard 7\n"
	recorded, _ := json.Marshal(map[string]any{"message": map[string]any{"message": "ValueError: rank one: bad shard 7",
		"extraInfo": map[string]any{"py_callstack": stack, "timestamp": "1795550000"}}})
	for _, tc := range []struct {
		name, data            string
		typ, msg, where, fail string
		unix                  int64
	}{
		{name: "record's file", data: string(recorded), typ: "ValueError", msg: "rank one: bad shard 7", where: `File "/tmp/raise.py", line 6, in main`, unix: 1795550000},
		{name: "a plain message with its timestamp", data: `{"message": "RuntimeError: NCCL error", "timestamp": 1795550001}`, typ: "RuntimeError", msg: "NCCL error", unix: 1795550001},
		{name: "an exception without text", data: `{"message": {"message": "KeyboardInterrupt", "extraInfo": {"timestamp": "x"}}}`, typ: "KeyboardInterrupt"},
		{name: "a message that names no type", data: `{"message": "something broke: badly"}`, msg: "something broke: badly"},
		{name: "not JSON", data: `Traceback (most`, fail: "e.json:1:1: not torch's error file: invalid character 'T'"},
		{name: "JSON cut short", data: "{\"message\": {\"message\":\n \"x", fail: "e.json:2:4: not torch's error file: the JSON ends early"},
		{name: "no message", data: `{"message": {"extraInfo": {}}}`, fail: "e.json: not torch's error file: no \"message\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ParseErrorFile("e.json", []byte(tc.data))
			switch {
			case tc.fail != "":
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Fatalf("err = %v, want %q", err, tc.fail)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if e.Type != tc.typ || e.Message != tc.msg || e.Where() != tc.where {
				t.Errorf("got %q %q at %q, want %q %q at %q", e.Type, e.Message, e.Where(), tc.typ, tc.msg, tc.where)
			}
			if got := e.Time; (tc.unix == 0) != got.IsZero() || tc.unix != 0 && got.Unix() != tc.unix {
				t.Errorf("time %v, want %d", got, tc.unix)
			}
		})
	}
	if got := ErrorFile("/run/d", 2, 13); got != "/run/d/attempt_2/13/error.json" {
		t.Errorf("ErrorFile = %q", got)
	}
}
