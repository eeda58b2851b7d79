package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/control"
	"github.com/gpulaunch/gpulaunch/pkg/discover"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/metrics"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/nodelink"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/report"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
	"github.com/gpulaunch/gpulaunch/pkg/sitedefaults"
	"github.com/gpulaunch/gpulaunch/pkg/summary"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
	"github.com/gpulaunch/gpulaunch/pkg/tmux"
)

const runUsage = `Usage: gpulaunch [run] [flags] [--] COMMAND [ARGS…]

Starts N copies of COMMAND, each on its own GPU(s), a NUMA-local CPU set and
memory policy (see 'gpulaunch plan'), and supervises them until every one has
exited. The exit status is srun's: 0 if all succeeded, 128 + the highest signal
if any was killed by one, else the highest exit code. An instance gpulaunch
ended (-W, --timeout, --mem-per-task) counts as killed by the TERM it was sent;
a run a signal to gpulaunch stopped exits 128 + that signal (Ctrl-C: 130); a
task queue exits as GNU parallel (255 when a signal left tasks unfinished).
README.md, "Signals", has every rule.

Examples:
  gpulaunch -n 4 -- python train.py --shard %t      # %t: the instance number
  gpulaunch -n 8 -l -K -- ./solver input.%t          # labelled output, stop all on a failure
  gpulaunch -n 4 -o 'out/%j-%t.log' -- ./app         # one output file per instance
  gpulaunch -n 2 -G 2 --gpu-visibility all -- ./app  # two GPUs each, all GPUs visible
  gpulaunch --each-line params.txt --joblog j.log --resume -- ./train --lr {}
                                                     # a task queue: a run per line, slots = GPUs
  gpulaunch --colsep , --each-line grid.csv -o 'out/{#}.log' -- ./train --lr {1} --bs {2}
                                                     # GNU parallel's replacement strings, columns
  srun -N 2 --ntasks-per-node=1 gpulaunch -n 4 --ddp -- python train.py
                                                     # 8 ranks over 2 nodes, MASTER_ADDR/PORT set`

// runFlags are run's own flags.
type runFlags struct {
	label         bool
	output, error string
	policy        launcher.PolicyFlags
	gpuIDs        string
	visibility    string
	dryRun        bool
	report        string
	tmux          bool
	ranks         string
	openMode      string
	quiet         bool
	metricsFile   string
	metricsListen string
	ddp           ddpFlags
}

func (r *runFlags) register(fs *pflag.FlagSet) {
	fs.BoolVarP(&r.label, "label", "l", false, "prefix every output line with its instance number")
	fs.StringVarP(&r.output, "output", "o", "", "stdout (and, without -e, stderr) to this file pattern: %t instance (a queue's task), %j job, %s step, %N host, %n node index; for a queue also {#} task, {%} slot, and in an --each-line queue every replacement string of COMMAND ({} {.} {/} {//} {/.} {1} …), filled from the task's line. Without %t every instance writes the one file; a queue task's own file (%t, {#}) is started afresh by each try and by a --resume's rerun")
	fs.StringVarP(&r.error, "error", "e", "", "stderr to this file pattern (same patterns)")
	fs.StringVar(&r.openMode, "open-mode", "", "truncate (the default) or append to the -o/-e files; a --resume appends to the files tasks share (append: to every task's own file too)")
	fs.BoolVarP(&r.policy.KillOnBadExit, "kill-on-bad-exit", "K", false, "when one instance fails, end the others (TERM, grace, KILL)")
	fs.StringVarP(&r.policy.Wait, "wait", "W", "", "end the other instances this long after the first exits (seconds or a duration)")
	fs.IntVar(&r.policy.Restarts, "restarts", 0, "restart a failing instance up to N times, with exponential backoff (--ddp: the group; --mps: a GPU whose MPS server faulted restarts its instances together, N times for the GPU)")
	fs.StringVar(&r.policy.Timeout, "timeout", "", "end an instance that runs longer than this (e.g. 90s, 2h)")
	fs.StringVar(&r.policy.KillWait, "kill-wait", "10s", "grace between TERM and KILL")
	fs.StringVar(&r.policy.MemPerTask, "mem-per-task", "", "end an instance whose process tree uses more resident memory (e.g. 16G; plain numbers are MiB, as in Slurm; 0 is Slurm's --mem=0, all the memory: no cap)")
	fs.StringVar(&r.gpuIDs, "gpu-ids", "uuid", "how CUDA_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES names GPUs: uuid, or index for apps that need integers (Intel's ZE_AFFINITY_MASK takes ordinals only)")
	fs.StringVar(&r.visibility, "gpu-visibility", "own", "own: an instance sees its GPUs only; all: every GPU of the allocation, its own first (CUDA IPC, NCCL P2P)")
	fs.BoolVar(&r.dryRun, "dry-run", false, "print the plan and start nothing (= gpulaunch plan)")
	fs.StringVar(&r.report, "report", "", "write the run's summary, plan and warnings as JSON to this file (docs/report.md; default $GPULAUNCH_REPORT, the site's)")
	fs.StringVar(&r.policy.Monitor, "monitor-interval", "2s", "sample each instance's CPU, memory and GPU use this often (10ms at least; the site's default $GPULAUNCH_MONITOR_INTERVAL, if set); 0 turns telemetry off")
	fs.BoolVar(&r.tmux, "tmux", false, "inside tmux (smux): open a window with one pane per instance following its output, and one running gpulaunch top")
	fs.StringVar(&r.ranks, "ranks", "global", "with one gpulaunch per node: global (RANK = node × N + instance) or local (each node a world of its own)")
	fs.StringVar(&r.metricsFile, "metrics-file", "", "write the run's metrics in Prometheus's text format to this .prom file every --monitor-interval and at the end, replaced whole (node_exporter's textfile collector; %j %s %N %n as in -o; docs/report.md, \"Metrics\"; default $GPULAUNCH_METRICS_FILE, the site's)")
	fs.StringVar(&r.metricsListen, "metrics-listen", "", "serve the run's metrics at http://HOST:PORT/metrics while it runs (anyone who can reach the port may read them: give 127.0.0.1:PORT or the node's private address; default $GPULAUNCH_METRICS_LISTEN, the site's)")
	fs.BoolVarP(&r.quiet, "quiet", "q", false, "print none of gpulaunch's own informational lines, summary or progress line; warnings and errors still print")
	r.ddp.register(fs)
}

