package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/nvml"
)

const runUsage = `Usage: gpulaunch [run] [flags] [--] COMMAND [ARGS…]

Starts N copies of COMMAND, each on its own GPU(s), a NUMA-local CPU set and
memory policy (see 'gpulaunch plan'), and supervises them until every one has
exited. The exit status is srun's: 0 if all succeeded, 128 + the highest signal
if any was killed by one, else the highest exit code.

Examples:
  gpulaunch -n 4 -- python train.py --shard %t      # %t: the instance number
  gpulaunch -n 8 -l -K -- ./solver input.%t          # labelled output, stop all on a failure
  gpulaunch -n 4 -o 'out/%j-%t.log' -- ./app         # one output file per instance
  gpulaunch -n 2 -G 2 --gpu-visibility all -- ./app  # two GPUs each, all GPUs visible
  gpulaunch --each-line params.txt --joblog j.log --resume -- ./train --lr {}
                                                     # a task queue: a run per line, slots = GPUs
  srun -N 2 --ntasks-per-node=1 gpulaunch -n 4 --ddp -- python train.py
                                                     # 8 ranks over 2 nodes, MASTER_ADDR/PORT set`

// runFlags are run's own flags.
type runFlags struct {
	label         bool
	output, error string
	killOnBad     bool
	wait          string
	restarts      int
	timeout       string
	killWait      string
	memPerTask    string
	gpuIDs        string
	visibility    string
	dryRun        bool
	monitor       string
	report        string
	tmux          bool
	ranks         string
	ddp           ddpFlags
}

func (r *runFlags) register(fs *pflag.FlagSet) {
	fs.BoolVarP(&r.label, "label", "l", false, "prefix every output line with its instance number")
	fs.StringVarP(&r.output, "output", "o", "", "stdout file pattern per instance: %t instance, %j job, %s step, %N host, %n node index")
	fs.StringVarP(&r.error, "error", "e", "", "stderr file pattern per instance (same patterns)")
	fs.BoolVarP(&r.killOnBad, "kill-on-bad-exit", "K", false, "when one instance fails, end the others (TERM, grace, KILL)")
	fs.StringVarP(&r.wait, "wait", "W", "", "end the other instances this long after the first exits (seconds or a duration)")
	fs.IntVar(&r.restarts, "restarts", 0, "restart a failing instance up to N times, with exponential backoff")
	fs.StringVar(&r.timeout, "timeout", "", "end an instance that runs longer than this (e.g. 90s, 2h)")
	fs.StringVar(&r.killWait, "kill-wait", "10s", "grace between TERM and KILL")
	fs.StringVar(&r.memPerTask, "mem-per-task", "", "end an instance whose process tree uses more resident memory (e.g. 16G; plain numbers are MiB, as in Slurm)")
	fs.StringVar(&r.gpuIDs, "gpu-ids", "uuid", "how CUDA_VISIBLE_DEVICES names GPUs: uuid, or index for apps that need integers")
	fs.StringVar(&r.visibility, "gpu-visibility", "own", "own: an instance sees its GPUs only; all: every GPU of the allocation, its own first (CUDA IPC, NCCL P2P)")
	fs.BoolVar(&r.dryRun, "dry-run", false, "print the plan and start nothing (= gpulaunch plan)")
	fs.StringVar(&r.report, "report", "", "write the run's summary, plan and warnings as JSON to this file (docs/report.md)")
	fs.StringVar(&r.monitor, "monitor-interval", "2s", "sample each instance's CPU, memory and GPU use this often; 0 turns telemetry off")
	fs.BoolVar(&r.tmux, "tmux", false, "inside tmux (smux): open a window with one pane per instance following its output, and one running gpulaunch top")
	fs.StringVar(&r.ranks, "ranks", "global", "with one gpulaunch per node: global (RANK = node × N + instance) or local (each node a world of its own)")
	r.ddp.register(fs)
}

