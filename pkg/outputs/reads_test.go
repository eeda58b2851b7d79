package outputs

import (
	"reflect"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

func TestReadsUses(t *testing.T) {
	node := func(flag, path string) Use { return Use{Flag: flag, Path: path, Reads: "the node's description"} }
	for _, tc := range []struct {
		rule string
		r    Reads
		want []Use
	}{
		{"1 --simulate FILE", Reads{Simulate: "nodes/a.json", NodeFile: "n.json", EnvNodeFile: "e.json"}, []Use{node("--simulate", "nodes/a.json")}},
		{"1 --simulate NAME reads no file", Reads{Simulate: "dgx-h100", EnvNodeFile: "e.json"}, nil},
		{"1 --node-file", Reads{Simulate: "dgx-h100", NodeFile: "n.json"}, []Use{node("--node-file", "n.json")}},
		{"1 GPULAUNCH_NODE_FILE", Reads{EnvNodeFile: "e.json"}, []Use{node("GPULAUNCH_NODE_FILE", "e.json")}},
		{"2 --each-line", Reads{EachLine: "in.txt"}, []Use{{Flag: "--each-line", Path: "in.txt", Reads: "the tasks"}}},
		{"2 stdin is no file", Reads{Tasks: "-"}, nil},
		{"3 the program", Reads{Program: "/bin/app", Starter: "the study"}, []Use{{Flag: "the command", Path: "/bin/app", Reads: "the program the study starts"}}},
		{"4 each program once", Reads{Queue: []job.Task{{Seq: 1, Path: "/bin/a"}, {Seq: 2, Path: "/bin/b"}, {Seq: 3, Path: "/bin/a"}}},
			[]Use{{Flag: "task 1's command", Path: "/bin/a", Reads: "a program the queue starts"}, {Flag: "task 2's command", Path: "/bin/b", Reads: "a program the queue starts"}}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			if got := tc.r.Uses(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Uses() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
