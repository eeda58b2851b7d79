package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// checkOutputs says, before anything starts or is opened, why a file the
// run will write could not be written: every instance's and every task's
// -o and -e files (a task's for every slot it may run in, when the
// pattern names the slot), --report's file, --metrics-file's and the joblog; and whether
// one of them is a file the run reads (inputs) or another output of
// another kind (fileClash). It changes nothing on disk.
func checkOutputs(o *runOptions, l *launch, insts []launcher.Instance, q *taskqueue.QueueConfig, inputs []pathUse) error {
	c := writableCheck{dirs: map[string]error{}}
	uses := inputs
	for _, inst := range insts {
		// a queue's slots write their tasks' files only
		if o.tasks.queueMode() {
			break
		}
		if err := c.files("-o "+o.flags.output, inst.Stdout, "-e "+o.flags.error, inst.Stderr, fmt.Sprintf("instance %d", inst.Index)); err != nil {
			return err
		}
		uses = append(uses, outputUses(inst.Stdout, inst.Stderr)...)
	}
	if q != nil && (o.flags.output != "" || o.flags.error != "") {
		slots := 1
		if strings.Contains(o.flags.output+o.flags.error, "{%}") {
			slots = len(insts) // this node's; another node's are checked there
		}
		for _, t := range q.Tasks {
			for slot := range slots {
				ts := q.ForSlot(t, slot)
				if err := c.files("-o "+o.flags.output, ts.Stdout, "-e "+o.flags.error, ts.Stderr, fmt.Sprintf("task %d", t.Seq)); err != nil {
					return err
				}
				uses = append(uses, outputUses(ts.Stdout, ts.Stderr)...)
			}
		}
	}
	if l.report != "" {
		if err := c.replaced(l.report); err != nil {
			return usagef("--report %s: %v: nothing was started", l.report, err)
		}
		uses = append(uses, pathUse{flag: "--report", path: l.report, writes: "the run's report"})
	}
	if l.metricsFile != "" {
		if err := cmp.Or(c.replaced(l.metricsFile), promName(l.metricsFile)); err != nil {
			return usagef("--metrics-file %s: %v: nothing was started", l.metricsFile, err)
		}
		uses = append(uses, pathUse{flag: "--metrics-file", path: l.metricsFile, writes: "the run's metrics"})
	}
	if q != nil && o.tasks.joblog != "" {
		if err := c.file(o.tasks.joblog); err != nil {
			return usagef("--joblog %s: %v: nothing was started", o.tasks.joblog, err)
		}
		uses = append(uses, pathUse{flag: "--joblog", path: o.tasks.joblog, writes: "the joblog"})
	}
	return fileClash(uses, fileIdentity)
}

// outputName refuses, before anything starts, what an output flag's file
// name holds that the flag does not read: each was written as it was
// given (--report r-%t.json one r-0.json, -o 'x/{}.log' a file named
// {}.log, report --svg - a file named -). The rules, in order:
//  1. "-" is the flag's console stream where it has one: -o's stdout and
//     -e's stderr (as without them: `-o out.log -e -` keeps stderr on the
//     console), report's --svg and --html (its stdout holds nothing else),
//     and --joblog's stdout (GNU parallel's --joblog -). Elsewhere stdout
//     carries the instances' output or a study's table: "-" is refused.
//  2. srun's patterns (%t %j %s %N %n, with widths, and %%) are read by
//     -o and -e, and by --report and --metrics-file (one file per node:
//     %t is refused there, nodePath). Elsewhere a name is taken as it is,
//     and a pattern in it is refused by name.
//  3. GNU parallel's replacement strings are read by a queue's -o and -e,
//     per task (checkPattern). Elsewhere one is refused by name.
func outputName(flag, name string, queue bool) error {
	kind := outputKindOf(flag)
	if name == "-" && !kind.dash {
		return usagef("%s -: - is stdout, which %s; give a file name", flag, kind.stdout)
	}
	if !kind.srun {
		if p := srunPatternIn(name); p != "" {
			return usagef("%s %s: %s is an srun pattern (%%t %%j %%s %%N %%n), which only -o, -e, --report and --metrics-file read; %s's file is named as given: give the name itself (e.g. with $SLURM_JOB_ID)", flag, name, p, flag)
		}
	}
	if r := taskqueue.ReplacementIn(name); r != "" && !(kind.tasks && queue) {
		where := "a task queue's -o and -e (--each-line, --tasks)"
		if kind.tasks {
			where += "; a run's instance is %t"
		}
		return usagef("%s %s: %s is a replacement string, filled in %s; %s's file is named as given here", flag, name, r, where, flag)
	}
	return nil
}