func (a *app) run(args []string) error {
	var c commonFlags
	var p planFlags
	var rf runFlags
	var tf taskFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetInterspersed(false) // everything after COMMAND is COMMAND's
	c.register(fs)
	p.register(fs)
	rf.register(fs)
	tf.register(fs)
	if done, err := a.parseFlags(fs, args, runUsage); done || err != nil {
		return err
	}
	argv := fs.Args()
	if err := tf.check(fs, argv); err != nil {
		return err
	}
	if len(argv) == 0 && !rf.dryRun && tf.tasks == "" {
		return usagef("no command to run: gpulaunch -n N -- COMMAND [ARGS…]")
	}
	pol, err := rf.policy()
	if err != nil {
		return err
	}
	if rf.ranks != "global" && rf.ranks != "local" {
		return usagef("--ranks %q: use global (RANK = node × N + instance across the nodes of the step) or local", rf.ranks)
	}
	if err := rf.ddp.check(fs); err != nil {
		return err
	}
	halt, err := launcher.ParseHalt(tf.halt)
	if err != nil {
		return usageError{err.Error()}
	}
	// A progress line only where someone watches: a terminal. Everything
	// else written there then goes around it.
	var progress *progressLine
	errW := a.stderr
	if tf.queueMode() && !rf.dryRun && isTerminal(a.stdout) {
		progress = &progressLine{term: a.stderr, started: time.Now()}
		errW = progress.wrap(a.stderr)
	}
	ids, vis, err := gpuNaming(rf.gpuIDs, rf.visibility)
	if err != nil {
		return err
	}
	log, err := c.loggerAt(errW, zap.InfoLevel)
	if err != nil {
		return err
	}
	auto := !fs.Changed("ntasks") // one instance per GPU group, decided from the allocation
	req, err := p.request(fs, false)
	if err != nil {
		return err
	}
	var path string
	var tasks []launcher.Task
	if tf.queueMode() {
		if tasks, err = a.buildTasks(tf, argv, a.stdin); err != nil {
			return err
		}
	} else if len(argv) > 0 {
		if path, err = lookPath(argv[0], a.env["PATH"]); err != nil {
			return err
		}
	}
	names := launcher.Names{JobID: a.env["SLURM_JOB_ID"], StepID: a.env["SLURM_STEP_ID"], Host: a.hostname}
	for _, pat := range []string{rf.output, rf.error} {
		if _, err := launcher.ExpandPattern(pat, 0, names); err != nil {
			return usageError{err.Error()}
		}
	}
	// Apps on a simulated node declare their GPU use here (nvml.SimulatedUsageEnv).
	usageDir := ""
	if c.simulate != "" && !rf.dryRun {
		if usageDir, err = os.MkdirTemp("", "gpulaunch-usage-"); err != nil {
			return err
		}
		defer os.RemoveAll(usageDir)
	}
	alloc, src, err := a.discoverWith(c, usageDir)
	if err != nil {
		return err
	}
	defer src.Close()
	if lr := alloc.LocalRank; lr != nil && lr.Size > 1 && c.simulate == "" {
		if auto {
			if bad := rankModeConflicts(fs); len(bad) > 0 {
				return usagef("%s: this is rank %d of %d on this node (%s), so gpulaunch binds it and execs the app with nothing left to supervise; drop %s or use the launcher's own options",
					strings.Join(bad, ", "), lr.Rank, lr.Size, lr.Source, strings.Join(bad, ", "))
			}
			e := execFlags{shape: p, gpuIDs: rf.gpuIDs, visibility: rf.visibility, dryRun: rf.dryRun, ddp: rf.ddp}
			return a.execRank(c, e, fs.Changed("gpus-per-task"), argv, &alloc)
		}
		// With GPUs of its own (srun --gpus-per-task) a rank may fan out
		// over them; anything else would pile every rank's N on one set.
		if !alloc.GPUsBoundPerRank() || len(alloc.GPUs) < req.Instances*req.GPUsPerInstance {
			return manyLaunchersError(req.Instances, *lr, alloc.Slurm)
		}
	}
	if auto {
		switch {
		case req.GPUsPerInstance > 0 && len(alloc.GPUs) >= req.GPUsPerInstance:
			req.Instances = len(alloc.GPUs) / req.GPUsPerInstance
		default:
			return usagef("-n N is required: the allocation has %d GPU(s) (%s)", len(alloc.GPUs), alloc.GPUReason)
		}
	}
	plan, err := binding.NewPlan(alloc, req)
	if err != nil {
		return usageError{err.Error()}
	}
	// Every node runs the same N when -n is on the command line (the
	// launcher runs the same one everywhere), or when Slurm granted every
	// node the GPUs that made this node's N.
	sameN := !auto || binding.GPUsPerNodeGranted(a.env) == len(alloc.GPUs)
	group, err := binding.NodeGroup(a.env, alloc.Slurm, a.hostname, len(plan.Slots), sameN, rf.ranks == "local")
	if err != nil {
		return usageError{err.Error()}
	}
	if group.MultiNode() && tf.queueMode() {
		return usagef("a task queue on %d nodes (%s) would run every task on every node: run it from one node (srun -N 1 gpulaunch --tasks …), or give each node its own task file", group.Size, group.Source)
	}
	if group.MultiNode() {
		names.NodeIndex, names.Host = group.Rank, group.Host
		log.Debug(fmt.Sprintf("node %d of %d (%s): ranks %d..%d of %d", group.Rank, group.Size, group.Source,
			group.Ranks(0).Rank, group.Ranks(len(plan.Slots)-1).Rank, group.Ranks(0).WorldSize))
	}
	rdv, err := a.rendezvous(rf.ddp, alloc.Slurm, group, group.Rank == 0)
	if err != nil {
		return err
	}
	reportFile := ""
	if rf.report != "" {
		if reportFile, err = reportPath(rf.report, names, group.MultiNode()); err != nil {
			return usageError{err.Error()}
		}
		if fi, err := os.Stat(filepath.Dir(reportFile)); err != nil || !fi.IsDir() {
			return usagef("--report %s: the directory %s does not exist: nothing was started", rf.report, filepath.Dir(reportFile))
		}
		if reportFile != rf.report {
			log.Info("--report: this node writes " + reportFile)
		}
	}
	if rf.dryRun {
		writePlan(a.stdout, alloc, plan)
		return nil
	}
	var tmux string
	if rf.tmux {
		if tmux, err = a.checkTmux(len(plan.Slots)); err != nil {
			return err
		}
	}
	warnings := plan.Warnings
	if req.GPUsPerInstance > 0 {
		warnings = append(append([]string{}, alloc.Warnings...), warnings...)
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	if a.childOfBatchShell(alloc.Slurm) {
		log.Warn("gpulaunch runs as a child of the batch script: on scancel or the time limit Slurm sends TERM to the batch shell only, which dies without passing it on, and the instances are then killed without warning; start it with `exec gpulaunch …` (or under srun) so that they get the TERM")
	}
	bind := c.simulate == "" || a.hasCPUs(plan)
	if !bind {
		log.Warn("simulated node: each instance is told its planned GPUs and CPUs, but CPU and memory binding are not applied (this machine does not have the simulated node's CPUs)")
	}
	insts, err := a.instances(plan, alloc, group, rdv, argv, path, rf, ids, vis, names, bind, usageDir)
	if err != nil {
		return err
	}
	var queue *launcher.Queue
	if tf.queueMode() {
		todo, skipped, err := skipDone(tasks, tf)
		if err != nil {
			return err
		}
		if len(todo) == 0 {
			fmt.Fprintf(errW, "gpulaunch: all %d tasks are done by the --joblog %s: nothing to run\n", len(tasks), tf.joblog)
			return nil
		}
		queue = &launcher.Queue{Tasks: todo, Total: len(tasks), Skipped: skipped, Retries: tf.retries, Halt: halt, Host: a.hostname,
			ForSlot: func(t launcher.Task, slot int) launcher.Task { return forSlot(t, slot, rf.output, rf.error, names) }}
		if tf.joblog != "" {
			if queue.Joblog, err = launcher.OpenJoblog(tf.joblog, tf.resume || tf.resumeFailed); err != nil {
				return usagef("--joblog: %v: nothing was started", err)
			}
			defer queue.Joblog.Close()
		}
		if progress != nil {
			queue.Progress = progress.update
			stop := make(chan struct{})
			go progress.tick(stop)
			defer func() {
				close(stop)
				if progress != nil { // an early return: leave the counts on screen
					progress.done()
				}
			}()
		}
	}
	started := time.Now()
	board := launcher.NewBoard(launcher.RunInfo{PID: a.pid, Host: a.hostname, JobID: a.env["SLURM_JOB_ID"], StepID: a.env["SLURM_STEP_ID"],
		Command: argv, Started: started, Monitor: pol.Monitor.String(), Node: group.Rank, Nodes: group.Size, WorldSize: group.Ranks(0).WorldSize}, insts)
	if srv := a.listenControl(board, log); srv != nil {
		defer srv.Close(2 * time.Second)
		log.Debug("control socket " + srv.Path() + ": gpulaunch status, top, logs, signal")
		if tmux != "" {
			if err := a.openTmuxWindow(tmux, srv.Path(), len(insts)); err != nil {
				log.Warn("--tmux: the window could not be laid out, the run goes on without it: " + err.Error())
			}
		}
	} else if tmux != "" {
		log.Warn("--tmux: no panes without the control socket; the run goes on")
	}
	stdout := a.stdout
	if progress != nil {
		stdout = progress.wrap(a.stdout)
	}
	outs, err := launcher.Run(launcher.Spec{
		Instances: insts, Policy: pol, Label: rf.label, LabelHost: labelHost(group), Log: log, GPUs: src, WatchGPUs: uuids(alloc.GPUs),
		Stdout: stdout, Stderr: errW, Board: board, Queue: queue,
	})
	if err != nil {
		return err
	}
	if queue != nil {
		if progress != nil {
			progress.done()
			progress = nil
		}
		launcher.WriteQueueSummary(errW, queue, insts, outs, time.Since(started))
		if rf.report != "" {
			if err := writeReport(reportFile, buildReport(alloc, req, plan, group, rdv, argv, started, pol.Monitor, insts, outs)); err != nil {
				return err
			}
		}
		if code := queue.ExitCode(); code != 0 {
			return exitCode(code)
		}
		return nil
	}
	if group.MultiNode() {
		fmt.Fprintf(a.stderr, "%s: node %d of %d, ranks %d..%d of %d\n", group.Host, group.Rank, group.Size,
			insts[0].Rank, insts[len(insts)-1].Rank, group.Ranks(0).WorldSize)
	}
	launcher.WriteSummary(a.stderr, insts, outs)
	if rf.report != "" {
		if err := writeReport(reportFile, buildReport(alloc, req, plan, group, rdv, argv, started, pol.Monitor, insts, outs)); err != nil {
			return err
		}
	}
	if code := launcher.ExitCode(outs); code != 0 {
		return exitCode(code)
	}
	return nil
}

// labelHost: with several nodes, labels name the node too (node3:2: …),
// as the instance numbers repeat on every node.
func labelHost(g binding.Group) string {
	if g.MultiNode() {
		return g.Host
	}
	return ""
}

func uuids(gpus []nvml.GPU) []string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		out[i] = g.UUID
	}
	return out
}

