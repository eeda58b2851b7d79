package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// GNU parallel's own tests of --resume, run through gpulaunch: its
// testsuite/tests-to-run (par_resume_k, par_resume_failed_k,
// par_wrong_slot_rpl_resume) and their testsuite/wanted-results. parallel
// resumes by job number whatever the command: a changed command is one
// warning, never a refusal.

// joblogRecord is one line of a joblog.
type joblogRecord struct {
	seq          int
	exit, signal int
	command      string
}

// joblogRecords reads a joblog's records, in file order.
func joblogRecords(t *testing.T, path string) []joblogRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []joblogRecord
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan(); n++ {
		cols := strings.Split(sc.Text(), "\t")
		if n == 0 || len(cols) != 9 {
			continue
		}
		seq, _ := strconv.Atoi(cols[0])
		exit, _ := strconv.Atoi(cols[6])
		sig, _ := strconv.Atoi(cols[7])
		out = append(out, joblogRecord{seq, exit, sig, cols[8]})
	}
	return out
}

// resumeRun is one gpulaunch run of a resume test: its stdout (the
// tasks' output), its warnings and its exit status.
type resumeRun struct {
	stdout, stderr string
	code           int
}

func queueRun(t *testing.T, args ...string) resumeRun {
	t.Helper()
	cmd := gpulaunch(t, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitStatus(cmd.Run())
	return resumeRun{stdout.String(), stderr.String(), code}
}

// warnings are the run's WARN lines that hold what.
func (r resumeRun) warnings(what string) []string {
	var out []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "WARN") && strings.Contains(l, what) {
			out = append(out, l)
		}
	}
	return out
}

// par_resume_k: `exit {}` over 0 1 2 3 0 5, the same again (nothing to
// do), then `exit 0` over 8 inputs: only jobs 6 and 7 (tasks 7 and 8)
// run. parallel's exit statuses: 4, 0, 0.
func TestParallelResumeK(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "joblog")
	six := writeFile(t, dir, "six", "0\n1\n2\n3\n0\n5\n")
	eight := writeFile(t, dir, "eight", "0\n1\n2\n3\n0\n5\n6\n7\n")
	base := []string{"-n", "1", "-G", "0", "--resume", "--joblog", log, "--each-line"}
	for i, step := range []struct {
		input, exit string
		stdout      string
		code        int
		changed     string // the warning's count; "" for none
	}{
		{six, "{}", "job0id\njob1id\njob2id\njob3id\njob0id\njob5id\n", 4, ""},
		{six, "{}", "", 0, ""},
		{eight, "0", "job6id\njob7id\n", 0, "4 of its 6 record(s)"},
	} {
		r := queueRun(t, append(base, step.input, "--", "sh", "-c", "echo job{}id;exit "+step.exit)...)
		if r.code != step.code || r.stdout != step.stdout {
			t.Fatalf("run %d: exit %d, stdout %q; want %d, %q\nstderr:\n%s", i+1, r.code, r.stdout, step.code, step.stdout, r.stderr)
		}
		if w := r.warnings("--joblog"); step.changed == "" && len(w) != 0 || step.changed != "" && (len(w) != 1 || !strings.Contains(w[0], step.changed) || !strings.Contains(w[0], "--resume goes by task number")) {
			t.Errorf("run %d: warnings %q; want one with %q", i+1, w, step.changed)
		}
	}
	var seqs []int
	for _, rec := range joblogRecords(t, log) {
		seqs = append(seqs, rec.seq)
	}
	if !slices.Equal(seqs, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("the joblog records tasks %v, want 1..8 once each", seqs)
	}
}

