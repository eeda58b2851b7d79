package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/report"
)

// The CLI contract: every flag of every command, with the values it must
// refuse. A row gives a command line (words split on spaces; leading
// NAME=VALUE words are set in the environment), run in a fresh copy of
// the fixture tree below, that must end with exactly one
// line `gpulaunch: error: …` on stderr naming the flag, exit 2 (126/127
// where the docs say so), the marker app never started, and the tree
// unchanged. A flag with no bad value (a boolean, free text) has a row
// saying why. TestCLIContractCoversEveryFlag checks the rows against the
// flag sets the commands really register (commandFlagSets): a new flag
// without a row, or a row for a flag that is gone, fails.
//
// The fixture tree (the process's working directory):
//
//	app         the marker app: creates $GLTEST_MARK (outside the tree) if it ever runs
//	params.txt  --each-line input (two lines)
//	tasks.txt   --tasks input (two commands)
//	missing.txt --tasks input whose second command does not exist
//	assign.txt, unclosed.txt, continued.txt
//	            --tasks input whose line needs a shell (VAR=1 ./app), has
//	            an unclosed quote, ends in a backslash
//	bad.joblog  a file that is no joblog (--resume)
//	node.json   a node file of one fake GPU (--node-file)
//	gh200node.json
//	            a node file whose GPU's numa is its own memory node
//	            (memory_numa), without local_cpus
//	topo.json   a topology file (--simulate FILE)
//	cuda13.json, pascal.json
//	            topology files of one GPU: a Hopper of a CUDA 13.1 driver,
//	            a Pascal (the MPS client limit's 60 and 16)
//	run.json    a run report (gpulaunch report FILE)
//	dir/        a directory
//	ro/         a directory nobody may write (immutable when the test runs as root),
//	            holding old.json, a file anyone may write
type contractRow struct {
	cmd, flag string
	bad       string // what is wrong with the value: the subtest's name
	args      string // the command line after the command; "" for a flag without a bad value
	code      int    // the exit status: 2, or 126/127 where documented
	why       string // why the flag has no bad value
	envVar    string // a variable's row (badEnv): the error names it
}

// bad is a row: flag of cmd refuses the value in args (what: the kind of value).
func bad(cmd, flag, what, args string) contractRow {
	return contractRow{cmd: cmd, flag: flag, bad: what, args: args, code: exitUsage}
}

// badExit is a row whose refusal has its documented status (126, 127).
func badExit(cmd, flag, what, args string, code int) contractRow {
	return contractRow{cmd: cmd, flag: flag, bad: what, args: args, code: code}
}

// badArg is a row of a command's operands (no flag): the error names
// the command and the word refused (the last of args).
func badArg(cmd, what, args string) contractRow {
	return contractRow{cmd: cmd, bad: what, args: args, code: exitUsage}
}

// badEnv is a row of a variable gpulaunch reads (no flag): the error
// names it, NAME=VALUE.
func badEnv(cmd, name, what, args string) contractRow {
	return contractRow{cmd: cmd, envVar: name, bad: what, args: args, code: exitUsage}
}

// anyValue is the row of a flag that takes every value.
func anyValue(cmd, flag, why string) contractRow { return contractRow{cmd: cmd, flag: flag, why: why} }

// nodeOneOfTwo is the environment of node 1 of an srun step over two
// nodes, one task each.
const nodeOneOfTwo = "SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURMD_NODENAME=node1 SLURM_STEP_NODELIST=node[0-1] SLURM_STEP_TASKS_PER_NODE=1(x2) SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1 SLURM_NODEID=1 SLURM_LOCALID=0 GPULAUNCH_RUN_ID=contract"

// runS is most run rows' base: one instance on a simulated DGX H100, so
// that a row means the same on every machine (rows about -n use -G 0,
// this machine without GPUs).
const runS = "--simulate dgx-h100 -n 1"