// gpuNaming reads --gpu-ids and --gpu-visibility.
func gpuNaming(gpuIDs, visibility string) (launcher.GPUIDs, launcher.Visibility, error) {
	ids, vis := launcher.GPUIDs(gpuIDs), launcher.Visibility(visibility)
	if ids != launcher.GPUIDsUUID && ids != launcher.GPUIDsIndex {
		return ids, vis, usagef("--gpu-ids %q: use uuid or index", gpuIDs)
	}
	if vis != launcher.VisibleOwn && vis != launcher.VisibleAll {
		return ids, vis, usagef("--gpu-visibility %q: use own or all", visibility)
	}
	return ids, vis, nil
}

// childOfBatchShell: gpulaunch was forked by a batch script (the batch
// step's task, SLURM_TASK_PID, is its parent) rather than exec'd by it.
func (a *app) childOfBatchShell(s binding.Slurm) bool {
	if !s.InJob() || s.InStep() {
		return false
	}
	task, err := strconv.Atoi(a.env["SLURM_TASK_PID"])
	return err == nil && task > 0 && task == a.ppid && task != a.pid
}

// manyLaunchersError is the guard against `srun -n 4 gpulaunch -n 4`:
// every task would start its own N instances on the same GPUs.
func manyLaunchersError(n int, lr binding.LocalRank, s binding.Slurm) error {
	fix := fmt.Sprintf("start one gpulaunch per node (`mpirun --map-by ppr:1:node gpulaunch -n %d -- …`)", n)
	if lr.Source == "SLURM_LOCALID" {
		fix = fmt.Sprintf("start one gpulaunch per node (`srun --ntasks-per-node=1 gpulaunch -n %d -- …`; srun inherits --ntasks and --gpus-per-task from the job, so in such a job say `srun -n 1 --gres=gpu:%d -c CPUS gpulaunch -n %d -- …`)",
			n, max(s.GPUsOnNode, n), n)
	}
	return usagef("-n %d in each of the %d ranks this launcher started on this node (%s) would start %d instances on the same GPUs: %s, or drop -n so that each rank binds itself to its own GPU and execs the app (rank mode)",
		n, lr.Size, lr.Source, n*lr.Size, fix)
}

