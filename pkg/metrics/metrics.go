package metrics

import (
	"bytes"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
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
	// Utilization is the GPU's busy share, 0 to 1; negative: the driver
	// does not tell (a MIG device).
	Utilization float64
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
)

var (
	runLabels      = []string{LabelJob, LabelStep, LabelHost}
	instanceLabels = append(append([]string{}, runLabels...), LabelInstance, LabelRank)
	gpuLabels      = append(append([]string{}, instanceLabels...), LabelGPU)
)

// Collector exposes the snapshot read gives at each collect: it keeps no
// copy of the run's state, so a scrape sees what `gpulaunch status` would.
type Collector struct {
	read   func() Snapshot
	states []string // every state an instance may be in, for the state enum
	descs  descs
}

type descs struct {
	state, cpu, rss, restarts, task         *prometheus.Desc
	gpu, gpuUtil, gpuMem                    *prometheus.Desc
	finished                                *prometheus.Desc
	tasks, tasksDone, tasksFailed, tasksRun *prometheus.Desc
	tasksLeft                               *prometheus.Desc
}

// NewCollector reads the run through read; states are every value an
// instance's State may take, each exposed as a series of the state enum
// (1 for the current one, 0 for the others).
func NewCollector(read func() Snapshot, states []string) *Collector {
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc("gpulaunch_"+name, help, labels, nil)
	}
	return &Collector{read: read, states: states, descs: descs{
		state:       d("instance_state", "1 for the instance's current state, 0 for the others.", append(append([]string{}, instanceLabels...), LabelState)),
		cpu:         d("instance_cpu_seconds_total", "CPU time (user and system) of the instance's process trees, every process it ran so far.", instanceLabels),
		rss:         d("instance_resident_memory_bytes", "Resident memory of the instance's process tree at the last sample.", instanceLabels),
		restarts:    d("instance_restarts_total", "How often the instance was restarted (--restarts, a --ddp group's restarts).", instanceLabels),
		task:        d("instance_task_info", "1 for the task a queue slot runs now (join on host and gpulaunch_instance for a task's series).", append(append([]string{}, instanceLabels...), LabelTask)),
		gpu:         d("instance_gpu_info", "1 for each GPU of the instance: the join key with DCGM's and jobstats' series.", gpuLabels),
		gpuUtil:     d("instance_gpu_utilization_ratio", "Utilisation of the instance's GPU at the last sample, 0 to 1 (the GPU's, whoever uses it).", gpuLabels),
		gpuMem:      d("instance_gpu_memory_used_bytes", "GPU memory the instance's processes hold on the GPU at the last sample.", gpuLabels),
		finished:    d("run_finished", "1 once the run has ended: the states are the final ones.", runLabels),
		tasks:       d("queue_tasks", "Tasks in the queue's input.", runLabels),
		tasksDone:   d("queue_tasks_done_total", "Tasks finished, succeeded or failed after their tries.", runLabels),
		tasksFailed: d("queue_tasks_failed_total", "Tasks that failed after their tries.", runLabels),
		tasksRun:    d("queue_tasks_running", "Tasks running now.", runLabels),
		tasksLeft:   d("queue_tasks_left", "Tasks not finished yet: waiting or running.", runLabels),
	}}
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	d := c.descs
	for _, x := range []*prometheus.Desc{d.state, d.cpu, d.rss, d.restarts, d.task, d.gpu, d.gpuUtil, d.gpuMem,
		d.finished, d.tasks, d.tasksDone, d.tasksFailed, d.tasksRun, d.tasksLeft} {
		ch <- x
	}
}

// Collect reads the run once and sends its series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.read()
	run := []string{s.Job, s.Step, s.Host}
	ch <- prometheus.MustNewConstMetric(c.descs.finished, prometheus.GaugeValue, boolValue(s.Finished), run...)
	for _, inst := range s.Instances {
		c.collectInstance(ch, inst, run, s.Queue != nil)
	}
	if q := s.Queue; q != nil {
		d := c.descs
		ch <- prometheus.MustNewConstMetric(d.tasks, prometheus.GaugeValue, float64(q.Total), run...)
		ch <- prometheus.MustNewConstMetric(d.tasksDone, prometheus.CounterValue, float64(q.Done), run...)
		ch <- prometheus.MustNewConstMetric(d.tasksFailed, prometheus.CounterValue, float64(q.Failed), run...)
		ch <- prometheus.MustNewConstMetric(d.tasksRun, prometheus.GaugeValue, float64(q.Running), run...)
		ch <- prometheus.MustNewConstMetric(d.tasksLeft, prometheus.GaugeValue, float64(q.Left), run...)
	}
}

// collectInstance sends one instance's series; queue: it is a queue's
// slot, whose retries are no counter.
func (c *Collector) collectInstance(ch chan<- prometheus.Metric, inst Instance, run []string, queue bool) {
	d := c.descs
	labels := append(append([]string{}, run...), strconv.Itoa(inst.Index), strconv.Itoa(inst.Rank))
	for _, st := range c.states {
		ch <- prometheus.MustNewConstMetric(d.state, prometheus.GaugeValue, boolValue(st == inst.State), append(labels, st)...)
	}
	ch <- prometheus.MustNewConstMetric(d.cpu, prometheus.CounterValue, inst.CPUSeconds, labels...)
	ch <- prometheus.MustNewConstMetric(d.rss, prometheus.GaugeValue, float64(inst.RSS), labels...)
	if !queue {
		ch <- prometheus.MustNewConstMetric(d.restarts, prometheus.CounterValue, float64(inst.Restarts), labels...)
	}
	if inst.Task > 0 {
		ch <- prometheus.MustNewConstMetric(d.task, prometheus.GaugeValue, 1, append(labels, strconv.Itoa(inst.Task))...)
	}
	for _, g := range inst.GPUs {
		gl := append(append([]string{}, labels...), g.UUID)
		ch <- prometheus.MustNewConstMetric(d.gpu, prometheus.GaugeValue, 1, gl...)
		if !g.Sampled {
			continue
		}
		if g.Utilization >= 0 {
			ch <- prometheus.MustNewConstMetric(d.gpuUtil, prometheus.GaugeValue, g.Utilization, gl...)
		}
		ch <- prometheus.MustNewConstMetric(d.gpuMem, prometheus.GaugeValue, float64(g.MemoryBytes), gl...)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// NewRegistry is a run's own registry holding only its collector: no Go
// runtime or process metrics, which node_exporter's textfile collector
// would refuse as duplicates of its own.
func NewRegistry(c *Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg
}

// Text is g's series in Prometheus's text format, what node_exporter's
// textfile collector reads.
func Text(g prometheus.Gatherer) ([]byte, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}