// runOptions is run's command line, read and checked before anything is
// looked up: a bad one stops here, with nothing started.
type runOptions struct {
	common commonFlags
	shape  planFlags
	flags  runFlags
	tasks  taskFlags
	fs     *pflag.FlagSet // what was given on the command line
	argv   []string       // COMMAND [ARGS…]
	policy launcher.Policy
	halt   taskqueue.Halt
	ids    instance.GPUIDs
	vis    instance.Visibility
	req    binding.Request // -n, -G, -c, --mem-bind, --share-gpus; Instances 0 without -n
	// site are the flags whose values are the site's defaults from the
	// environment (sitedefaults.For): a file or port of theirs that cannot
	// be had is a warning, not a refusal.
	site sitedefaults.Applied
}

func (o *runOptions) register(fs *pflag.FlagSet) {
	o.common.register(fs)
	o.shape.register(fs)
	o.flags.register(fs)
	o.tasks.register(fs)
}

// auto: no -n; the run has one instance per GPU (group), decided from
// the allocation.
func (o *runOptions) auto() bool { return !o.fs.Changed("ntasks") }

// need is what the run needs of NVIDIA's GPUs in environment env
// (discover.Need): none seen with -G 0, binding only as one rank of
// several.
func (o *runOptions) need(env sched.Env) gpu.Need {
	rank := discover.MayBeRank(env, o.auto(), o.common.simulate != "")
	return discover.Need(env, o.req.GPUsPerInstance == 0, o.vis == instance.VisibleAll, rank)
}

// newRunOptions is run's flag set, registered into fresh options.
func newRunOptions() *runOptions {
	o := &runOptions{fs: pflag.NewFlagSet("run", pflag.ContinueOnError)}
	o.fs.SetInterspersed(false) // everything after COMMAND is COMMAND's
	o.register(o.fs)
	return o
}