func (a *app) baseEnv() []string {
	keys := make([]string, 0, len(a.env))
	for k := range a.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	base := make([]string, 0, len(keys))
	for _, k := range keys {
		base = append(base, k+"="+a.env[k])
	}
	return base
}

func (a *app) instances(plan binding.Plan, alloc binding.Allocation, group binding.Group, rdv *binding.Rendezvous, argv []string, path string, rf runFlags,
	ids launcher.GPUIDs, vis launcher.Visibility, names launcher.Names, bind bool, usageDir string) ([]launcher.Instance, error) {
	base := a.baseEnv()
	if usageDir != "" {
		base = append(base, nvml.SimulatedUsageEnv+"="+usageDir)
	}
	opts := launcher.EnvOptions{IDs: ids, Visibility: vis, AllGPUs: alloc.GPUs, CUDAIndex: alloc.CUDAIndex, Rendezvous: rdv}
	var insts []launcher.Instance
	for _, s := range plan.Slots {
		ranks := group.Ranks(s.Index)
		env, err := launcher.InstanceEnv(base, s, ranks, opts)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		inst := launcher.Instance{Index: s.Index, Rank: ranks.Rank, Path: path, Args: launcher.ExpandArgs(argv, s.Index), Env: env}
		if bind {
			inst.Binding = launcher.Binding{CPUs: s.CPUs, MemPolicy: s.MemPolicy, MemNodes: s.MemNodes}
		}
		var gpus []string
		for _, g := range s.GPUs {
			gpus = append(gpus, g.BusID)
			inst.GPUUUIDs = append(inst.GPUUUIDs, g.UUID)
		}
		inst.GPUs, inst.CPUs = strings.Join(gpus, ","), s.CPUs.String()
		if rf.output != "" {
			inst.Stdout, _ = launcher.ExpandPattern(rf.output, s.Index, names)
		}
		if rf.error != "" {
			inst.Stderr, _ = launcher.ExpandPattern(rf.error, s.Index, names)
		}
		insts = append(insts, inst)
	}
	return insts, nil
}