var contract = []contractRow{
	// run: the shape of the slots
	bad("run", "ntasks", "negative", "-n -1 -G 0 -- ./app"),
	bad("run", "ntasks", "zero", "-n 0 -G 0 -- ./app"),
	bad("run", "ntasks", "wrong type", "-n two -G 0 -- ./app"),
	bad("run", "ntasks", "too large", "-n 99999999999999999999 -G 0 -- ./app"),
	bad("run", "ntasks", "beyond a node's instances", "-n 99999999999 -G 0 -- ./app"),
	bad("run", "ntasks", "2^31", "-n 2147483648 -- ./app"),
	bad("run", "ntasks", "more than the GPUs", "--simulate dgx-h100 -n 9 -- ./app"),
	bad("run", "gpus-per-task", "negative", runS+" -G -1 -- ./app"),
	bad("run", "gpus-per-task", "wrong type", runS+" -G x -- ./app"),
	bad("run", "gpus-per-task", "more than the node has", runS+" -G 9 -- ./app"),
	bad("run", "cpus-per-task", "negative", runS+" -c -1 -- ./app"),
	bad("run", "cpus-per-task", "zero", runS+" -c 0 -- ./app"),
	bad("run", "cpus-per-task", "more than the node has", runS+" -c 100000 -- ./app"),
	bad("run", "cpus-per-task", "wrong type", runS+" -c all -- ./app"),
	bad("run", "mem-bind", "unknown", runS+" --mem-bind strict -- ./app"),
	bad("run", "mem-bind", "empty", runS+" --mem-bind= -- ./app"),
	anyValue("run", "share-gpus", "a boolean"),
	anyValue("run", "overcommit", "a boolean"),
	// run: MPS (the daemons' lifecycle: mps_test.go)
	bad("run", "mps", "without sharing", "--simulate dgx-h100 -n 8 --mps -- ./app"),
	bad("run", "mps", "without a GPU", "-n 2 -G 0 --mps -- ./app"),
	bad("run", "mps", "two GPUs per instance", "--simulate dgx-h100 -n 8 -G 2 --mps -- ./app"),
	bad("run", "mps", "AMD GPUs", "--simulate lumi-g -n 16 --mps -- ./app"),
	bad("run", "mps", "more clients than a GPU serves", "--simulate dgx-h100 -n 392 -O --mps -- ./app"),
	bad("run", "mps", "MPS missing", "PATH=/usr/bin:/bin --simulate dgx-h100 -n 16 --mps -- ./app"),
	bad("run", "mps", "with --gpu-ids index", "--simulate dgx-h100 -n 16 --mps --gpu-ids index -- ./app"),
	bad("run", "mps", "with --gpu-visibility all", "--simulate dgx-h100 -n 16 --mps --gpu-visibility all -- ./app"),
	bad("run", "mps", "in rank mode", "SLURM_LOCALID=0 SLURM_NTASKS_PER_NODE=2 SLURM_STEP_TASKS_PER_NODE=2 SLURM_STEP_NUM_TASKS=2 SLURM_JOB_ID=1 SLURM_STEP_ID=0 --node-file node.json --mps -- ./app"),
	bad("run", "mps-threads", "zero", "--simulate dgx-h100 -n 16 --mps --mps-threads 0 -- ./app"),
	bad("run", "mps-threads", "more than 100", "--simulate dgx-h100 -n 16 --mps --mps-threads 150 -- ./app"),
	bad("run", "mps-threads", "past int64", "--simulate dgx-h100 -n 16 --mps --mps-threads 99999999999999999999 -- ./app"),
	bad("run", "mps-threads", "wrong type", "--simulate dgx-h100 -n 16 --mps --mps-threads half -- ./app"),
	bad("run", "mps-threads", "without --mps", "--simulate dgx-h100 -n 16 --share-gpus --mps-threads 50 -- ./app"),
	bad("run", "mps-mem-limit", "no unit", "--simulate dgx-h100 -n 16 --mps --mps-mem-limit 10 -- ./app"),
	bad("run", "mps-mem-limit", "a fraction", "--simulate dgx-h100 -n 16 --mps --mps-mem-limit 1.5G -- ./app"),
	bad("run", "mps-mem-limit", "without --mps", "--simulate dgx-h100 -n 16 --share-gpus --mps-mem-limit 10G -- ./app"),
	badEnv("run", "GPULAUNCH_MPS_WAIT", "GPULAUNCH_MPS_WAIT not a duration", "GPULAUNCH_MPS_WAIT=soon --simulate dgx-h100 -n 16 --mps -- ./app"),
	badEnv("run", "GPULAUNCH_MPS_WAIT", "GPULAUNCH_MPS_WAIT zero", "GPULAUNCH_MPS_WAIT=0s --simulate dgx-h100 -n 16 --mps -- ./app"),
	// a queue over several nodes: node 1 of 2's wait for its holder
	badEnv("run", "GPULAUNCH_JOIN_WAIT", "GPULAUNCH_JOIN_WAIT not a duration", "GPULAUNCH_JOIN_WAIT=soon "+nodeOneOfTwo+" --simulate dgx-h100 -n 1 -G 0 --each-line params.txt -- ./app {}"),
	badEnv("run", "GPULAUNCH_JOIN_WAIT", "GPULAUNCH_JOIN_WAIT zero", "GPULAUNCH_JOIN_WAIT=0s "+nodeOneOfTwo+" --simulate dgx-h100 -n 1 -G 0 --each-line params.txt -- ./app {}"),
	// run: which node
	bad("run", "simulate", "unknown node", "--simulate dgx-z900 -n 1 -- ./app"),
	bad("run", "simulate", "empty", "--simulate= -n 1 -- ./app"),
	bad("run", "simulate", "a directory", "--simulate dir -n 1 -- ./app"),
	bad("run", "simulate", "missing", "--simulate nodir/topo.json -n 1 -- ./app"),
	bad("run", "simulate", "/proc", "--simulate /proc/self/status -n 1 -- ./app"),
	bad("run", "node-file", "missing", "--node-file nodir/node.json -n 1 -- ./app"),
	bad("run", "node-file", "a directory", "--node-file dir -n 1 -- ./app"),
	bad("run", "node-file", "empty", "--node-file= -n 1 -- ./app"),
	bad("run", "node-file", "/proc", "--node-file /proc/self/status -n 1 -- ./app"),
	bad("run", "node-file", "with --simulate", "--node-file node.json "+runS+" -- ./app"),
	bad("run", "node-file", "a GPU's numa its own memory node, no local_cpus", "--node-file gh200node.json -n 1 -- ./app"),
	bad("run", "gpu-vendor", "unknown", runS+" --gpu-vendor acme -- ./app"),
	bad("run", "gpu-vendor", "empty", runS+" --gpu-vendor= -- ./app"),
	bad("run", "gpu-vendor", "another vendor's simulated node", runS+" --gpu-vendor amd -- ./app"),
	bad("run", "gpu-vendor", "another vendor's node file", "--node-file node.json -n 1 --gpu-vendor intel -- ./app"),
	bad("run", "json", "without --dry-run", runS+" --json -- ./app"),
	bad("run", "log-format", "unknown", runS+" --log-format xml -- ./app"),
	bad("run", "log-format", "empty", runS+" --log-format= -- ./app"),
	anyValue("run", "verbose", "a boolean"),
	anyValue("run", "help", "a boolean: prints the help"),
	// run: output files
	bad("run", "output", "empty", runS+" --output= -- ./app"),
	bad("run", "output", "missing directory", runS+" -o nodir/out.%t -- ./app"),
	bad("run", "output", "a missing directory an instance's path walks", runS+" -o dir/%t/../%t.log -- ./app"),
	bad("run", "output", "a directory", runS+" -o dir -- ./app"),
	bad("run", "output", "read-only", runS+" -o ro/out.%t -- ./app"),
	bad("run", "output", "/proc", runS+" -o /proc/out.%t -- ./app"),
	bad("run", "output", "unknown pattern", runS+" -o out.%q -- ./app"),
	bad("run", "output", "a replacement string in a run", runS+" -o out-{}.log -- ./app"),
	bad("run", "output", "the same file as --each-line", runS+" --each-line params.txt -o params.txt -- ./app {}"),
	bad("run", "output", "the same file as --tasks", runS+" --tasks tasks.txt -o tasks.txt"),
	bad("run", "output", "the command", runS+" -o app -- ./app"),
	bad("run", "output", "the same file as --node-file", "--node-file node.json -n 1 -o node.json -- ./app"),
	bad("run", "output", "the same file as --simulate", "--simulate topo.json -n 1 -o topo.json -- ./app"),
	bad("run", "output", "the same file as $GPULAUNCH_NODE_FILE", "GPULAUNCH_NODE_FILE=node.json -n 1 -o node.json -- ./app"),
	bad("run", "output", "the same file through a symlink", runS+" --each-line params.txt -o link-to-params -- ./app {}"),
	bad("run", "output", "a line's replacement string in a --tasks queue", runS+" --tasks tasks.txt -o out-{}.log"),
	bad("run", "output", "an unknown replacement string", runS+" --each-line params.txt -o out-{+/}.log -- ./app"),
	bad("run", "output", "a task's expanded directory missing", runS+" --each-line params.txt -o {}/out.log -- ./app"),
	bad("run", "error", "empty", runS+" --error= -- ./app"),
	bad("run", "error", "missing directory", runS+" -e nodir/err.%t -- ./app"),
	bad("run", "error", "a replacement string in a run", runS+" -e err-{1}.log -- ./app"),
	bad("run", "error", "a directory", runS+" -e dir -- ./app"),
	bad("run", "error", "read-only", runS+" -e ro/err -- ./app"),
	bad("run", "error", "/proc", runS+" -e /proc/err.%t -- ./app"),
	bad("run", "error", "the same file as --each-line", runS+" --each-line params.txt -e params.txt -- ./app {}"),
	bad("run", "error", "the same file as --report", runS+" -e out.json --report out.json -- ./app"),
	bad("run", "error", "a Perl expression", runS+" --each-line params.txt -e err-{=1=}.log -- ./app"),
	bad("run", "error", "a column the line lacks", runS+" --each-line params.txt --colsep , -e err-{2}.log -- ./app"),
	bad("run", "open-mode", "unknown", runS+" -o out --open-mode overwrite -- ./app"),
	bad("run", "open-mode", "empty", runS+" -o out --open-mode= -- ./app"),
	bad("run", "report", "empty", runS+" --report= -- ./app"),
	bad("run", "report", "missing directory", runS+" --report nodir/r.json -- ./app"),
	bad("run", "report", "%t in a file of the node", "--simulate dgx-h100 -n 2 --report r-%t.json -- ./app"),
	bad("run", "report", "stdout, the instances'", runS+" --report - -- ./app"),
	bad("run", "report", "a replacement string", runS+" --report r-{}.json -- ./app"),
	bad("run", "report", "a directory", runS+" --report dir -- ./app"),
	bad("run", "report", "read-only", runS+" --report ro/r.json -- ./app"),
	bad("run", "report", "a file in a read-only directory", runS+" --report ro/old.json -- ./app"),
	bad("run", "report", "/proc", runS+" --report /proc/r.json -- ./app"),
	bad("run", "report", "the same file as --each-line", runS+" --each-line params.txt --report params.txt -- ./app {}"),
	bad("run", "report", "the command", runS+" --report app -- ./app"),
	bad("run", "report", "the same file as -o", runS+" -o out --report out -- ./app"),
	bad("run", "report", "the same file as --joblog", runS+" --each-line params.txt --joblog j --report j -- ./app {}"),
	// run: metrics (metrics_test.go: the file and the port at work)
	bad("run", "metrics-file", "empty", runS+" --metrics-file= -- ./app"),
	bad("run", "metrics-file", "not .prom", runS+" --metrics-file m.txt -- ./app"),
	bad("run", "metrics-file", "stdout, the instances'", runS+" --metrics-file - -- ./app"),
	bad("run", "metrics-file", "%t in a file of the node", "--simulate dgx-h100 -n 2 --metrics-file m-%t.prom -- ./app"),
	bad("run", "metrics-file", "%t: the file is the node's", runS+" --metrics-file m.%t.prom -- ./app"),
	bad("run", "metrics-file", "a pattern in a missing directory", runS+" --metrics-file nodir/m-%j.prom -- ./app"),
	bad("run", "metrics-file", "missing directory", runS+" --metrics-file nodir/m.prom -- ./app"),
	bad("run", "metrics-file", "a directory", runS+" --metrics-file dir -- ./app"),
	bad("run", "metrics-file", "read-only", runS+" --metrics-file ro/m.prom -- ./app"),
	bad("run", "metrics-file", "a file in a read-only directory", runS+" --metrics-file ro/old.json -- ./app"),
	bad("run", "metrics-file", "/proc", runS+" --metrics-file /proc/m.prom -- ./app"),
	bad("run", "metrics-file", "the same file as --report", runS+" --report m.prom --metrics-file m.prom -- ./app"),
	bad("run", "metrics-file", "the same file as -o", runS+" -o m.prom --metrics-file m.prom -- ./app"),
	bad("run", "metrics-file", "the same file as --joblog", runS+" --each-line params.txt --joblog j.prom --metrics-file j.prom -- ./app {}"),
	bad("run", "metrics-listen", "empty", runS+" --metrics-listen= -- ./app"),
	bad("run", "metrics-listen", "no port", runS+" --metrics-listen 127.0.0.1 -- ./app"),
	bad("run", "metrics-listen", "port zero", runS+" --metrics-listen 127.0.0.1:0 -- ./app"),
	bad("run", "metrics-listen", "port too large", runS+" --metrics-listen 127.0.0.1:65536 -- ./app"),
	bad("run", "metrics-listen", "port not a number", runS+" --metrics-listen 127.0.0.1:http -- ./app"),
	bad("run", "metrics-listen", "no host", runS+" --metrics-listen :9464 -- ./app"),
	bad("run", "metrics-listen", "not an address of this node", runS+" --metrics-listen 192.0.2.1:9464 -- ./app"),
	// run: the site's defaults, read as their flags are (sitedefaults_test.go:
	// the defaults at work, the flag winning, a missing directory a warning)
	badEnv("run", "GPULAUNCH_MONITOR_INTERVAL", "GPULAUNCH_MONITOR_INTERVAL not a duration", "GPULAUNCH_MONITOR_INTERVAL=often "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_MONITOR_INTERVAL", "GPULAUNCH_MONITOR_INTERVAL negative", "GPULAUNCH_MONITOR_INTERVAL=-1s "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_MONITOR_INTERVAL", "GPULAUNCH_MONITOR_INTERVAL below the floor", "GPULAUNCH_MONITOR_INTERVAL=1ms "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_MONITOR_INTERVAL", "GPULAUNCH_MONITOR_INTERVAL in a queue", "GPULAUNCH_MONITOR_INTERVAL=often "+runS+" --each-line params.txt -- ./app {}"),
	badEnv("run", "GPULAUNCH_REPORT", "GPULAUNCH_REPORT %t in a file of the node", "GPULAUNCH_REPORT=r-%t.json --simulate dgx-h100 -n 2 -- ./app"),
	badEnv("run", "GPULAUNCH_REPORT", "GPULAUNCH_REPORT stdout", "GPULAUNCH_REPORT=- "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_REPORT", "GPULAUNCH_REPORT unknown pattern", "GPULAUNCH_REPORT=r-%q.json "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_REPORT", "GPULAUNCH_REPORT a replacement string", "GPULAUNCH_REPORT=r-{}.json "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_METRICS_FILE", "GPULAUNCH_METRICS_FILE not .prom", "GPULAUNCH_METRICS_FILE=m.txt "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_METRICS_FILE", "GPULAUNCH_METRICS_FILE %t in a file of the node", "GPULAUNCH_METRICS_FILE=m-%t.prom "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_METRICS_FILE", "GPULAUNCH_METRICS_FILE stdout", "GPULAUNCH_METRICS_FILE=- "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_METRICS_LISTEN", "GPULAUNCH_METRICS_LISTEN no host", "GPULAUNCH_METRICS_LISTEN=:9464 "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_METRICS_LISTEN", "GPULAUNCH_METRICS_LISTEN no port", "GPULAUNCH_METRICS_LISTEN=127.0.0.1 "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_METRICS_LISTEN", "GPULAUNCH_METRICS_LISTEN port zero", "GPULAUNCH_METRICS_LISTEN=127.0.0.1:0 "+runS+" -- ./app"),
	badEnv("run", "GPULAUNCH_METRICS_LISTEN", "GPULAUNCH_METRICS_LISTEN in a dry run", "GPULAUNCH_METRICS_LISTEN=127.0.0.1:http "+runS+" --dry-run"),
	// run: the instances' policy
	anyValue("run", "label", "a boolean"),
	bad("run", "kill-on-bad-exit", "in a task queue", runS+" --each-line params.txt -K -- ./app {}"),
	bad("run", "wait", "negative", runS+" -W -1 -- ./app"),
	bad("run", "wait", "wrong type", runS+" -W soon -- ./app"),
	bad("run", "wait", "too large", runS+" -W 1e30 -- ./app"),
	bad("run", "wait", "empty", runS+" --wait= -- ./app"),
	bad("run", "restarts", "negative", runS+" --restarts -1 -- ./app"),
	bad("run", "restarts", "wrong type", runS+" --restarts x -- ./app"),
	bad("run", "restarts", "too large", runS+" --restarts 99999999999 -- ./app"),
	bad("run", "timeout", "negative", runS+" --timeout -5s -- ./app"),
	bad("run", "timeout", "wrong type", runS+" --timeout later -- ./app"),
	bad("run", "timeout", "empty", runS+" --timeout= -- ./app"),
	bad("run", "timeout", "too large", runS+" --timeout 1e30 -- ./app"),
	bad("run", "timeout", "not a number", runS+" --timeout NaN -- ./app"),
	bad("run", "kill-wait", "zero", runS+" --kill-wait 0 -- ./app"),
	bad("run", "kill-wait", "negative", runS+" --kill-wait -1 -- ./app"),
	bad("run", "kill-wait", "wrong type", runS+" --kill-wait x -- ./app"),
	bad("run", "kill-wait", "too large", runS+" --kill-wait Inf -- ./app"),
	bad("run", "mem-per-task", "negative", runS+" --mem-per-task -1G -- ./app"),
	bad("run", "mem-per-task", "wrong type", runS+" --mem-per-task lots -- ./app"),
	bad("run", "mem-per-task", "too large", runS+" --mem-per-task 99999999T -- ./app"),
	bad("run", "mem-per-task", "not a number", runS+" --mem-per-task NaN -- ./app"),
	bad("run", "gpu-ids", "unknown", runS+" --gpu-ids name -- ./app"),
	bad("run", "gpu-ids", "empty", runS+" --gpu-ids= -- ./app"),
	bad("run", "gpu-visibility", "unknown", runS+" --gpu-visibility some -- ./app"),
	bad("run", "gpu-visibility", "empty", runS+" --gpu-visibility= -- ./app"),
	anyValue("run", "dry-run", "a boolean"),
	bad("run", "output", "missing directory, in a dry run as in the run", runS+" --dry-run -o nodir/x.log -- ./app"),
	bad("run", "metrics-file", "missing directory, in a dry run as in the run", runS+" --dry-run --metrics-file nodir/x.prom -- ./app"),
	bad("run", "monitor-interval", "negative", runS+" --monitor-interval -1s -- ./app"),
	bad("run", "monitor-interval", "wrong type", runS+" --monitor-interval often -- ./app"),
	bad("run", "monitor-interval", "too large", runS+" --monitor-interval 1e30 -- ./app"),
	bad("run", "monitor-interval", "too small", runS+" --monitor-interval 1ns -- ./app"),
	bad("run", "tmux", "outside tmux", runS+" --tmux -- ./app"),
	bad("run", "ranks", "unknown", runS+" --ranks world -- ./app"),
	bad("run", "ranks", "empty", runS+" --ranks= -- ./app"),
	bad("run", "ddp", "in a task queue", runS+" --each-line params.txt --ddp -- ./app {}"),
	bad("run", "master-addr", "empty", runS+" --ddp --master-addr= -- ./app"),
	bad("run", "master-addr", "without --ddp", runS+" --master-addr host0 -- ./app"),
	bad("run", "master-port", "zero", runS+" --ddp --master-port 0 -- ./app"),
	bad("run", "master-port", "too large", runS+" --ddp --master-port 65536 -- ./app"),
	bad("run", "master-port", "wrong type", runS+" --ddp --master-port http -- ./app"),
	// run: task queues
	bad("run", "tasks", "empty", runS+" --tasks="),
	bad("run", "tasks", "missing", runS+" --tasks nodir/tasks.txt"),
	bad("run", "tasks", "a directory", runS+" --tasks dir"),
	bad("run", "tasks", "with a COMMAND", runS+" --tasks tasks.txt -- ./app"),
	badExit("run", "tasks", "a command not found", runS+" --tasks missing.txt", 127),
	bad("run", "tasks", "a line that sets a variable (needs a shell)", runS+" --tasks assign.txt"),
	bad("run", "tasks", "a line with an unclosed quote", runS+" --tasks unclosed.txt"),
	bad("run", "tasks", "a line continued by a backslash", runS+" --tasks continued.txt"),
	bad("run", "colsep", "empty", runS+" --each-line params.txt --colsep= -- ./app {1}"),
	bad("run", "colsep", "not a regex", runS+" --each-line params.txt --colsep ( -- ./app {1}"),
	bad("run", "colsep", "matches the empty string", runS+" --each-line params.txt --colsep x* -- ./app {1}"),
	bad("run", "colsep", "without a queue", runS+" --colsep , -- ./app"),
	bad("run", "colsep", "with --tasks", runS+" --tasks params.txt --colsep ,"),
	bad("run", "quiet", "with -v", runS+" -q -v -- ./app"),
	bad("run", "each-line", "empty", runS+" --each-line= -- ./app {}"),
	bad("run", "each-line", "missing", runS+" --each-line nodir/params.txt -- ./app {}"),
	bad("run", "each-line", "a directory", runS+" --each-line dir -- ./app {}"),
	bad("run", "each-line", "without a COMMAND", runS+" --each-line params.txt"),
	badExit("run", "each-line", "a COMMAND not executable", runS+" --each-line params.txt -- ./params.txt {}", 126),
	bad("run", "each-line", "a Perl expression", runS+" --each-line params.txt -- ./app {=s/,/_/g=}"),
	bad("run", "each-line", "a Perl expression split into words", runS+" --each-line params.txt -- ./app {= s/,/_/g =}"),
	bad("run", "shell", "without --tasks", runS+" --shell -- ./app"),
	bad("run", "joblog", "empty", runS+" --each-line params.txt --joblog= -- ./app {}"),
	bad("run", "joblog", "an srun pattern, which it does not read", runS+" --each-line params.txt --joblog j-%j.log -- ./app {}"),
	bad("run", "joblog", "a replacement string", runS+" --each-line params.txt --joblog j-{}.log -- ./app {}"),
	bad("run", "joblog", "missing directory", runS+" --each-line params.txt --joblog nodir/j -- ./app {}"),
	bad("run", "joblog", "a directory", runS+" --each-line params.txt --joblog dir -- ./app {}"),
	bad("run", "joblog", "read-only", runS+" --each-line params.txt --joblog ro/j -- ./app {}"),
	bad("run", "joblog", "/proc", runS+" --each-line params.txt --joblog /proc/j -- ./app {}"),
	bad("run", "joblog", "the same file as --each-line", runS+" --each-line params.txt --joblog params.txt -- ./app {}"),
	bad("run", "joblog", "the same file as -o", runS+" --each-line params.txt -o j --joblog j -- ./app {}"),
	bad("run", "joblog", "without a queue", runS+" --joblog j -- ./app"),
	bad("run", "resume", "without --joblog", runS+" --each-line params.txt --resume -- ./app {}"),
	bad("run", "resume", "a joblog that is a stream", runS+" --each-line params.txt --joblog /dev/null --resume -- ./app {}"),
	bad("run", "resume", "a file that is no joblog", runS+" --each-line params.txt --joblog bad.joblog --resume -- ./app {}"),
	bad("run", "resume-failed", "without --joblog", runS+" --each-line params.txt --resume-failed -- ./app {}"),
	bad("run", "resume-failed", "a joblog that is a stream", runS+" --each-line params.txt --joblog /proc/self/fd/1 --resume-failed -- ./app {}"),
	bad("run", "resume-failed", "a file that is no joblog", runS+" --each-line params.txt --joblog bad.joblog --resume-failed -- ./app {}"),
	bad("run", "retries", "zero", runS+" --each-line params.txt --retries 0 -- ./app {}"),
	bad("run", "retries", "negative", runS+" --each-line params.txt --retries -1 -- ./app {}"),
	bad("run", "retries", "wrong type", runS+" --each-line params.txt --retries x -- ./app {}"),
	bad("run", "retries", "too large", runS+" --each-line params.txt --retries 9223372036854775807 -- ./app {}"),
	bad("run", "halt", "unknown", runS+" --each-line params.txt --halt sometimes -- ./app {}"),
	bad("run", "halt", "empty", runS+" --each-line params.txt --halt= -- ./app {}"),
	bad("run", "halt", "bad percentage", runS+" --each-line params.txt --halt now,fail=200% -- ./app {}"),

	// exec: rank mode execs the app itself, so "nothing started" is the marker
	bad("exec", "gpus-per-task", "negative", "--node-file node.json -G -1 -- ./app"),
	bad("exec", "gpus-per-task", "more than the node has", "--node-file node.json -G 5 -- ./app"),
	bad("exec", "gpus-per-task", "wrong type", "--node-file node.json -G two -- ./app"),
	bad("exec", "cpus-per-task", "wrong type", "--node-file node.json -c all -- ./app"),
	bad("exec", "cpus-per-task", "negative", "--node-file node.json -c -1 -- ./app"),
	bad("exec", "cpus-per-task", "zero", "--node-file node.json -c 0 -- ./app"),
	bad("exec", "mem-bind", "unknown", "--node-file node.json --mem-bind strict -- ./app"),
	anyValue("exec", "share-gpus", "a boolean"),
	bad("exec", "simulate", "another machine", "--simulate dgx-h100 -- ./app"),
	bad("exec", "simulate", "empty", "--simulate= -- ./app"),
	bad("exec", "simulate", "missing", "--simulate nodir/topo.json -- ./app"),
	bad("exec", "simulate", "a directory", "--simulate dir -- ./app"),
	bad("exec", "node-file", "empty", "--node-file= -- ./app"),
	bad("exec", "node-file", "missing", "--node-file nodir/node.json -- ./app"),
	bad("exec", "node-file", "a directory", "--node-file dir -- ./app"),
	bad("exec", "gpu-vendor", "unknown", "--node-file node.json --gpu-vendor acme -- ./app"),
	bad("exec", "gpu-vendor", "another vendor's node file", "--node-file node.json --gpu-vendor amd -- ./app"),
	bad("exec", "log-format", "unknown", "--node-file node.json --log-format xml -- ./app"),
	anyValue("exec", "verbose", "a boolean"),
	anyValue("exec", "help", "a boolean: prints the help"),
	bad("exec", "gpu-ids", "unknown", "--node-file node.json --gpu-ids name -- ./app"),
	bad("exec", "gpu-visibility", "unknown", "--node-file node.json --gpu-visibility some -- ./app"),
	anyValue("exec", "dry-run", "a boolean"),
	anyValue("exec", "ddp", "a boolean"),
	bad("exec", "master-addr", "without --ddp", "--node-file node.json --master-addr host0 -- ./app"),
	bad("exec", "master-port", "too large", "--node-file node.json --ddp --master-port 70000 -- ./app"),
	bad("exec", "master-port", "wrong type", "--node-file node.json --ddp --master-port http -- ./app"),

	// info and plan
	bad("info", "simulate", "unknown node", "--simulate dgx-z900"),
	bad("info", "simulate", "empty", "--simulate="),
	bad("info", "simulate", "a directory", "--simulate dir"),
	bad("info", "simulate", "missing", "--simulate nodir/topo.json"),
	bad("info", "node-file", "empty", "--node-file="),
	bad("info", "node-file", "a directory", "--node-file dir"),
	bad("info", "node-file", "missing", "--node-file nodir/node.json"),
	bad("info", "node-file", "/proc", "--node-file /proc/self/status"),
	bad("info", "gpu-vendor", "unknown", "--gpu-vendor acme"),
	bad("info", "gpu-vendor", "another vendor's simulated node", "--simulate lumi-g --gpu-vendor nvidia"),
	anyValue("info", "json", "a boolean"),
	bad("info", "log-format", "unknown", "--log-format xml"),
	anyValue("info", "verbose", "a boolean"),
	anyValue("info", "help", "a boolean: prints the help"),
	bad("plan", "ntasks", "negative", "--simulate dgx-h100 -n -1"),
	bad("plan", "ntasks", "missing", "--simulate dgx-h100"),
	bad("plan", "ntasks", "too large", "--simulate dgx-h100 -n 99999999999999999999"),
	bad("plan", "ntasks", "beyond a node's instances", "--simulate dgx-h100 -n 99999999999"),
	bad("plan", "ntasks", "wrong type", "--simulate dgx-h100 -n all"),
	bad("plan", "gpus-per-task", "negative", "--simulate dgx-h100 -n 1 -G -1"),
	bad("plan", "gpus-per-task", "wrong type", "--simulate dgx-h100 -n 1 -G one"),
	bad("plan", "cpus-per-task", "negative", "--simulate dgx-h100 -n 1 -c -1"),
	bad("plan", "cpus-per-task", "zero", "--simulate dgx-h100 -n 1 -c 0"),
	bad("plan", "cpus-per-task", "wrong type", "--simulate dgx-h100 -n 1 -c all"),
	bad("plan", "mem-bind", "unknown", "--simulate dgx-h100 -n 1 --mem-bind strict"),
	anyValue("plan", "share-gpus", "a boolean"),
	anyValue("plan", "overcommit", "a boolean"),
	bad("plan", "mps", "without sharing", "--simulate dgx-h100 -n 8 --mps"),
	bad("plan", "mps-threads", "more than 100", "--simulate dgx-h100 -n 16 --mps --mps-threads 150"),
	bad("plan", "mps-threads", "wrong type", "--simulate dgx-h100 -n 16 --mps --mps-threads half"),
	bad("plan", "mps-mem-limit", "no unit", "--simulate dgx-h100 -n 16 --mps --mps-mem-limit 10"),
	bad("plan", "simulate", "unknown node", "--simulate dgx-z900 -n 1"),
	bad("plan", "simulate", "/proc", "--simulate /proc/self/status -n 1"),
	bad("plan", "simulate", "empty", "--simulate= -n 1"),
	bad("plan", "simulate", "missing", "--simulate nodir/topo.json -n 1"),
	bad("plan", "simulate", "a directory", "--simulate dir -n 1"),
	bad("plan", "node-file", "empty", "--node-file= -n 1"),
	bad("plan", "node-file", "missing", "--node-file nodir/node.json -n 1"),
	bad("plan", "node-file", "a directory", "--node-file dir -n 1"),
	bad("plan", "gpu-vendor", "unknown", "--simulate dgx-h100 -n 1 --gpu-vendor acme"),
	bad("plan", "gpu-vendor", "another vendor's simulated node", "--simulate lumi-g -n 2 --gpu-vendor nvidia"),
	anyValue("plan", "json", "a boolean"),
	bad("plan", "log-format", "unknown", "--simulate dgx-h100 -n 1 --log-format xml"),
	anyValue("plan", "verbose", "a boolean"),
	anyValue("plan", "help", "a boolean: prints the help"),

	// the client commands: no gpulaunch runs in the test's TMPDIR
	bad("status", "pid", "negative", "--pid -1"),
	bad("status", "pid", "wrong type", "--pid me"),
	bad("status", "socket", "empty", "--socket="),
	bad("status", "socket", "missing", "--socket nodir/gpulaunch.sock"),
	bad("status", "socket", "a regular file", "--socket params.txt"),
	bad("status", "socket", "with --pid", "--socket x.sock --pid 1"),
	anyValue("status", "json", "a boolean"),
	anyValue("status", "help", "a boolean: prints the help"),
	bad("top", "pid", "negative", "--pid -1"),
	bad("top", "pid", "wrong type", "--pid me"),
	bad("top", "socket", "a directory", "--socket dir"),
	bad("top", "interval", "negative", "--interval -1s"),
	bad("top", "interval", "wrong type", "--interval often"),
	bad("top", "interval", "too large", "--interval 1e30"),
	anyValue("top", "help", "a boolean: prints the help"),
	bad("logs", "pid", "negative", "--pid -1 0"),
	bad("logs", "pid", "wrong type", "--pid me 0"),
	bad("logs", "socket", "missing", "--socket nodir/s 0"),
	bad("logs", "tail", "negative", "--tail -1 0"),
	bad("logs", "tail", "wrong type", "--tail many 0"),
	anyValue("logs", "follow", "a boolean"),
	anyValue("logs", "help", "a boolean: prints the help"),
	bad("signal", "pid", "negative", "--pid -1 all TERM"),
	bad("signal", "pid", "wrong type", "--pid me all TERM"),
	bad("signal", "socket", "a regular file", "--socket params.txt all TERM"),
	anyValue("signal", "help", "a boolean: prints the help"),

	// scale: its own flags, then run's as every size gets them
	bad("scale", "quiet", "with -v", "--simulate dgx-h100 -G 1,2 -q -v -- ./app"),
	bad("scale", "gpus-per-task", "zero", "--simulate dgx-h100 -G 0,1 -- ./app"),
	bad("scale", "gpus-per-task", "wrong type", "--simulate dgx-h100 -G one,two -- ./app"),
	bad("scale", "gpus-per-task", "more than the node has", "--simulate dgx-h100 -G 1,16 -- ./app"),
	bad("scale", "gpus-per-task", "more than the node has, shared", "--simulate dgx-h100 -G 1,16 --share-gpus -- ./app"),
	bad("scale", "gpus-per-task", "too large", "--simulate dgx-h100 -G 1,99999999999 -- ./app"),
	bad("scale", "ntasks", "too large", "--simulate dgx-h100 -n 1,2147483648 --share-gpus -- ./app"),
	bad("scale", "ntasks", "more than the GPUs", "--simulate dgx-h100 -n 1,9 -- ./app"),
	bad("scale", "gpus-per-task", "empty", "--simulate dgx-h100 --gpus-per-task= -- ./app"),
	bad("scale", "ntasks", "negative", "--simulate dgx-h100 -n -1,2 -- ./app"),
	bad("scale", "ntasks", "with -G", "--simulate dgx-h100 -n 1,2 -G 1,2 -- ./app"),
	bad("scale", "repeat", "zero", "--simulate dgx-h100 -G 1 --repeat 0 -- ./app"),
	bad("scale", "repeat", "wrong type", "--simulate dgx-h100 -G 1 --repeat x -- ./app"),
	bad("scale", "repeat", "too large", "--simulate dgx-h100 -G 1 --repeat 2147483648 -- ./app"),
	bad("scale", "metric", "not a regex", "--simulate dgx-h100 -G 1 --metric ([ -- ./app"),
	bad("scale", "metric", "empty", "--simulate dgx-h100 -G 1 --metric= -- ./app"),
	bad("scale", "metric-mean", "without --metric", "--simulate dgx-h100 -G 1 --metric-mean -- ./app"),
	bad("scale", "metric-sum", "with --metric-mean", "--simulate dgx-h100 -G 1 --metric x --metric-sum --metric-mean -- ./app"),
	bad("scale", "unit", "without --metric", "--simulate dgx-h100 -G 1 --unit s -- ./app"),
	bad("scale", "lower-is-better", "without --metric", "--simulate dgx-h100 -G 1 --lower-is-better -- ./app"),
	anyValue("scale", "weak", "a boolean"),
	bad("scale", "efficiency", "zero", "--simulate dgx-h100 -G 1 --efficiency 0 -- ./app"),
	bad("scale", "efficiency", "too large", "--simulate dgx-h100 -G 1 --efficiency 1.5 -- ./app"),
	bad("scale", "efficiency", "wrong type", "--simulate dgx-h100 -G 1 --efficiency most -- ./app"),
	bad("scale", "efficiency", "not a number", "--simulate dgx-h100 -G 1 --efficiency NaN -- ./app"),
	bad("scale", "json", "empty", "--simulate dgx-h100 -G 1 --json= -- ./app"),
	bad("scale", "json", "missing directory", "--simulate dgx-h100 -G 1 --json nodir/s.json -- ./app"),
	bad("scale", "json", "a directory", "--simulate dgx-h100 -G 1 --json dir -- ./app"),
	bad("scale", "json", "read-only", "--simulate dgx-h100 -G 1 --json ro/s.json -- ./app"),
	bad("scale", "json", "a file in a read-only directory", "--simulate dgx-h100 -G 1 --json ro/old.json -- ./app"),
	bad("scale", "json", "/proc", "--simulate dgx-h100 -G 1 --json /proc/s.json -- ./app"),
	bad("scale", "json", "the command", "--simulate dgx-h100 -G 1 --json app -- ./app"),
	bad("scale", "json", "the same file as --simulate", "--simulate topo.json -G 1 --json topo.json -- ./app"),
	bad("scale", "svg", "missing directory", "--simulate dgx-h100 -G 1 --svg nodir/s.svg -- ./app"),
	bad("scale", "svg", "stdout, the table's", "--simulate dgx-h100 -G 1 --svg - -- ./app"),
	bad("scale", "json", "an srun pattern, which it does not read", "--simulate dgx-h100 -G 1 --json s-%j.json -- ./app"),
	bad("scale", "svg", "empty", "--simulate dgx-h100 -G 1 --svg= -- ./app"),
	bad("scale", "svg", "a directory", "--simulate dgx-h100 -G 1 --svg dir -- ./app"),
	bad("scale", "svg", "read-only", "--simulate dgx-h100 -G 1 --svg ro/s.svg -- ./app"),
	bad("scale", "svg", "/proc", "--simulate dgx-h100 -G 1 --svg /proc/s.svg -- ./app"),
	bad("scale", "svg", "the same file as --json", "--simulate dgx-h100 -G 1 --json s --svg s -- ./app"),
	anyValue("scale", "halt", "a boolean"),
	bad("scale", "simulate", "unknown node", "--simulate dgx-z900 -G 1 -- ./app"),
	bad("scale", "simulate", "empty", "--simulate= -G 1 -- ./app"),
	bad("scale", "simulate", "missing", "--simulate nodir/topo.json -G 1 -- ./app"),
	bad("scale", "simulate", "a directory", "--simulate dir -G 1 -- ./app"),
	bad("scale", "node-file", "missing", "--node-file nodir/node.json -G 1 -- ./app"),
	bad("scale", "node-file", "empty", "--node-file= -G 1 -- ./app"),
	bad("scale", "node-file", "a directory", "--node-file dir -G 1 -- ./app"),
	bad("scale", "gpu-vendor", "unknown", "--simulate dgx-h100 -G 1 --gpu-vendor acme -- ./app"),
	bad("scale", "gpu-vendor", "another vendor's simulated node", "--simulate aurora -G 1 --gpu-vendor amd -- ./app"),
	bad("scale", "log-format", "unknown", "--simulate dgx-h100 -G 1 --log-format xml -- ./app"),
	anyValue("scale", "verbose", "a boolean"),
	anyValue("scale", "help", "a boolean: prints the help"),
	bad("scale", "cpus-per-task", "negative", "--simulate dgx-h100 -G 1 -c -1 -- ./app"),
	bad("scale", "cpus-per-task", "wrong type", "--simulate dgx-h100 -G 1 -c all -- ./app"),
	bad("scale", "mem-bind", "unknown", "--simulate dgx-h100 -G 1 --mem-bind strict -- ./app"),
	anyValue("scale", "share-gpus", "a boolean"),
	anyValue("scale", "overcommit", "a boolean"),
	anyValue("scale", "label", "a boolean"),
	bad("scale", "output", "missing directory", "--simulate dgx-h100 -G 1 -o nodir/o -- ./app"),
	bad("scale", "output", "empty", "--simulate dgx-h100 -G 1 --output= -- ./app"),
	bad("scale", "output", "a directory", "--simulate dgx-h100 -G 1 -o dir -- ./app"),
	bad("scale", "output", "read-only", "--simulate dgx-h100 -G 1 -o ro/o.%t -- ./app"),
	bad("scale", "output", "/proc", "--simulate dgx-h100 -G 1 -o /proc/o -- ./app"),
	bad("scale", "output", "the same file as --json", "--simulate dgx-h100 -G 1 -o s.json --json s.json -- ./app"),
	bad("scale", "output", "the same file as --simulate", "--simulate topo.json -G 1 -o topo.json -- ./app"),
	bad("scale", "error", "a directory", "--simulate dgx-h100 -G 1 -e dir -- ./app"),
	bad("scale", "error", "empty", "--simulate dgx-h100 -G 1 --error= -- ./app"),
	bad("scale", "error", "missing directory", "--simulate dgx-h100 -G 1 -e nodir/e -- ./app"),
	bad("scale", "error", "read-only", "--simulate dgx-h100 -G 1 -e ro/e -- ./app"),
	bad("scale", "error", "/proc", "--simulate dgx-h100 -G 1 -e /proc/e.%t -- ./app"),
	bad("scale", "error", "the same file as --svg", "--simulate dgx-h100 -G 1 -e s.svg --svg s.svg -- ./app"),
	bad("scale", "open-mode", "unknown", "--simulate dgx-h100 -G 1 --open-mode overwrite -- ./app"),
	bad("scale", "kill-on-bad-exit", "not for a study", "--simulate dgx-h100 -G 1 -K -- ./app"),
	bad("scale", "wait", "not for a study", "--simulate dgx-h100 -G 1 -W 1 -- ./app"),
	bad("scale", "restarts", "negative", "--simulate dgx-h100 -G 1 --restarts -1 -- ./app"),
	bad("scale", "restarts", "wrong type", "--simulate dgx-h100 -G 1 --restarts x -- ./app"),
	bad("scale", "timeout", "wrong type", "--simulate dgx-h100 -G 1 --timeout later -- ./app"),
	bad("scale", "kill-wait", "zero", "--simulate dgx-h100 -G 1 --kill-wait 0 -- ./app"),
	bad("scale", "mem-per-task", "wrong type", "--simulate dgx-h100 -G 1 --mem-per-task lots -- ./app"),
	bad("scale", "gpu-ids", "unknown", "--simulate dgx-h100 -G 1 --gpu-ids name -- ./app"),
	bad("scale", "gpu-visibility", "unknown", "--simulate dgx-h100 -G 1 --gpu-visibility some -- ./app"),
	bad("scale", "dry-run", "not for a study", "--simulate dgx-h100 -G 1 --dry-run -- ./app"),
	bad("scale", "report", "not for a study", "--simulate dgx-h100 -G 1 --report r.json -- ./app"),
	bad("scale", "metrics-file", "not for a study", "--simulate dgx-h100 -G 1 --metrics-file m.prom -- ./app"),
	bad("scale", "metrics-listen", "not for a study", "--simulate dgx-h100 -G 1 --metrics-listen 127.0.0.1:9464 -- ./app"),
	bad("scale", "monitor-interval", "negative", "--simulate dgx-h100 -G 1 --monitor-interval -1 -- ./app"),
	badEnv("scale", "GPULAUNCH_MONITOR_INTERVAL", "GPULAUNCH_MONITOR_INTERVAL not a duration", "GPULAUNCH_MONITOR_INTERVAL=often --simulate dgx-h100 -G 1 -- ./app"),
	bad("scale", "tmux", "not for a study", "--simulate dgx-h100 -G 1 --tmux -- ./app"),
	bad("scale", "ranks", "not for a study", "--simulate dgx-h100 -G 1 --ranks local -- ./app"),
	bad("scale", "ddp", "with -G", "--simulate dgx-h100 -G 1 --ddp -- ./app"),
	bad("scale", "master-addr", "without --ddp", "--simulate dgx-h100 -G 1 --master-addr h -- ./app"),
	bad("scale", "master-port", "too large", "--simulate dgx-h100 -n 1 --ddp --master-port 65536 -- ./app"),
	bad("scale", "master-port", "wrong type", "--simulate dgx-h100 -n 1 --ddp --master-port http -- ./app"),

	// report: draw a run report
	bad("report", "svg", "empty", "run.json --svg="),
	bad("report", "svg", "missing directory", "run.json --svg nodir/r.svg"),
	bad("report", "svg", "an srun pattern, which it does not read", "run.json --svg r-%t.svg"),
	bad("report", "svg", "a directory", "run.json --svg dir"),
	bad("report", "svg", "read-only", "run.json --svg ro/r.svg"),
	bad("report", "svg", "a file in a read-only directory", "run.json --svg ro/old.json"),
	bad("report", "svg", "/proc", "run.json --svg /proc/r.svg"),
	bad("report", "svg", "the same file as the report", "run.json --svg run.json"),
	bad("report", "svg", "the same file as --html", "run.json --svg r.out --html r.out"),
	bad("report", "svg", "stdout with --html's", "run.json --svg - --html -"),
	bad("report", "html", "missing directory", "run.json --html nodir/r.html"),
	bad("report", "html", "empty", "run.json --html="),
	bad("report", "html", "a directory", "run.json --html dir"),
	bad("report", "html", "read-only", "run.json --html ro/r.html"),
	bad("report", "html", "/proc", "run.json --html /proc/r.html"),
	bad("report", "html", "the same file as the report", "run.json --html ./dir/../run.json"),
	anyValue("report", "help", "a boolean: prints the help"),

	// completion and man: generated from the flag sets (clidoc.go)
	badArg("completion", "unknown shell", "tcsh"),
	badArg("completion", "two shells", "bash zsh"),
	anyValue("completion", "help", "a boolean: prints the help"),
	badArg("man", "an argument", "gpulaunch"),
	anyValue("man", "help", "a boolean: prints the help"),

	// issue 36, lane C
	bad("scale", "per-gpu", "zero", "--simulate dgx-h100 --per-gpu 0,1 -- ./app"),
	bad("scale", "per-gpu", "wrong type", "--simulate dgx-h100 --per-gpu one -- ./app"),
	bad("scale", "per-gpu", "with -n", "--simulate dgx-h100 --per-gpu 1,2 -n 1,2 -- ./app"),
	bad("scale", "per-gpu", "with -G", "--simulate dgx-h100 --per-gpu 1,2 -G 1,2 -- ./app"),
	bad("scale", "per-gpu", "a node without GPUs", "CUDA_VISIBLE_DEVICES= --simulate dgx-h100 --per-gpu 1,2 -- ./app"),
	bad("scale", "per-gpu", "more instances than a node runs", "--simulate dgx-h100 --per-gpu 1,2048 -- ./app"),
	bad("scale", "per-gpu", "with --ddp", "--simulate dgx-h100 --per-gpu 1,2 --ddp -- ./app"),
	bad("scale", "per-gpu", "with --weak", "--simulate dgx-h100 --per-gpu 1,2 --weak -- ./app"),
	bad("scale", "per-gpu", "with --metric-mean", "--simulate dgx-h100 --per-gpu 1,2 --metric x --metric-mean -- ./app"),
	bad("scale", "mps", "without --per-gpu", "--simulate dgx-h100 -n 1,2 --mps -- ./app"),
	bad("scale", "mps", "more clients than a GPU serves", "--simulate dgx-h100 --per-gpu 1,64 --mps -- ./app"),
	bad("scale", "mps", "MPS missing", "PATH=/usr/bin:/bin --simulate dgx-h100 --per-gpu 1,2 --mps -- ./app"),
	bad("scale", "mps", "AMD GPUs", "--simulate lumi-g --per-gpu 1,2 --mps -- ./app"),
	// issue 36, lane B: how long NVML's start is waited for, refused
	// wherever this machine's GPUs are looked for
	badEnv("info", "GPULAUNCH_NVML_WAIT", "GPULAUNCH_NVML_WAIT not a duration", "GPULAUNCH_NVML_WAIT=soon"),
	badEnv("plan", "GPULAUNCH_NVML_WAIT", "GPULAUNCH_NVML_WAIT zero", "GPULAUNCH_NVML_WAIT=0s -n 1"),
	badEnv("run", "GPULAUNCH_NVML_WAIT", "GPULAUNCH_NVML_WAIT negative", "GPULAUNCH_NVML_WAIT=-5s -n 1 -G 0 -- ./app"),
	badEnv("exec", "GPULAUNCH_NVML_WAIT", "GPULAUNCH_NVML_WAIT not a duration", "GPULAUNCH_NVML_WAIT=10 -- ./app"),
	// issue 36, lane D
	badEnv("run", "TORCHELASTIC_SIGNALS_TO_HANDLE", "TORCHELASTIC_SIGNALS_TO_HANDLE naming a signal gpulaunch does not pass on", "TORCHELASTIC_SIGNALS_TO_HANDLE=SIGTERM,SIGALRM -n 2 -G 0 --ddp -- ./app"),
	badEnv("run", "TORCHELASTIC_SIGNALS_TO_HANDLE", "TORCHELASTIC_SIGNALS_TO_HANDLE naming USR1, which torchrun does not read", "TORCHELASTIC_SIGNALS_TO_HANDLE=USR1 -n 2 -G 0 --ddp -- ./app"),
	badEnv("run", "TORCHELASTIC_SIGNALS_TO_HANDLE", "TORCHELASTIC_SIGNALS_TO_HANDLE empty", "TORCHELASTIC_SIGNALS_TO_HANDLE= -n 2 -G 0 --ddp -- ./app"),
	// issue 37, lane I: MPS's client limit per GPU (mps.ClientLimit L1–L5),
	// refused with the fix wherever a plan goes under MPS
	bad("run", "mps", "more clients than a CUDA 13.1 GPU serves", "--simulate cuda13.json -n 61 -O --mps -- ./app"),
	bad("run", "mps", "more clients than a pre-Volta GPU serves", "--simulate pascal.json -n 17 -O --mps -- ./app"),
	bad("run", "mps", "more clients than a GPU serves at CUDA_DEVICE_MAX_CONNECTIONS=8", "CUDA_DEVICE_MAX_CONNECTIONS=8 --simulate dgx-h100 -n 104 --mps -- ./app"),
	bad("plan", "mps", "more clients than a CUDA 13.1 GPU serves", "--simulate cuda13.json -n 61 -O --mps"),
	bad("plan", "mps", "more clients than a GPU serves at CUDA_DEVICE_MAX_CONNECTIONS=8", "CUDA_DEVICE_MAX_CONNECTIONS=8 --simulate dgx-h100 -n 104 --mps"),
	bad("scale", "mps", "more clients than a GPU serves at CUDA_DEVICE_MAX_CONNECTIONS=8", "CUDA_DEVICE_MAX_CONNECTIONS=8 --simulate dgx-h100 --per-gpu 1,13 --mps -- ./app"),
	bad("scale", "mps", "more clients than a pre-Volta GPU serves", "--simulate pascal.json --per-gpu 1,17 --mps -- ./app"),
}

// TestCLIContractCoversEveryFlag: every flag every command registers has a
// row, every row names a flag that exists, and every command of
// `gpulaunch --help` has its flag set here.
func TestCLIContractCoversEveryFlag(t *testing.T) {
	sets := commandFlagSets()
	for _, cmd := range helpCommands(t) {
		if _, ok := sets[cmd]; !ok {
			t.Errorf("command %q of `gpulaunch --help` has no flag set in commandFlagSets", cmd)
		}
	}
	rows := map[string]bool{}
	for _, r := range contract {
		fs, ok := sets[r.cmd]
		switch {
		case !ok:
			t.Errorf("a row for %s --%s: there is no command %q", r.cmd, r.flag, r.cmd)
		case r.flag == "": // an operand's row
		case fs.Lookup(r.flag) == nil:
			t.Errorf("a row for %s --%s: %s has no flag --%s (delete the row)", r.cmd, r.flag, r.cmd, r.flag)
		}
		rows[r.cmd+" "+r.flag] = true
	}
	for cmd, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) {
			if !rows[cmd+" "+f.Name] {
				t.Errorf("%s --%s has no row in the CLI contract table (contract_test.go): add its bad values, or why it has none", cmd, f.Name)
			}
			for _, class := range missingClasses(cmd, f) {
				t.Errorf("%s --%s has no row for %q: add one (contract_test.go)", cmd, f.Name, class)
			}
		})
	}
}