// outputKind is what an output flag's file name may hold (outputName).
type outputKind struct {
	flag   string // as messages name it: -o, --report, scale --json
	dash   bool   // rule 1: "-" is its console stream
	stdout string // rule 1: what stdout carries where "-" is refused
	srun   bool   // rule 2: srun's patterns are read
	tasks  bool   // rule 3: replacement strings are read in a queue
}

// outputKinds are every output flag's: a list, laid out by the linker,
// where a map would be built at every start (TestStartPathInits).
var outputKinds = []outputKind{
	{flag: "-o", dash: true, srun: true, tasks: true}, {flag: "-e", dash: true, srun: true, tasks: true},
	{flag: "--report", stdout: "carries the instances' output", srun: true},
	{flag: "--metrics-file", stdout: "carries the instances' output", srun: true},
	{flag: "--joblog", dash: true},
	{flag: "scale --json", stdout: "carries the study's table"}, {flag: "scale --svg", stdout: "carries the study's table"},
	{flag: "report --svg", dash: true}, {flag: "report --html", dash: true},
}

// outputKindOf is flag's kind; a flag without one is a programming error.
func outputKindOf(flag string) outputKind {
	for _, k := range outputKinds {
		if k.flag == flag {
			return k
		}
	}
	panic("outputName: no kind for " + flag + " (a new output flag needs its row in outputKinds)")
}