// hasCPUs reports whether this process may run on every CPU the plan
// uses: then a simulated or described node's binding can really be applied.
func (a *app) hasCPUs(plan binding.Plan) bool {
	status, err := fs.ReadFile(a.root, "proc/self/status")
	if err != nil {
		return false
	}
	mine, _, err := binding.ParseProcStatus(string(status))
	if err != nil {
		return false
	}
	for _, s := range plan.Slots {
		if !s.CPUs.IsSubsetOf(mine) {
			return false
		}
	}
	return true
}

func (rf runFlags) policy() (launcher.Policy, error) {
	p := launcher.Policy{KillOnBadExit: rf.killOnBad, Restarts: rf.restarts}
	if rf.restarts < 0 {
		return p, usagef("--restarts %d: cannot be negative", rf.restarts)
	}
	var err error
	if p.WaitAfterFirst, err = parseDuration("--wait", rf.wait); err != nil {
		return p, err
	}
	if p.Timeout, err = parseDuration("--timeout", rf.timeout); err != nil {
		return p, err
	}
	if p.KillWait, err = parseDuration("--kill-wait", rf.killWait); err != nil {
		return p, err
	}
	if p.KillWait == 0 {
		return p, usagef("--kill-wait must be longer than 0: instances need a moment to stop")
	}
	if p.MemPerTask, err = parseSize("--mem-per-task", rf.memPerTask); err != nil {
		return p, err
	}
	if p.Monitor, err = parseDuration("--monitor-interval", rf.monitor); err != nil {
		return p, err
	}
	return p, nil
}