// The kinds of bad value every flag of a kind has a row for, by the
// row's name, so that deleting one of them fails too.
var (
	numberClasses = []string{"wrong type"}
	inputClasses  = []string{"empty", "missing", "a directory"}
	outputClasses = []string{"empty", "missing directory", "a directory", "read-only", "/proc", "the same file as …"}
	// the flags that name files: read, or written
	inputFlags  = map[string]bool{"tasks": true, "each-line": true, "node-file": true, "simulate": true}
	outputFlags = map[string]bool{"output": true, "error": true, "report": true, "joblog": true, "svg": true, "html": true, "metrics-file": true}
)

// missingClasses are the classes of bad value flag f of cmd has no row
// for. A flag the command refuses whatever its value ("not for a study")
// needs no other.
func missingClasses(cmd string, f *pflag.Flag) []string {
	have := map[string]bool{}
	for _, r := range contract {
		if r.cmd == cmd && r.flag == f.Name {
			if strings.HasPrefix(r.bad, "the same file as ") || r.bad == "the command" {
				have["the same file as …"] = true
			}
			have[r.bad] = true
		}
	}
	if have["not for a study"] {
		return nil
	}
	var want []string
	switch {
	case f.Value.Type() == "int" || f.Value.Type() == "float64":
		want = numberClasses
	case inputFlags[f.Name] && f.Value.Type() == "string":
		want = inputClasses
	case (outputFlags[f.Name] || cmd == "scale" && f.Name == "json") && f.Value.Type() == "string":
		want = outputClasses
	}
	var missing []string
	for _, c := range want {
		if !have[c] {
			missing = append(missing, c)
		}
	}
	return missing
}

