package metrics

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Snapshot is a run's live state at one moment, as the collector reads it.
type Snapshot struct {
	// Job, Step and Host say where the run is: the Slurm job and step
	// ("" outside Slurm: Prometheus reads an empty label as none) and the
	// node's name.
	Job, Step, Host string
	// Finished: the run has ended; the states are the final ones.
	Finished  bool
	Instances []Instance
	// Queue is a task queue's counts; nil in a run of N instances.
	Queue *Queue
}

// Instance is one instance, or one slot of a task queue.
type Instance struct {
	Index, Rank int
	State       string
	// Task is the task a queue slot runs now; 0: none.
	Task int
	// CPUSeconds is the CPU time of every process the slot ran, so far.
	CPUSeconds float64
	RSS        uint64 // of its process tree at the last sample
	// Restarts counts an instance's restarts (a queue slot's are its
	// task's retries, which start again at each task: not exposed).
	Restarts int
	GPUs     []GPU // its GPUs, each once, measured or not
}

// GPU is one of an instance's GPUs and its last sample.
type GPU struct {
	UUID string
	// Sampled: a sample of this GPU was taken; without one only the
	// GPU's ownership is exposed.
	Sampled bool
	// Utilization is the instance's own use of the GPU, 0 to 1, and
	// Source where it comes from (telemetry.InstanceUtil): its processes'
	// SM share ("processes") or the GPU's busy share ("gpu"); negative
	// and "": not measured (a MIG device).
	Utilization float64
	Source      string
	// DeviceUtilization is the GPU's busy share, 0 to 1, whoever used it;
	// negative: the driver does not tell (a MIG device).
	DeviceUtilization float64
	// MemoryBytes is the GPU memory of the instance's processes on it.
	MemoryBytes uint64
}

// Queue is a task queue's counts.
type Queue struct {
	Total   int // tasks in the input (a --resume's skipped ones included)
	Done    int // finished, succeeded or failed (after their tries)
	Failed  int
	Running int
	Left    int // not finished yet: waiting or running
}

// Label names. job and instance are Prometheus's own target labels (the
// scrape config's job, the target's address), which a scrape renames to
// exported_job and exported_instance in a series that has its own: the
// run's are named slurm_job and gpulaunch_instance instead.
const (
	LabelJob      = "slurm_job"
	LabelStep     = "slurm_step"
	LabelHost     = "host"
	LabelInstance = "gpulaunch_instance"
	LabelRank     = "rank"
	LabelTask     = "task"
	LabelGPU      = "gpu_uuid"
	LabelState    = "state"
	// LabelUtilSource is where an instance's GPU utilisation comes from:
	// "processes" or "gpu" (the report's gpu_util_source).
	LabelUtilSource = "gpu_util_source"
)

// Metric types, as the text format's TYPE line names them.
const (
	Gauge   = "gauge"
	Counter = "counter"
)

// Family is one metric: its name, help, type and series.
type Family struct {
	Name, Help, Type string
	Samples          []Sample
}

// Sample is one series: its labels, sorted by name, and its value.
type Sample struct {
	Labels []Label
	Value  float64
}

// Label is one label of a series.
type Label struct{ Name, Value string }

// metric is one of the run's metrics and the labels its series carry
// besides the run's (job, step, host).
type metric struct {
	name, help, typ string
	labels          []string
}

