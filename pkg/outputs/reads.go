package outputs

import (
	"fmt"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Reads are the files a run or a study reads, which none of its outputs
// may be (Clash).
type Reads struct {
	// Simulate, NodeFile and EnvNodeFile are --simulate, --node-file and
	// $GPULAUNCH_NODE_FILE.
	Simulate, NodeFile, EnvNodeFile string
	// Tasks and EachLine are the queue's input files ("-": stdin).
	Tasks, EachLine string
	// Program is the program started, by Starter ("the run", "the study").
	Program, Starter string
	// Queue are a queue's tasks, each with its program resolved.
	Queue []job.Task
}

// Uses are the files r names, as Clash reads them. The rules, in order:
//  1. The node's description, when a file gives it: --simulate FILE
//     (a name with a slash or ending in .json: gpu.Open's rule), else
//     --node-file, else $GPULAUNCH_NODE_FILE when --simulate is not
//     given (a simulated node by name reads no file).
//  2. The queue's input file, --tasks or --each-line; stdin is no file.
//  3. The program started.
//  4. A queue's programs, each once, in task order.
func (r Reads) Uses() []Use {
	var uses []Use
	switch {
	case r.Simulate != "" && (strings.ContainsRune(r.Simulate, '/') || strings.HasSuffix(r.Simulate, ".json")):
		uses = append(uses, Use{Flag: "--simulate", Path: r.Simulate, Reads: "the node's description"})
	case r.NodeFile != "":
		uses = append(uses, Use{Flag: "--node-file", Path: r.NodeFile, Reads: "the node's description"})
	case r.Simulate == "" && r.EnvNodeFile != "":
		uses = append(uses, Use{Flag: "GPULAUNCH_NODE_FILE", Path: r.EnvNodeFile, Reads: "the node's description"})
	}
	for _, in := range []Use{{Flag: "--tasks", Path: r.Tasks}, {Flag: "--each-line", Path: r.EachLine}} {
		if in.Path != "" && in.Path != "-" {
			uses = append(uses, Use{Flag: in.Flag, Path: in.Path, Reads: "the tasks"})
		}
	}
	if r.Program != "" {
		uses = append(uses, Use{Flag: "the command", Path: r.Program, Reads: "the program " + r.Starter + " starts"})
	}
	seen := map[string]bool{}
	for _, t := range r.Queue {
		if !seen[t.Path] {
			seen[t.Path] = true
			uses = append(uses, Use{Flag: "task " + fmt.Sprint(t.Seq) + "'s command", Path: t.Path, Reads: "a program the queue starts"})
		}
	}
	return uses
}