// helpCommands are the commands `gpulaunch --help` names, in its Usage
// lines (gpulaunch status|top …) and its Commands section, but version,
// which takes no flags.
func helpCommands(t *testing.T) []string {
	usage, after, ok := strings.Cut(topUsage(), "\nCommands:\n")
	if !ok {
		t.Fatal("gpulaunch --help has no Commands: section")
	}
	section, _, _ := strings.Cut(after, "\n\n")
	var cmds []string
	for _, line := range strings.Split(usage, "\n") {
		if _, rest, ok := strings.Cut(line, "  gpulaunch "); ok {
			word := strings.Trim(strings.Fields(rest)[0], "[]")
			cmds = append(cmds, strings.Split(word, "|")...)
		}
	}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") {
			cmds = append(cmds, strings.Fields(line)[0])
		}
	}
	cmds = slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(cmds, func(c string) bool { return c == "version" }))))
	if len(cmds) < 10 {
		t.Fatalf("read %d commands from gpulaunch --help: %v", len(cmds), cmds)
	}
	return cmds
}

// removedFlags are flags a command no longer has, which it must refuse
// as unknown rather than take.
var removedFlags = []contractRow{
	bad("exec", "json", "rank mode prints no JSON", "--node-file node.json --json -- ./app"),
}

