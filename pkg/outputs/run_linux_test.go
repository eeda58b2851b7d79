package outputs

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// RunFiles.Check, each kind of file in its order, on a real directory.
func TestRunFilesCheck(t *testing.T) {
	dir := t.TempDir()
	in := func(p string) string { return filepath.Join(dir, p) }
	ok := RunFiles{Out: in("o-%t"), Instances: []Streams{{Who: "instance 0", Stdout: in("o-0")}}, Report: in("r.json"), Metrics: in("m.prom"), Joblog: in("joblog")}
	for _, tc := range []struct {
		rule string
		edit func(r *RunFiles)
		bad  string
	}{
		{"every file writable: no refusal", func(*RunFiles) {}, ""},
		{"an instance's -o file, naming the instance", func(r *RunFiles) { r.Instances[0].Stdout = in("no/o-0") },
			"-o " + in("o-%t") + ": instance 0 writes " + in("no/o-0") + ", but the directory " + in("no") + " does not exist"},
		{"a task's -o file, naming the task", func(r *RunFiles) { r.Tasks = []Streams{{Who: "task 3", Stdout: dir}} }, ": task 3 writes " + dir + ", but " + dir + " is a directory"},
		{"--report's directory takes the file written beside it", func(r *RunFiles) { r.Report = in("no/r.json") }, "--report " + in("no/r.json") + ": the directory"},
		{"--metrics-file is named *.prom", func(r *RunFiles) { r.Metrics = in("m.txt") }, "--metrics-file " + in("m.txt") + ": node_exporter's textfile collector reads only files named *.prom"},
		{"--joblog is a file", func(r *RunFiles) { r.Joblog = dir }, "--joblog " + dir + ": " + dir + " is a directory"},
		{"then a file written is no file read", func(r *RunFiles) { r.Reads = []Use{{Flag: "--tasks", Path: in("r.json"), Reads: "the tasks"}} }, "--report " + in("r.json") + " is --tasks " + in("r.json")},
	} {
		r := ok
		r.Instances = append([]Streams{}, ok.Instances...)
		tc.edit(&r)
		err := r.Check()
		if (err == nil) != (tc.bad == "") || err != nil && !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("%s: %v, want %q", tc.rule, err, tc.bad)
		}
	}
}

// TaskStreams: a task's files in every slot where the patterns name the
// slot, in one where they do not, none without a pattern.
func TestTaskStreams(t *testing.T) {
	tasks := []job.Task{{Seq: 1}, {Seq: 2}}
	for _, tc := range []struct {
		rule     string
		out, err string
		want     []string
	}{
		{"{%} names the slot: every slot's", "o/{#}-{%}", "", []string{"task 1 o/1-1", "task 1 o/1-2", "task 1 o/1-3", "task 2 o/2-1", "task 2 o/2-2", "task 2 o/2-3"}},
		{"{%} in -e alone: every slot's", "o/{#}", "e/{%}", []string{"task 1 o/1 e/1", "task 1 o/1 e/2", "task 1 o/1 e/3", "task 2 o/2 e/1", "task 2 o/2 e/2", "task 2 o/2 e/3"}},
		{"no {%}: the same files in every slot, checked once", "o/{#}", "", []string{"task 1 o/1", "task 2 o/2"}},
		{"no pattern: none", "", "", nil},
	} {
		s := &taskqueue.Slots{Files: taskqueue.NewTaskFiles(tc.out, tc.err, instance.Names{}, false)}
		var got []string
		for _, st := range TaskStreams(tasks, s, tc.out, tc.err, 3) {
			got = append(got, strings.TrimSpace(strings.Join([]string{st.Who, st.Stdout, st.Stderr}, " ")))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q, want %q", tc.rule, got, tc.want)
		}
	}
}