// parseRun reads run's command line; nil options and no error: --help.
// site: the site's defaults in the environment fill the flags not given
// (a user's run; a study's size's run is given its flags by the study).
func (a *app) parseRun(args []string, site bool) (*runOptions, error) {
	o := newRunOptions()
	if done, err := a.parseFlags(o.fs, args, runUsage); done || err != nil {
		return nil, err
	}
	o.argv = o.fs.Args()
	if err := o.tasks.check(o.fs, o.argv); err != nil {
		return nil, err
	}
	if len(o.argv) == 0 && !o.flags.dryRun && o.tasks.tasks == "" {
		return nil, usagef("no command to run: gpulaunch -n N -- COMMAND [ARGS…]")
	}
	var err error
	if site {
		if o.site, err = a.siteDefaults("run", o.fs, false); err != nil {
			return nil, err
		}
	}
	if o.policy, err = launcher.ReadPolicy(o.flags.policy); err != nil {
		return nil, usageError{err}
	}
	if o.flags.ranks != "global" && o.flags.ranks != "local" {
		return nil, usagef("--ranks %q: use global (RANK = node × N + instance across the nodes of the step) or local", o.flags.ranks)
	}
	if err := o.flags.ddp.check(o.fs, o.tasks.queueMode()); err != nil {
		return nil, err
	}
	if o.halt, err = taskqueue.ParseHalt(o.tasks.halt); err != nil {
		return nil, usageError{err}
	}
	if o.ids, o.vis, err = instance.ParseGPUNaming(o.flags.gpuIDs, o.flags.visibility); err != nil {
		return nil, usageError{err}
	}
	if o.shape.mps.on && (o.ids == instance.GPUIDsIndex || o.vis == instance.VisibleAll) {
		return nil, usagef("--mps with --gpu-ids index or --gpu-visibility all: each GPU's MPS daemon serves its clients that one GPU, named by its UUID, and no other; drop --gpu-ids/--gpu-visibility")
	}
	if _, err := o.common.logger(io.Discard); err != nil {
		return nil, err
	}
	if o.req, err = o.shape.request(o.fs, false); err != nil {
		return nil, err
	}
	for _, f := range [][2]string{{"-o", o.flags.output}, {"-e", o.flags.error}} {
		if err := checkPattern(f[0], f[1], o.tasks); err != nil {
			return nil, err
		}
	}
	outs := [][2]string{{"-o", o.flags.output}, {"-e", o.flags.error}, {"--report", o.flags.report},
		{"--metrics-file", o.flags.metricsFile}, {"--joblog", o.tasks.joblog}}
	for _, f := range outs {
		if f[1] != "" {
			if err := asUsage(outputs.Name(f[0], f[1], o.tasks.queueMode())); err != nil {
				return nil, err
			}
		}
	}
	// srun's: without -e, stderr goes where -o sends stdout
	if o.flags.output != "" && !o.fs.Changed("error") {
		o.flags.error = o.flags.output
	}
	// - is the console's stream (outputs.Name's rule 1)
	for _, f := range []*string{&o.flags.output, &o.flags.error} {
		if *f == "-" {
			*f = ""
		}
	}
	if m := o.flags.openMode; m != "" && m != string(process.OpenTruncate) && m != string(process.OpenAppend) {
		return nil, usagef("--open-mode %q: use truncate or append (as srun)", m)
	}
	if o.flags.openMode != "" && o.flags.output == "" && o.flags.error == "" {
		return nil, usagef("--open-mode %s is how the -o/-e files are opened, and there are none: give -o FILE (or -e FILE), or drop --open-mode", o.flags.openMode)
	}
	if err := o.checkCommand(); err != nil {
		return nil, err
	}
	if err := checkMetricsFlags(o.flags.metricsFile, o.flags.metricsListen, o.fs.Changed); err != nil {
		return nil, err
	}
	o.policy.DDP = o.flags.ddp.ddp
	return o, nil
}

// commandWordLate is the error for gpulaunch's own command word given
// after run's flags (`gpulaunch -v plan -n 2`): read as the COMMAND to
// run, and no program of that name, it said "plan: command not found"
// (127). A word after -- is a program whatever its name; nil then, and
// for a word that is no command of gpulaunch's.
func commandWordLate(args []string, o *runOptions) error {
	word := o.argv[0]
	if !slices.Contains(commands, word) || o.fs.ArgsLenAtDash() == 0 {
		return nil
	}
	before := args[:len(args)-len(o.argv)]
	fix := append(append([]string{"gpulaunch", word}, before...), o.argv[1:]...)
	return usagef("%s: no program of that name in PATH, and %s is a gpulaunch command, whose word comes first, before its flags: `%s`",
		word, word, strings.Join(fix, " "))
}

// checkCommand refuses what a command line asks and a run cannot do.
func (o *runOptions) checkCommand() error {
	if o.flags.quiet && o.common.verbose {
		return usagef("-q/--quiet and -v/--verbose ask for less and more of gpulaunch's lines: give one of them")
	}
	if o.common.json && !o.flags.dryRun {
		return usagef("--json: a run writes its summary as a table on stderr; for JSON give --report FILE (docs/report.md), or --dry-run --json for the plan")
	}
	return checkArgv(o.argv)
}

// checkArgv refuses a COMMAND no program could be started with
// (process.CheckArgv) as bad input.
func checkArgv(argv []string) error { return asUsage(process.CheckArgv(argv)) }