var (
	instanceLabels = []string{LabelInstance, LabelRank}
	gpuLabels      = []string{LabelInstance, LabelRank, LabelGPU}

	mState       = metric{"gpulaunch_instance_state", "1 for the instance's current state, 0 for the others.", Gauge, []string{LabelInstance, LabelRank, LabelState}}
	mCPU         = metric{"gpulaunch_instance_cpu_seconds_total", "CPU time (user and system) of the instance's process trees, every process it ran so far.", Counter, instanceLabels}
	mRSS         = metric{"gpulaunch_instance_resident_memory_bytes", "Resident memory of the instance's process tree at the last sample.", Gauge, instanceLabels}
	mRestarts    = metric{"gpulaunch_instance_restarts_total", "How often the instance was restarted (--restarts, a --ddp group's restarts).", Counter, instanceLabels}
	mTask        = metric{"gpulaunch_instance_task_info", "1 for the task a queue slot runs now (join on host and gpulaunch_instance for a task's series).", Gauge, []string{LabelInstance, LabelRank, LabelTask}}
	mGPU         = metric{"gpulaunch_instance_gpu_info", "1 for each GPU of the instance: the join key with DCGM's and jobstats' series.", Gauge, gpuLabels}
	mGPUUtil     = metric{"gpulaunch_instance_gpu_utilization_ratio", "The instance's own use of the GPU at the last sample, 0 to 1: its processes' SM share (gpu_util_source=processes), or the GPU's where the driver cannot tell processes apart (gpu_util_source=gpu: MPS, MIG, AMD, Intel).", Gauge, []string{LabelInstance, LabelRank, LabelGPU, LabelUtilSource}}
	mDevUtil     = metric{"gpulaunch_gpu_utilization_ratio", "Utilisation of the GPU at the last sample, 0 to 1, whoever used it (one series per GPU of the run's instances).", Gauge, []string{LabelGPU}}
	mGPUMem      = metric{"gpulaunch_instance_gpu_memory_used_bytes", "GPU memory the instance's processes hold on the GPU at the last sample.", Gauge, gpuLabels}
	mFinished    = metric{"gpulaunch_run_finished", "1 once the run has ended: the states are the final ones.", Gauge, nil}
	mTasks       = metric{"gpulaunch_queue_tasks", "Tasks in the queue's input.", Gauge, nil}
	mTasksDone   = metric{"gpulaunch_queue_tasks_done_total", "Tasks finished, succeeded or failed after their tries.", Counter, nil}
	mTasksFailed = metric{"gpulaunch_queue_tasks_failed_total", "Tasks that failed after their tries.", Counter, nil}
	mTasksRun    = metric{"gpulaunch_queue_tasks_running", "Tasks running now.", Gauge, nil}
	mTasksLeft   = metric{"gpulaunch_queue_tasks_left", "Tasks not finished yet: waiting or running.", Gauge, nil}
)

// Series is the run's exposition at snapshot s; states are every value an
// instance's State may take, each a series of the state enum (1 for the
// current one, 0 for the others). The rules, in order:
//  1. Every series carries the run's labels (slurm_job, slurm_step, host;
//     empty outside Slurm, which Prometheus reads as none), an
//     instance's its index and rank, a GPU's its UUID.
//  2. A queue's slot has no restarts counter (its retries start again at
//     each task); an unsampled GPU only its gpu_info; a utilisation the
//     driver does not tell (a MIG device) no series. An instance's
//     utilisation is its own, labelled with its source; the GPU's own
//     (gpulaunch_gpu_utilization_ratio) is one series per GPU however
//     many instances share it, from the first instance that sampled it.
//  3. Labels are sorted by name, the series of a metric by their label
//     values in that order, the metrics by name; a metric without series
//     is left out. This is client_golang's order: the text is what its
//     registry wrote, without its start-up cost (bench-start.sh).
func Series(s Snapshot, states []string) []Family {
	b := builder{run: []string{s.Job, s.Step, s.Host}, fams: map[string]*Family{}, devices: map[string]bool{}}
	b.add(mFinished, boolValue(s.Finished))
	for _, inst := range s.Instances {
		b.addInstance(inst, states, s.Queue != nil)
	}
	if q := s.Queue; q != nil {
		b.add(mTasks, float64(q.Total))
		b.add(mTasksDone, float64(q.Done))
		b.add(mTasksFailed, float64(q.Failed))
		b.add(mTasksRun, float64(q.Running))
		b.add(mTasksLeft, float64(q.Left))
	}
	return b.sorted()
}

// builder gathers series into families by metric (rule 1 adds the run's
// labels to each).
type builder struct {
	run     []string
	fams    map[string]*Family
	devices map[string]bool // GPUs whose own utilisation has its series
}

// addInstance adds one instance's series (rule 2); queue: it is a
// queue's slot.
func (b *builder) addInstance(inst Instance, states []string, queue bool) {
	idx, rank := strconv.Itoa(inst.Index), strconv.Itoa(inst.Rank)
	for _, st := range states {
		b.add(mState, boolValue(st == inst.State), idx, rank, st)
	}
	b.add(mCPU, inst.CPUSeconds, idx, rank)
	b.add(mRSS, float64(inst.RSS), idx, rank)
	if !queue {
		b.add(mRestarts, float64(inst.Restarts), idx, rank)
	}
	if inst.Task > 0 {
		b.add(mTask, 1, idx, rank, strconv.Itoa(inst.Task))
	}
	for _, g := range inst.GPUs {
		b.add(mGPU, 1, idx, rank, g.UUID)
		if !g.Sampled {
			continue
		}
		if g.Utilization >= 0 {
			b.add(mGPUUtil, g.Utilization, idx, rank, g.UUID, g.Source)
		}
		if g.DeviceUtilization >= 0 && !b.devices[g.UUID] {
			b.devices[g.UUID] = true
			b.add(mDevUtil, g.DeviceUtilization, g.UUID)
		}
		b.add(mGPUMem, float64(g.MemoryBytes), idx, rank, g.UUID)
	}
}