// parseDuration reads a Go duration ("90s", "1h30m") or plain seconds.
func parseDuration(flag, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n < 0 {
			return 0, usagef("%s %q: cannot be negative", flag, s)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, usagef("%s %q: not a duration (use seconds, or 90s, 15m, 2h)", flag, s)
	}
	if d < 0 {
		return 0, usagef("%s %q: cannot be negative", flag, s)
	}
	return d, nil
}

// parseSize reads a memory size: K, M, G, T suffixes (binary), plain
// numbers in MiB as Slurm's --mem.
func parseSize(flag, s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := float64(1 << 20)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult, t = 1<<10, t[:len(t)-1]
		case 'M':
			mult, t = 1<<20, t[:len(t)-1]
		case 'G':
			mult, t = 1<<30, t[:len(t)-1]
		case 'T':
			mult, t = 1<<40, t[:len(t)-1]
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 || n*mult > 1<<62 {
		return 0, usagef("%s %q: not a memory size (use e.g. 512M, 16G, 1.5T)", flag, s)
	}
	return uint64(n * mult), nil
}

// commandError is a command that cannot be run: exit 127 or 126, like a shell.
type commandError struct {
	code int
	msg  string
}

func (e commandError) Error() string { return e.msg }

// lookPath resolves COMMAND as a shell would, against the PATH gpulaunch
// was given, before anything starts.
func lookPath(name, pathEnv string) (string, error) {
	check := func(p string) error {
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return commandError{127, fmt.Sprintf("%s: no such file: nothing was started", p)}
		case err != nil:
			return commandError{126, fmt.Sprintf("%s: %v: nothing was started", p, err)}
		case fi.IsDir():
			return commandError{126, fmt.Sprintf("%s is a directory: nothing was started", p)}
		case fi.Mode().Perm()&0o111 == 0:
			return commandError{126, fmt.Sprintf("%s is not executable (chmod +x?): nothing was started", p)}
		}
		return nil
	}
	if strings.Contains(name, "/") {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", err
		}
		return abs, check(abs)
	}
	var denied error
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		err := check(p)
		if err == nil {
			return filepath.Abs(p)
		}
		if ce, ok := err.(commandError); ok && ce.code == 126 && denied == nil {
			denied = err
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", commandError{127, fmt.Sprintf("%s: command not found in PATH: nothing was started", name)}
}