// taskSlots complete a task for a slot of this node's: {%} over every
// node's slots, the task's files named from here.
func (o *runOptions) taskSlots(l *launch) *taskqueue.Slots {
	files := taskqueue.NewTaskFiles(o.flags.output, o.flags.error, l.names, o.flags.openMode == string(process.OpenAppend))
	return &taskqueue.Slots{First: l.group.Ranks(0).Rank, Files: files}
}

// openMode is how output files are opened: --open-mode, else truncate,
// except that a --resume appends (the tasks it does not rerun keep what
// they wrote).
func (o *runOptions) openMode() process.OpenMode {
	switch {
	case o.flags.openMode != "":
		return process.OpenMode(o.flags.openMode)
	case o.tasks.resume || o.tasks.resumeFailed:
		return process.OpenAppend
	}
	return process.OpenTruncate
}

// run is `gpulaunch [run]`: read the command line, decide the launch,
// start and supervise it, say how it went.
func (a *app) run(args []string) error {
	o, err := a.parseRun(args, true)
	if o == nil {
		return err
	}
	// A task queue on a terminal keeps a progress line at the bottom. It is
	// drawn on stderr among the output on stdout: both must be the terminal.
	// (OpenMPI gives a rank's stdout a pty and its stderr a pipe: the line
	// would land in the job's output file.)
	con := summary.NewConsole(a.stdout, a.stderr, o.tasks.queueMode() && !o.flags.dryRun && !o.flags.quiet && isTerminal(a.stdout) && isTerminal(a.stderr))
	level := zap.InfoLevel
	if o.flags.quiet { // -q: warnings and errors only
		level = zap.WarnLevel
	}
	log, err := o.common.loggerAt(con.Stderr, level)
	if err != nil {
		return err
	}
	path := ""
	if !o.tasks.queueMode() && len(o.argv) > 0 {
		if path, err = lookPath(o.argv[0], a.env["PATH"]); err != nil {
			return cmp.Or(commandWordLate(args, o), err)
		}
	}
	need := o.need(a.env)
	alloc, src, usageDir, done, err := a.discoverToRun(o.common, !o.flags.dryRun, need)
	if err != nil {
		return err
	}
	defer done() // not reached by rank mode's exec: the process is replaced
	if rank, err := oneRankOfSeveral(o, alloc); rank || err != nil {
		if err != nil {
			return err
		}
		e := execFlags{shape: o.shape, gpuIDs: o.flags.gpuIDs, visibility: o.flags.visibility, dryRun: o.flags.dryRun, ddp: o.flags.ddp}
		return rankOf(a, o.common, need).exec(o.common, e, o.fs.Changed("gpus-per-task"), o.argv, &alloc)
	}
	l, err := a.newLaunch(o, found{alloc, src, usageDir}, path, log)
	if err != nil {
		return err
	}
	r := &runner{a: a, o: o, l: l, log: log}
	// The tasks are read where the queue is kept: here, or on node 0 of
	// a queue over several nodes, whose other nodes never read the input.
	var tasks []job.Task
	if o.tasks.queueMode() && l.nodes.role != roleNode {
		if tasks, err = buildTasks(o.tasks, o.argv, o.outputPatterns(), a.stdin, a.env["PATH"]); err != nil {
			l.nodes.failed(err, false, log)
			return err
		}
	}
	if o.flags.dryRun {
		return r.dryRun(tasks)
	}
	err = r.start(tasks, con)
	if errors.As(err, new(usageError)) || errors.As(err, new(commandError)) {
		l.nodes.failed(err, r.linkOpened, log) // refused before the queue began: the other nodes stop too
	}
	return err
}

// dryRun is --dry-run: the plan printed, nothing started. It refuses what
// the run would refuse: its locks are taken and let go at once (a joblog
// or metrics file another run holds), the metrics port listened on and
// closed.
func (r runner) dryRun(tasks []job.Task) error {
	a, o, l := r.a, r.o, r.l
	probeJoblog := func() error { lock, err := r.lockJoblog(); lock.Release(false); return err }
	if _, err := r.checkStart(tasks, nil, probeJoblog); err != nil {
		return err
	}
	unlock, err := r.lockRunMetrics()
	if err != nil {
		return err
	}
	unlock()
	ln, err := r.listenRunMetrics()
	if err != nil {
		return err
	}
	if ln != nil {
		ln.Close()
	}
	sh, err := planSharing(l.plan, l.alloc, a.env, o.shape.mps)
	if err != nil {
		return err
	}
	if o.common.json {
		return writeJSON(a.stdout, report.PlanJSON(l.alloc, l.req, l.plan, sh))
	}
	report.WritePlan(a.stdout, l.alloc, l.plan, sh)
	return nil
}