// add is one series of m: values are those of m's labels, after the
// run's.
func (b *builder) add(m metric, v float64, values ...string) {
	f := b.fams[m.name]
	if f == nil {
		f = &Family{Name: m.name, Help: m.help, Type: m.typ}
		b.fams[m.name] = f
	}
	names := append([]string{LabelJob, LabelStep, LabelHost}, m.labels...)
	values = append(append([]string{}, b.run...), values...)
	labels := make([]Label, len(names))
	for i := range names {
		labels[i] = Label{names[i], values[i]}
	}
	slices.SortFunc(labels, func(x, y Label) int { return strings.Compare(x.Name, y.Name) })
	f.Samples = append(f.Samples, Sample{Labels: labels, Value: v})
}

// sorted is the families in rule 3's order.
func (b *builder) sorted() []Family {
	fams := make([]Family, 0, len(b.fams))
	for _, f := range b.fams {
		slices.SortStableFunc(f.Samples, compareLabelValues)
		fams = append(fams, *f)
	}
	slices.SortFunc(fams, func(x, y Family) int { return strings.Compare(x.Name, y.Name) })
	return fams
}

// compareLabelValues orders two series of one metric by their label
// values, label by label (their names are the same).
func compareLabelValues(x, y Sample) int {
	for i := range min(len(x.Labels), len(y.Labels)) {
		if c := strings.Compare(x.Labels[i].Value, y.Labels[i].Value); c != 0 {
			return c
		}
	}
	return len(x.Labels) - len(y.Labels)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// WriteText writes fams in Prometheus's text exposition format 0.0.4
// (prometheus.io/docs/instrumenting/exposition_formats), what
// node_exporter's textfile collector reads and /metrics serves.
func WriteText(w io.Writer, fams []Family) error {
	var b bytes.Buffer
	for _, f := range fams {
		if len(f.Samples) == 0 {
			continue
		}
		b.WriteString("# HELP " + f.Name + " " + helpEscaper.Replace(f.Help) + "\n")
		b.WriteString("# TYPE " + f.Name + " " + f.Type + "\n")
		for _, s := range f.Samples {
			b.WriteString(f.Name)
			for i, l := range s.Labels {
				sep := byte(',')
				if i == 0 {
					sep = '{'
				}
				b.WriteByte(sep)
				b.WriteString(l.Name + `="` + valueEscaper.Replace(l.Value) + `"`)
			}
			if len(s.Labels) > 0 {
				b.WriteByte('}')
			}
			b.WriteByte(' ')
			b.WriteString(formatValue(s.Value))
			b.WriteByte('\n')
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// The format's escapes: a HELP text escapes backslash and newline, a
// label value the double quote too.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatValue is a sample value as Go's shortest form writes it, with the
// format's names for infinities and NaN.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Collector is a run's exposition, read from the run at every collect: it
// keeps no copy of the run's state, so a scrape sees what `gpulaunch
// status` would.
type Collector struct {
	read   func() Snapshot
	states []string // every state an instance may be in, for the state enum
}

// NewCollector reads the run through read; states are every value an
// instance's State may take (Series).
func NewCollector(read func() Snapshot, states []string) *Collector {
	return &Collector{read: read, states: states}
}

// Collect reads the run once and is its series.
func (c *Collector) Collect() []Family { return Series(c.read(), c.states) }

// Text is the run's series now in the text format, what the
// --metrics-file holds.
func (c *Collector) Text() []byte {
	var b bytes.Buffer
	_ = WriteText(&b, c.Collect()) // a bytes.Buffer does not fail
	return b.Bytes()
}

// ContentType is the text format's media type, as node_exporter serves it.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// ServeHTTP serves the run's series in the text format (/metrics). Every
// Prometheus scrapes it: the protocol buffer and OpenMetrics formats it
// may ask for first are optional for a target.
func (c *Collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", ContentType)
	_, _ = w.Write(c.Text())
}
