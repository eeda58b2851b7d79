//go:build linux

package summary

import (
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// The summary's and the live table's GPU% are each instance's own; a
// line under the table names the instances whose figure is their GPU's
// and why, and none is printed where every figure is their own.
func TestSourceNoteUnderTheTables(t *testing.T) {
	mps := []string{"CUDA_MPS_PIPE_DIRECTORY=/run/mps"}
	insts := []launcher.Instance{{Index: 0, GPUUUIDs: []string{"GPU-a"}, GPUs: "0"}, {Index: 1, GPUUUIDs: []string{"GPU-a"}, GPUs: "0"}}
	for _, tc := range []struct {
		name    string
		sources []string
		env     []string
		want    string // "": no note
	}{
		{"their processes': no note", []string{"processes", "processes"}, nil, ""},
		{"MPS clients: their GPU's, said why", []string{"gpu", "gpu"}, mps, "GPU%: instances 0-1: their GPU's, whoever used it (under MPS, NVML gives a client's use to the MPS server)"},
		{"one without per-process samples", []string{"processes", "gpu"}, nil, "GPU%: each instance's own processes', but instance 1: its GPU's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := []launcher.Outcome{{Index: 0, GPUUtilMean: 20, GPUUtilPeak: 20, GPUUtilSource: tc.sources[0]}, {Index: 1, GPUUtilMean: 70, GPUUtilPeak: 70, GPUUtilSource: tc.sources[1]}}
			in := append([]launcher.Instance{}, insts...)
			snap := launcher.Snapshot{Run: launcher.RunInfo{Monitor: "1s"}}
			for i := range in {
				in[i].Env = tc.env
				snap.Instances = append(snap.Instances, launcher.InstanceStatus{Index: i, State: launcher.StateRunning, PID: 100 + i, GPUs: "0",
					GPUUtil: int(outs[i].GPUUtilMean), GPUUtilSource: tc.sources[i], MPSClient: tc.env != nil})
			}
			var sum, status strings.Builder
			Write(&sum, in, outs, false)
			WriteStatus(&status, snap, 0, false)
			for what, out := range map[string]string{"summary": sum.String(), "status": status.String()} {
				if !strings.Contains(out, " 20/20 ") && what == "summary" || !strings.Contains(out, "70") {
					t.Errorf("%s: no own figures 20 and 70:\n%s", what, out)
				}
				if got := strings.Contains(out, "GPU%: "); got != (tc.want != "") || tc.want != "" && !strings.Contains(out, tc.want) {
					t.Errorf("%s: want note %q:\n%s", what, tc.want, out)
				}
			}
		})
	}
}