// par_resume_failed_k (bug #38299): --resume-failed over 0 1 2 3 0 1
// with `exit {}` runs all; again: the failed ones (2 3 4 6); with `exit
// 0`: the same four, now with the new command, and they succeed; with
// `exit {}` again: nothing. parallel's exit statuses: 4, 4, 0, 0.
func TestParallelResumeFailedK(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "joblog")
	in := writeFile(t, dir, "in", "0\n1\n2\n3\n0\n1\n")
	failed := "job2 val 1\njob3 val 2\njob4 val 3\njob6 val 1\n"
	for i, step := range []struct {
		exit    string
		stdout  string
		code    int
		changed string
	}{
		{"{}", "job1 val 0\njob2 val 1\njob3 val 2\njob4 val 3\njob5 val 0\njob6 val 1\n", 4, ""},
		{"{}", failed, 4, ""},
		{"0", failed, 0, "4 of its 6 record(s)"},
		{"{}", "", 0, "4 of its 6 record(s)"},
	} {
		r := queueRun(t, "-n", "1", "-G", "0", "--resume-failed", "--joblog", log, "--each-line", in, "--", "sh", "-c", "echo job{#} val {};exit "+step.exit)
		if r.code != step.code || r.stdout != step.stdout {
			t.Fatalf("run %d: exit %d, stdout %q; want %d, %q\nstderr:\n%s", i+1, r.code, r.stdout, step.code, step.stdout, r.stderr)
		}
		if w := r.warnings("--joblog"); step.changed == "" && len(w) != 0 || step.changed != "" && (len(w) != 1 || !strings.Contains(w[0], step.changed) || !strings.Contains(w[0], "--resume-failed goes by task number")) {
			t.Errorf("run %d: warnings %q; want one with %q", i+1, w, step.changed)
		}
	}
	byTask := map[int][]string{}
	for _, rec := range joblogRecords(t, log) {
		byTask[rec.seq] = append(byTask[rec.seq], fmt.Sprintf("%d:%s", rec.exit, rec.command))
	}
	want := []string{"1:sh -c 'echo job2 val 1;exit 1'", "1:sh -c 'echo job2 val 1;exit 1'", "0:sh -c 'echo job2 val 1;exit 0'"}
	if !slices.Equal(byTask[2], want) || len(byTask[1]) != 1 || len(byTask[5]) != 1 || len(byTask[6]) != 3 {
		t.Errorf("the joblog: %v; want task 2 recorded as %q, 1 and 5 once, 6 three times", byTask, want)
	}
}

// par_wrong_slot_rpl_resume (bug #47644): a sweep of 21 tasks on 4 slots
// stops part-way (here task 11 TERMs gpulaunch, as parallel's Perl exit
// stops parallel), and a --resume with another command runs exactly the
// tasks the joblog lacks, each once, with {%} the slot it runs in: 1 to
// 4, not a number carried on from the first run.
func TestParallelWrongSlotReplacementResume(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "joblog")
	var b strings.Builder
	for i := 0; i <= 20; i++ {
		fmt.Fprintln(&b, i)
	}
	in := writeFile(t, dir, "in", b.String())
	base := []string{"-n", "4", "-G", "0", "-O", "--joblog", log, "--each-line", in, "--", "sh", "-c"}
	first := queueRun(t, append(base, `echo {%} {}; [ {} != 10 ] || { kill -TERM $PPID; exec sleep 30; }; exec sleep 0.1`)...)
	if first.code != 255 {
		t.Fatalf("the first run: exit %d, want 255 (stopped by TERM)\n%s", first.code, first.stderr)
	}
	done := map[int]bool{}
	for _, rec := range joblogRecords(t, log) {
		if done[rec.seq] || rec.exit != 0 || rec.seq == 11 {
			t.Errorf("the first run recorded %+v (twice, failed, or the task gpulaunch ended)", rec)
		}
		done[rec.seq] = true
	}
	// task 11 starts once a slot frees after tasks 1..10 started: 7 of
	// them, at least, have finished and been recorded
	if len(done) < 7 {
		t.Fatalf("the first run recorded %d tasks, want 7 or more", len(done))
	}
	second := queueRun(t, append(append([]string{"--resume"}, base...), `echo {%} {}; exit 0`)...)
	if second.code != 0 {
		t.Fatalf("the resume: exit %d\n%s", second.code, second.stderr)
	}
	if w := second.warnings("--joblog"); len(w) != 1 || !strings.Contains(w[0], fmt.Sprintf("%d of its %d record(s)", len(done), len(done))) {
		t.Errorf("the resume's warnings: %q; want one counting %d records", w, len(done))
	}
	line := regexp.MustCompile(`^([1-4]) ([0-9]+)$`)
	ran := map[int]bool{}
	for _, l := range strings.Split(strings.TrimSpace(second.stdout), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("the resume printed %q: want a slot from 1 to 4 and the input", l)
			continue
		}
		n, _ := strconv.Atoi(m[2])
		ran[n+1] = true
	}
	recorded := map[int]int{}
	for _, rec := range joblogRecords(t, log) {
		recorded[rec.seq]++
		if !done[rec.seq] && !ran[rec.seq] {
			t.Errorf("task %d is recorded but neither run ran it to the end", rec.seq)
		}
	}
	for seq := 1; seq <= 21; seq++ {
		if recorded[seq] != 1 || done[seq] == ran[seq] {
			t.Errorf("task %d: recorded %d time(s), by the first run %v, run by the resume %v; want once, by one of them", seq, recorded[seq], done[seq], ran[seq])
		}
	}
}