func TestCLIContractRemovedFlags(t *testing.T) {
	ro := readOnlyDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range removedFlags {
		t.Run(r.cmd+"/"+r.flag, func(t *testing.T) {
			if commandFlagSets()[r.cmd].Lookup(r.flag) != nil {
				t.Fatalf("%s has --%s again: give it rows in contract", r.cmd, r.flag)
			}
			r.check(t, self, ro)
		})
	}
}

// TestCLIContract runs every row against a real gpulaunch process.
func TestCLIContract(t *testing.T) {
	ro := readOnlyDir(t)
	self, err := os.Executable() // the test binary is gpulaunch with GLTEST_MAIN=1
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range contract {
		if r.args == "" {
			continue
		}
		t.Run(r.cmd+"/"+r.flag+"/"+r.bad, func(t *testing.T) {
			t.Parallel()
			r.check(t, self, ro)
		})
	}
}

// check runs the row in a fresh fixture tree and asserts the contract.
func (r contractRow) check(t *testing.T, gpulaunch string, ro func(t *testing.T, dir string) error) {
	base := t.TempDir()
	tree := filepath.Join(base, "tree")
	mark := filepath.Join(base, "ran")
	makeFixtures(t, tree, mark, ro)
	before := hashTree(t, tree)
	// leading NAME=VALUE words are the environment's
	words, env := strings.Fields(r.args), contractEnv()
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		env, words = append(env, words[0]), words[1:]
	}
	args := append([]string{r.cmd}, words...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gpulaunch, args...)
	cmd.Dir = tree
	// a short TMPDIR of the row's own: a control socket's path fits, and
	// no other run is seen
	tmp, err := os.MkdirTemp("", "glc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	cmd.Env = append(env, "GLTEST_MAIN=1", "GLTEST_MARK="+mark, "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitStatus(cmd.Run())
	line := strings.TrimSuffix(stderr.String(), "\n")
	where := fmt.Sprintf("gpulaunch %s\nexit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr.String())
	if code != r.code {
		t.Errorf("exit %d, want %d\n%s", code, r.code, where)
	}
	if strings.Contains(line, "\n") || !strings.HasPrefix(line, "gpulaunch: error: ") {
		t.Errorf("want exactly one line `gpulaunch: error: …` on stderr\n%s", where)
	}
	if r.flag != "" && !namesFlag(line, r.cmd, r.flag) {
		t.Errorf("the error does not name --%s\n%s", r.flag, where)
	}
	if r.envVar != "" && !strings.Contains(line, r.envVar+"=") {
		t.Errorf("the error does not name %s\n%s", r.envVar, where)
	}
	if w := strings.Fields(r.args); r.flag == "" && r.envVar == "" && (!strings.Contains(line, r.cmd) || !strings.Contains(line, w[len(w)-1])) {
		t.Errorf("the error does not name %s and %q\n%s", r.cmd, w[len(w)-1], where)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("the app was started\n%s", where)
	}
	if after := hashTree(t, tree); !slices.Equal(before, after) {
		t.Errorf("the working directory changed:\nbefore %v\nafter  %v\n%s", before, after, where)
	}
	t.Logf("gpulaunch %s: %s", strings.Join(args, " "), line)
}

// namesFlag: the error line names the flag, long or short.
func namesFlag(line, cmd, flag string) bool {
	f := commandFlagSets()[cmd].Lookup(flag)
	if strings.Contains(line, "--"+flag) {
		return true
	}
	return f != nil && f.Shorthand != "" && strings.Contains(line, "-"+f.Shorthand)
}

// contractEnv is this process's environment without what would make a
// row depend on where the test runs: Slurm's and launchers' variables,
// gpulaunch's own.
func contractEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "SLURM_"), strings.HasPrefix(k, "OMPI_"), strings.HasPrefix(k, "PMI_"), strings.HasPrefix(k, "PMIX_"),
			strings.HasPrefix(k, "MPI_"), strings.HasPrefix(k, "GPULAUNCH_"), strings.HasPrefix(k, "GLTEST_"), k == "TMUX", k == "TMPDIR":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// makeFixtures writes the fixture tree; ro makes its ro/ read-only.