// oneRankOfSeveral says whether this gpulaunch is one of several ranks a
// launcher started on this node (binding.OneRankOfSeveral; never on a
// simulated node), and refuses run's own flags given to such a rank.
func oneRankOfSeveral(o *runOptions, alloc binding.Allocation) (bool, error) {
	if o.common.simulate != "" {
		return false, nil
	}
	rank, err := binding.OneRankOfSeveral(alloc, o.req, o.auto())
	if !rank {
		return false, asUsage(err)
	}
	if bad := rankModeConflicts(o.fs); len(bad) > 0 {
		lr := alloc.LocalRank
		return false, usagef("%s: this is rank %d of %d on this node (%s), so gpulaunch binds it and execs the app with nothing left to supervise; drop %s or use the launcher's own options",
			strings.Join(bad, ", "), lr.Rank, lr.Size, lr.Source, strings.Join(bad, ", "))
	}
	return true, nil
}

// runner is one run once its launch is decided (newLaunch): what
// checkStart, start, supervise and finish share — this gpulaunch (a), the
// command line (o), the launch (l) and the log.
type runner struct {
	a   *app
	o   *runOptions
	l   *launch
	log *zap.Logger
	// linkOpened: this node holds a queue over several nodes and its link
	// is open, so its Close tells the other nodes how the queue ended
	// (nodeQueue.failed need not). State of the run, not of the launch.
	linkOpened bool
}

// startChecks are what checkStart found ready to start.
type startChecks struct {
	tmux  string // --tmux's session; "" without
	insts []launcher.Instance
	qc    *taskqueue.QueueConfig // the queue kept here; nil for none
	// mps is the run's MPS (--mps), decided by checkStart (mps.Prepare); nil without.
	mps *mps.Run
	// sharing is how the instances share GPUs; nil when they do not.
	sharing *mps.Sharing
	// nothingLeft: a queue whose every task the joblog records as done.
	nothingLeft bool
}

// checkStart checks, before anything is opened, what a run checks: the
// tmux session, the instances, --mps, the joblog (lock takes its lock: a
// run's, before the joblog is read; a dry run takes none), the queue's
// tasks, and every file the run writes (checkOutputs). A dry run stops
// after it, so that it refuses what the run would (it passed -o into a
// missing directory). wait is the run's waiting (nil in a dry run, which
// catches no signal): asking the job's MPS ends at a stop signal.
func (r runner) checkStart(tasks []job.Task, wait *launcher.Waiting, lock func() error) (startChecks, error) {
	a, o, l, log := r.a, r.o, r.l, r.log
	var c startChecks
	var err error
	if o.flags.tmux {
		if c.tmux, err = tmux.Check(a.env["TMUX"], len(l.plan.Slots)); err != nil {
			return c, usageError{err}
		}
	}
	if c.insts, err = l.instances(a.env.List(), o); err != nil {
		return c, err
	}
	ctx := context.Background()
	if wait != nil {
		ctx = wait.Context()
	}
	if o.shape.mps.on { // the run's MPS decided from its plan, or refused
		c.mps, err = mps.Prepare(ctx, l.plan, l.alloc.Vendor, o.shape.mps.settings(), a.mpsNode(l.alloc))
		err = asUsage(err)
	}
	if wait != nil {
		if stopped := stoppedBeforeRun(wait, o, "while asking the node's MPS whether it answers", log); stopped != nil {
			return c, stopped // what it answered is moot
		}
	}
	if err != nil {
		return c, err
	}
	c.sharing = mps.SharingOf(l.plan, l.alloc.Vendor, o.shape.mps.settings(), mps.UnderJobsMPS(c.mps, a.env))
	if err := lock(); err != nil {
		return c, err
	}
	if o.tasks.queueMode() && l.nodes.role != roleNode {
		if c.qc, err = r.queueConfig(tasks); err != nil || c.qc == nil {
			c.nothingLeft = err == nil
			return c, err
		}
	}
	return c, checkOutputs(o, l, c.insts, c.qc, runInputs(o, l, c.qc, a.env))
}