// srunPatternIn is the first of srun's patterns in name (%t, %3t, %j …;
// a % before a letter, with a width or not); "" when there is none.
func srunPatternIn(name string) string {
	for i := strings.IndexByte(name, '%'); i >= 0 && i < len(name)-1; {
		j := i + 1
		for j < len(name) && name[j] >= '0' && name[j] <= '9' {
			j++
		}
		if j < len(name) && (name[j] >= 'a' && name[j] <= 'z' || name[j] >= 'A' && name[j] <= 'Z') {
			return name[i : j+1]
		}
		next := strings.IndexByte(name[i+1:], '%')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return ""
}

// outputUses are an instance's or a task's -o and -e files; -e is left
// out where it is -o's file (srun's default without -e).
func outputUses(stdout, stderr string) []pathUse {
	var uses []pathUse
	if stdout != "" {
		uses = append(uses, pathUse{flag: "-o", path: stdout, writes: "output"})
	}
	if stderr != "" && stderr != stdout {
		uses = append(uses, pathUse{flag: "-e", path: stderr, writes: "output"})
	}
	return uses
}

// runInputs are the files a run reads: the task input, the node or
// topology file, and the programs it starts (a queue's: every task's).
func (a *app) runInputs(o *runOptions, l *launch, q *taskqueue.QueueConfig) []pathUse {
	uses := a.nodeInputs(o.common)
	for flag, file := range map[string]string{"--tasks": o.tasks.tasks, "--each-line": o.tasks.eachLine} {
		if file != "" && file != "-" {
			uses = append(uses, pathUse{flag: flag, path: file, reads: "the tasks"})
		}
	}
	if l.path != "" {
		uses = append(uses, pathUse{flag: "the command", path: l.path, reads: "the program the run starts"})
	}
	if q != nil {
		seen := map[string]bool{}
		for _, t := range q.Tasks {
			if !seen[t.Path] {
				seen[t.Path] = true
				uses = append(uses, pathUse{flag: "task " + fmt.Sprint(t.Seq) + "'s command", path: t.Path, reads: "a program the queue starts"})
			}
		}
	}
	return uses
}

// nodeInputs is the file that describes the node, when one does:
// --simulate FILE, --node-file, or $GPULAUNCH_NODE_FILE.
func (a *app) nodeInputs(c commonFlags) []pathUse {
	switch {
	case c.simulate != "" && (strings.ContainsRune(c.simulate, '/') || strings.HasSuffix(c.simulate, ".json")): // gpu.Open's rule
		return []pathUse{{flag: "--simulate", path: c.simulate, reads: "the node's description"}}
	case c.nodeFile != "":
		return []pathUse{{flag: "--node-file", path: c.nodeFile, reads: "the node's description"}}
	case c.simulate == "" && a.env["GPULAUNCH_NODE_FILE"] != "":
		return []pathUse{{flag: "GPULAUNCH_NODE_FILE", path: a.env["GPULAUNCH_NODE_FILE"], reads: "the node's description"}}
	}
	return nil
}

// pathUse is a file a command reads or writes, and the flag that names it.
type pathUse struct {
	flag, path string
	reads      string // what is read there ("the tasks"); "" for a file written
	writes     string // what is written there ("output", "the joblog"); "" for a file read
}

// fileClash says whether two of uses are one file where that would do
// harm; nil when none are. It opens nothing: identity tells what file a
// path is (fileIdentity; injected). Its rules, in order:
//
//  1. Paths are the same file when their identities are: an existing
//     file's device and inode, through symlinks; a file yet to be made,
//     its directory's resolved path and its name. A path whose identity
//     cannot be told (its directory is missing) is left to the
//     writability checks, which say what is wrong with it.
//  2. A file written is never a file read: the task input, the node's
//     description, the report being drawn or the program being started
//     would be replaced before or while it is read.
//  3. Two writers share a file only when they write the same kind of
//     thing: the output of every instance to one -o file, and -e with -o
//     (srun's), are lines of output by design; a report, a joblog, a
//     picture and output in one file would interleave formats that
//     nothing could read back.
//
// The first clash in the order of uses is reported, naming both flags.
func fileClash(uses []pathUse, identity func(path string) (string, bool)) error {
	seen := map[string][]pathUse{}
	for _, u := range uses {
		id, ok := identity(u.path)
		if !ok {
			continue
		}
		for _, prev := range seen[id] {
			if err := cmp.Or(writesOverInput(u, prev), writesOverInput(prev, u), mixesKinds(u, prev)); err != nil {
				return err
			}
		}
		seen[id] = append(seen[id], u)
	}
	return nil
}

// writesOverInput is rule 2: w writes the file r reads.
func writesOverInput(w, r pathUse) error {
	if w.writes == "" || r.reads == "" {
		return nil
	}
	return usagef("%s %s is %s %s, which gpulaunch reads (%s): writing there would destroy it; give another file: nothing was started",
		w.flag, w.path, r.flag, r.path, r.reads)
}

// mixesKinds is rule 3: a and b write different kinds of thing into one file.
func mixesKinds(a, b pathUse) error {
	if a.writes == "" || b.writes == "" || a.writes == b.writes {
		return nil
	}
	return usagef("%s %s and %s %s are one file: %s and %s would be written into each other; give each its own file: nothing was started",
		a.flag, a.path, b.flag, b.path, a.writes, b.writes)
}

// fileIdentity is what file path is (fileClash's rule 1): "inode DEV:INO"
// when it exists, else its directory's resolved path and its name; false
// when the directory cannot be resolved, and for a device or a pipe.
func fileIdentity(path string) (string, bool) {
	for range 40 { // a dangling symlink: the file it would create
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		var st unix.Stat_t
		if unix.Stat(path, &st) == nil {
			break
		}
		target, err := os.Readlink(path)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return "", false // a device or pipe (-o /dev/null --report /dev/null) holds nothing to destroy
		}
		return fmt.Sprintf("inode %d:%d", st.Dev, st.Ino), true
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", false
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", false
	}
	return filepath.Join(dir, filepath.Base(path)), true
}