func makeFixtures(t *testing.T, tree, mark string, ro func(t *testing.T, dir string) error) {
	t.Helper()
	files := map[string]string{
		"app":            "#!/bin/sh\ntouch " + mark + "\n",
		"params.txt":     "1\n2\n",
		"tasks.txt":      "./app\n./app\n",
		"missing.txt":    "./app\n./nosuch\n",
		"assign.txt":     "VAR=1 ./app\n",
		"unclosed.txt":   "./app 'a\n",
		"continued.txt":  "./app \\\n",
		"bad.joblog":     "Seq\tHost\nnot a record\n",
		"node.json":      `{"name": "fake", "gpus": [{"pci": "0000:01:00.0", "numa": 0, "uuid": "GPU-00000000-0000-4000-8000-000000000000", "device": "/nonexistent/nvidia0"}]}`,
		"gh200node.json": `{"name": "gh200", "gpus": [{"pci": "0009:01:00.0", "numa": 4, "memory_numa": 4, "device": "/nonexistent/nvidia0"}]}`,
		"topo.json": `{"name": "topo", "cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 4, "threads_per_core": 1},
			"gpus": [{"pci": "0000:01:00.0", "numa": 0}, {"pci": "0000:02:00.0", "numa": 0}]}`,
		"cuda13.json": `{"name": "cuda13", "cuda_version": "13.1", "cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 4, "threads_per_core": 1},
			"gpus": [{"pci": "0000:01:00.0", "numa": 0, "compute_capability": "9.0"}]}`,
		"pascal.json": `{"name": "pascal", "cuda_version": "12.4", "cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 4, "threads_per_core": 1},
			"gpus": [{"pci": "0000:01:00.0", "numa": 0, "compute_capability": "6.0"}]}`,
		"run.json": fmt.Sprintf(`{"schema_version": %d, "plan": {}, "instances": [], "monitor_interval_seconds": 2}`, report.SchemaVersion),
	}
	for _, d := range []string{"dir", "ro"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files["ro/old.json"] = "{}" // writable, in ro/: a rename over it cannot be made
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tree, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(tree, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("params.txt", filepath.Join(tree, "link-to-params")); err != nil {
		t.Fatal(err)
	}
	if err := ro(t, filepath.Join(tree, "ro")); err != nil {
		t.Fatal(err)
	}
}

// readOnlyDir says how to make a directory nobody may write: 0555, or
// for root (whom modes do not stop) the immutable attribute, removed
// again when the test ends. Without either the read-only rows are skipped.
func readOnlyDir(t *testing.T) func(t *testing.T, dir string) error {
	if os.Getuid() != 0 {
		return func(t *testing.T, dir string) error {
			t.Cleanup(func() { os.Chmod(dir, 0o755) }) // so that TempDir can remove ro/old.json
			return os.Chmod(dir, 0o555)
		}
	}
	probe := t.TempDir()
	if err := setImmutable(probe, true); err != nil {
		t.Logf("read-only rows: root, and the immutable attribute cannot be set here (%v): ro/ is writable", err)
		return func(*testing.T, string) error { return nil }
	}
	setImmutable(probe, false)
	return func(t *testing.T, dir string) error {
		t.Cleanup(func() { setImmutable(dir, false) }) // before TempDir's removal
		return setImmutable(dir, true)
	}
}

// setImmutable sets or clears FS_IMMUTABLE_FL (chattr +i) on dir.
func setImmutable(dir string, on bool) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	const immutable = 0x10 // FS_IMMUTABLE_FL
	if on {
		flags |= immutable
	} else {
		flags &^= immutable
	}
	v := int(flags)
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, v)
}

// hashTree lists every entry under root: path, kind, size and content hash.
func hashTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		entry := fmt.Sprintf("%s %s %d", rel, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			entry += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		out = append(out, entry)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