// start starts what the launch decided. Everything the run will write is
// checked first (checkStart) and opened only when every check has passed,
// so that a refusal leaves the disk as it was: the output files and
// --report's file, then the control socket, then the joblog. From here on
// signals are caught (launcher.Waiting): a wait before the run — the
// queue's holder, the MPS daemons — ends at a stop signal, and the run
// ends with its status (stoppedBeforeRun). What it opens it closes with
// defer, when it returns: the control socket and the link to the other
// nodes only if the run did not take them over (supervise closes them).
func (r *runner) start(tasks []job.Task, con *summary.Console) error {
	a, o, l, log := r.a, r.o, r.l, r.log
	wait := launcher.StartWaiting()
	defer wait.Stop()
	var lock *taskqueue.JoblogLock
	begun := false // the joblog was opened for this run: a joblog the lock made stays
	defer func() { lock.Release(begun) }()
	c, err := r.checkStart(tasks, wait, func() (err error) { lock, err = r.lockJoblog(); return err })
	if c.nothingLeft {
		l.nodes.over(log)
	}
	if err != nil || c.nothingLeft {
		return err
	}
	metricsLn, err := r.listenRunMetrics()
	if err != nil {
		return err
	}
	if metricsLn != nil {
		defer metricsLn.Close() // closed by the run's end, or here when the start fails
	}
	unlockMetrics, err := r.lockRunMetrics()
	if err != nil {
		return err
	}
	defer unlockMetrics() // after the final write
	for _, w := range launcher.StartWarnings(l.alloc, l.plan, o.req.GPUsPerInstance, a.pid, a.ppid, l.bind) {
		log.Warn(w)
	}
	board := launcher.NewBoard(l.runInfo(a, time.Now(), c.sharing), c.insts)
	parts := runParts{insts: c.insts, board: board, con: con, tmux: c.tmux, wait: wait, policy: o.policy, sharing: c.sharing}
	if parts.srv, err = controlOf(a).listen(a.pid, board, log, c.tmux != ""); err != nil {
		return err
	}
	handedOver := false
	defer func() {
		if !handedOver { // the control socket and the link to the other nodes
			if parts.srv != nil {
				parts.srv.Close(0)
			}
			parts.queue.Close(log)
		}
	}()
	if parts.queue.q, begun, err = openQueue(o, c.qc, con); err != nil {
		return err
	}
	if begun {
		defer c.qc.Joblog.Close()
	}
	peers, err := l.nodes.open(wait.Context(), o, l, a.pid, log)
	r.linkOpened = err == nil && peers.Holder != nil
	if err != nil {
		if errors.Is(err, nodelink.ErrOver) {
			log.Info("the queue's holder (node 0) ended the queue before this node joined: nothing to do here")
			return nil
		}
		return cmp.Or(stoppedBeforeRun(wait, o, "while waiting for the queue's holder (node 0)", log), err)
	}
	parts.queue.Peers = peers // from here closed with the socket
	parts.metrics = newRunMetrics(l, metricsLn, board, c.insts, log)
	if c.mps != nil {
		daemons, err := startMPS(c.mps, c.insts, log, wait)
		if err != nil {
			return cmp.Or(stoppedBeforeRun(wait, o, "while the MPS control daemons came up (they were stopped)", log), err)
		}
		defer daemons.StopAfterRun(log)
		if daemons != nil {
			parts.spare = daemons.Keepers()
		}
		parts.fates = c.mps.Fates(daemons)
	}
	if o.policy.DDP {
		if parts.errs, err = instance.MakeErrorDir(a.tmpRoot, a.env["TMPDIR"]); err != nil {
			log.Warn(fmt.Sprintf("--ddp: no directory for the ranks' error files (%v): a failure's root cause will not be shown", err))
		}
		parts.policy.ErrorDir = parts.errs.Path
		defer parts.errs.Drop()
	}
	handedOver = true
	return r.supervise(parts)
}

// openQueue makes the queue kept here from qc (nil: none), with its
// joblog opened — opened says so: the lock's joblog then stays — and the
// progress line told its counts.
func openQueue(o *runOptions, qc *taskqueue.QueueConfig, con *summary.Console) (q *taskqueue.Queue, opened bool, err error) {
	if qc == nil {
		return nil, false, nil
	}
	if o.tasks.joblog != "" {
		if qc.Joblog, err = taskqueue.OpenJoblog(o.tasks.joblog, o.tasks.resume || o.tasks.resumeFailed); err != nil {
			return nil, false, usagef("--joblog: %v: nothing was started", err)
		}
		opened = true
	}
	if con.Progress != nil {
		qc.Progress = con.Progress.Update
	}
	return taskqueue.NewQueue(*qc), opened, nil
}