// writableCheck checks files, each directory once.
type writableCheck struct {
	dirs map[string]error
}

// files checks the stdout and stderr files of one instance or task (who).
func (c writableCheck) files(outFlag, stdout, errFlag, stderr, who string) error {
	for _, f := range [][2]string{{outFlag, stdout}, {errFlag, stderr}} {
		if f[1] == "" {
			continue
		}
		if err := c.file(f[1]); err != nil {
			return usagef("%s: %s writes %s, but %v: nothing was started", f[0], who, f[1], err)
		}
	}
	return nil
}

// file says why path could not be opened for writing: it is a directory
// or not writable; or, to be made, its directory is missing, not
// writable, read-only or a kernel pseudo file system.
func (c writableCheck) file(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c.dir(dirAsOpened(path))
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory: give a file name", path)
	case unix.Access(path, unix.W_OK) != nil:
		return fmt.Errorf("%s is not writable by you", path)
	}
	return nil
}

// replaced is file for a file written whole beside it and renamed over
// it (writeWhole): its directory must take a new file too.
func (c writableCheck) replaced(path string) error {
	if err := c.file(path); err != nil {
		return err
	}
	return c.dir(dirAsOpened(path))
}

// dirAsOpened is the directory open(2) makes path's file in: path up to
// its last slash, as given. filepath.Dir would clean it, and po/0/..
// (-o 'po/%t/../%t.log') would read as po, which exists, where the
// kernel walks through po/0, which does not: every instance then failed
// to start with 126.
func dirAsOpened(path string) string {
	switch i := strings.LastIndexByte(path, '/'); i {
	case -1:
		return "."
	case 0:
		return "/"
	default:
		return path[:i]
	}
}

func (c writableCheck) dir(dir string) error {
	err, seen := c.dirs[dir]
	if !seen {
		err = writableDir(dir)
		c.dirs[dir] = err
	}
	return err
}

func writableDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the directory %s does not exist (create it: mkdir -p %s)", dir, dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil {
		if name, pseudo := pseudoFS[int64(st.Type)]; pseudo {
			return fmt.Errorf("the directory %s is on %s, a kernel pseudo file system where no file can be made: give a directory on a disk", dir, name)
		}
		if st.Flags&unix.ST_RDONLY != 0 {
			return fmt.Errorf("the directory %s is on a file system mounted read-only", dir)
		}
	}
	if unix.Access(dir, unix.W_OK|unix.X_OK) != nil {
		return fmt.Errorf("the directory %s is not writable by you", dir)
	}
	return nil
}

// pseudoFS are the kernel's file systems that hold no files of a user's:
// access(2) says root may write in their directories (/proc, /sys), and
// creating a file there then fails after the start (statfs(2)'s magics).
var pseudoFS = map[int64]string{
	unix.PROC_SUPER_MAGIC: "proc", unix.SYSFS_MAGIC: "sysfs", unix.CGROUP_SUPER_MAGIC: "cgroup", unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.DEBUGFS_MAGIC: "debugfs", unix.TRACEFS_MAGIC: "tracefs", unix.SECURITYFS_MAGIC: "securityfs", unix.BPF_FS_MAGIC: "bpf",
	unix.PSTOREFS_MAGIC: "pstore", unix.EFIVARFS_MAGIC: "efivarfs", unix.DEVPTS_SUPER_MAGIC: "devpts",
}