// lockJoblog makes this sweep the owner of its joblog before it reads it
// (taskqueue.JoblogLock): a second sweep on the same joblog is refused,
// naming the owner. Only where the queue is kept: on one node, or on the
// holder of a queue over several. nil: no joblog, or no lock on this
// file system (a warning says so and the run goes on, as parallel's).
func (r runner) lockJoblog() (*taskqueue.JoblogLock, error) {
	o, l, log := r.o, r.l, r.log
	path := o.tasks.joblog
	if !o.tasks.queueMode() || l.nodes.role == roleNode || path == "" || taskqueue.JoblogStream(path) {
		return nil, nil // a stream has nothing to keep: nothing reads it back
	}
	if err := outputs.NewWritableCheck().File(path); err != nil {
		return nil, usagef("--joblog %s: %v: nothing was started", path, err)
	}
	host := l.names.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	lock, err := taskqueue.LockJoblog(path, host, os.Getpid(), time.Now())
	var locked *taskqueue.ErrJoblogLocked
	switch {
	case errors.As(err, &locked):
		return nil, usagef("--joblog %v: wait for it to end, or give this sweep its own --joblog; nothing was started", err)
	case errors.Is(err, taskqueue.ErrLockUnsupported):
		log.Warn(fmt.Sprintf("--joblog %s: %v: another sweep on the same joblog would not be refused (docs/tasks.md, \"The joblog lock\")", path, err))
	case err != nil:
		return nil, usagef("--joblog %s: %v: nothing was started", path, outputs.Pathless(err))
	}
	return lock, nil
}

// queueConfig is what the task queue is made of: what --resume leaves to
// run, and on the holder of a queue over several nodes the others. Nil
// and no error: the joblog has every task done. The joblog and the
// progress line are added once the checks have passed (start).
func (r runner) queueConfig(tasks []job.Task) (*taskqueue.QueueConfig, error) {
	a, o, l, log := r.a, r.o, r.l, r.log
	todo, skipped, err := skipDone(tasks, o.tasks, log)
	if err != nil {
		return nil, err
	}
	if len(todo) == 0 {
		if !o.flags.quiet {
			fmt.Fprintf(a.stderr, "gpulaunch: all %d tasks are done by the --joblog %s: nothing to run\n", len(tasks), o.tasks.joblog)
		}
		return nil, nil
	}
	// The joblog's Host is ":", as GNU parallel writes for the local
	// machine: a resume by parallel itself matches it.
	// {%} is the slot's number over every node of the launch, from 1.
	g := l.group
	c := &taskqueue.QueueConfig{Tasks: todo, Total: len(tasks), Skipped: skipped, Tries: o.tasks.retries, Halt: o.halt, Host: ":",
		Slots: o.taskSlots(l)}
	if l.nodes.role == roleHolder {
		// the holder's records name it, as those of the other nodes do
		c.Host, c.OtherNodes = g.Host, g.Size-1
	}
	return c, nil
}

// runParts are what a run starts with once every check has passed: its
// instances, its queue, and what runs beside the supervisor.
type runParts struct {
	insts []launcher.Instance
	queue runQueue
	board *launcher.Board
	srv   *control.Server // the control socket; nil without one
	con   *summary.Console
	tmux  string // --tmux's session; "" without
	// spare are the keepers of the run's MPS daemons, which the run's end
	// leaves alone with what is below them (they are stopped after it).
	spare []int
	// fates are the GPUs whose instances share a fate under the run's
	// MPS daemons (launcher.Spec.Fates); nil without.
	fates []mps.Fate
	// metrics are --metrics-file's and --metrics-listen's; nil without.
	metrics *metrics.Exporter
	// wait holds gpulaunch's signals until the supervisor takes them.
	wait *launcher.Waiting
	// policy is the run's (--ddp's with its error files' directory).
	policy launcher.Policy
	// sharing is how the instances share GPUs; nil when they do not.
	sharing *mps.Sharing
	// errs are --ddp's error files; nil without --ddp.
	errs *instance.ErrorDir
}

// stoppedBeforeRun is the end of a run that a signal stopped before it
// began — while gpulaunch waited, with nothing of the run started —:
// one line, and the status README's "Signals" gives (128 + the signal
// for a run of instances, 255 for a task queue); nil when no signal
// stopped it. while says what gpulaunch was doing.
func stoppedBeforeRun(wait *launcher.Waiting, o *runOptions, while string, log *zap.Logger) error {
	by, ok := wait.Stopped()
	if !ok {
		return nil
	}
	log.Info(fmt.Sprintf("%s: stopped %s; nothing was started", job.SignalName(by.Signal), while))
	return exitCode(by.ExitCode(o.tasks.queueMode()))
}

// supervise runs the instances, with the control socket that `gpulaunch
// status` reads, --tmux's window and the progress line beside them, and
// then says how it went. The supervisor, the socket and the progress line
// are one group: the command returns when all three have ended.
func (r runner) supervise(st runParts) error {
	a, o, l, log := r.a, r.o, r.l, r.log
	insts, rq, board, srv, con, tmux := st.insts, st.queue, st.board, st.srv, st.con, st.tmux
	// Output to a reader that has gone (`gpulaunch … | head`) is dropped
	// with a warning (process.LineMux) instead of killing gpulaunch, which would
	// leave its instances unsupervised and its socket behind. Notify, not
	// Ignore: an ignored signal would be ignored by the instances too.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	if srv != nil {
		log.Debug("control socket " + srv.Path() + ": gpulaunch status, top, logs, signal")
		if tmux != "" {
			if err := openTmuxWindow(tmux, srv.Path(), len(insts), a.env.List(), a.pid); err != nil {
				log.Warn("--tmux: the window could not be laid out, the run goes on without it: " + err.Error())
			}
		}
	}
	// the supervisor's from here; a stop that came before is the end
	sigs := st.wait.HandOver()
	if stopped := stoppedBeforeRun(st.wait, o, "before the run began", log); stopped != nil {
		if srv != nil {
			srv.Close(0)
		}
		rq.Close(log)
		return stopped
	}
	var g errgroup.Group
	if srv != nil {
		// clients following output get a moment to read the last of it
		g.Go(func() error { srv.CloseAfter(board.Done(), 2*time.Second); return nil })
	}
	ctx, runEnded := context.WithCancel(context.Background())
	if con.Progress != nil && rq.q != nil {
		g.Go(func() error { con.Progress.Tick(ctx.Done()); return nil })
	}
	if rq.Holder != nil {
		g.Go(func() error { tellStatus(ctx, rq.Holder, board); return nil })
	}
	if st.metrics != nil {
		g.Go(func() error { st.metrics.Run(ctx); return nil })
	}
	var res launcher.Result
	g.Go(func() error {
		defer runEnded()
		var err error
		res, err = launcher.Run(launcher.Spec{
			Instances: insts, Policy: st.policy, Label: o.flags.label, LabelHost: l.group.LabelHost(), Log: log, GPUs: l.src,
			WatchGPUs: l.watched(), Stdout: con.Stdout, Stderr: con.Stderr, OpenMode: o.openMode(), Board: board,
			Work: rq.work(), Link: rq.Link(), Spare: st.spare, Fates: st.fates, Signals: sigs,
		})
		rq.Close(log) // what the run said last reaches the other nodes
		return err
	})
	err := g.Wait()
	con.Done()
	st.metrics.Write() // the final states: the file keeps them (docs/report.md, "Metrics")
	if err != nil {
		return err
	}
	return r.finish(st, res, board.Snapshot().Run)
}

// finish says how the run went — the summary on stderr, the --report file —
// and returns its exit status: srun's for instances, GNU parallel's for a
// task queue.
func (r runner) finish(st runParts, res launcher.Result, run launcher.RunInfo) error {
	a, l := r.a, r.l
	code := summary.End{Console: st.con, Stderr: a.stderr, Paint: paint(a.stderr, a.env), Quiet: r.o.flags.quiet, Feed: st.queue.Feed,
		Queue: st.queue.q, Instances: st.insts, Result: res, Started: run.Started, Group: l.group, Sharing: st.sharing}.Write()
	if st.errs != nil {
		st.errs.Keep(res.RootCause != nil && res.RootCause.Wrote)
	}
	if l.report != "" {
		if err := report.WriteFile(l.report, buildReport(l, st.sharing, run, st.insts, res, code)); err != nil {
			return err
		}
	}
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// rankModeConflicts names the run-only flags given on a command line that
// switched to rank mode: gpulaunch execs the app there, so nothing would
// supervise, label, restart or queue it. The flags run has and rank mode
// has not are derived from the two registrations, in the order run
// registers them, so that a new run flag is covered without a list to
// keep.
func rankModeConflicts(fs *pflag.FlagSet) []string {
	runFS, execFS := pflag.NewFlagSet("run", pflag.ContinueOnError), execFlagSet(new(commonFlags), new(execFlags))
	runFS.SortFlags = false
	(&runOptions{}).register(runFS)
	var out []string
	runFS.VisitAll(func(f *pflag.Flag) {
		if execFS.Lookup(f.Name) == nil && f.Name != "ntasks" && fs.Changed(f.Name) {
			out = append(out, "--"+f.Name)
		}
	})
	return out
}
