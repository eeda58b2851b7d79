package scaling

import "fmt"

// Choices are what a study was asked for, as its command line gave them
// (`gpulaunch scale`), for Check.
type Choices struct {
	// GPUs, Instances and PerGPU are -G's, -n's and --per-gpu's lists,
	// as given.
	GPUs, Instances, PerGPU string
	// MPS is --mps: a packing study's sizes under MPS too.
	MPS        bool
	DDP        bool
	Repeat     int
	Efficiency float64
	// Mean and Sum are --metric-mean and --metric-sum.
	Mean, Sum bool
	Command   []string
	// Given says whether the flag of that name was given.
	Given func(name string) bool
}

// NotForAStudy are run's flags that a study refuses: each is about one
// run, and the study's runs are many.
var NotForAStudy = []string{"tmux", "dry-run", "report", "ranks", "kill-on-bad-exit", "wait", "metrics-file", "metrics-listen"}

// Check refuses what a study cannot do, with the fix. The rules, in
// order:
//
//	C1. A command to study.
//	C2. The sizes by -G (one process on G GPUs), -n (N instances of
//	    one GPU each) or --per-gpu (K instances on every GPU), one of
//	    them.
//	C3. --ddp makes -n's instances one data-parallel job: not -G's,
//	    nor a packing study's, whose instances are independent.
//	C4. --repeat runs every size at least once.
//	C5. --efficiency is a share in (0, 1].
//	C6. --metric-mean and --metric-sum exclude each other.
//	C7. --metric-mean, --metric-sum, --unit and --lower-is-better are
//	    about --metric's figure: they need --metric.
//	C8. A run flag about one run (NotForAStudy) is refused.
//	C9. --mps is a packing study's second mode: it needs --per-gpu
//	    (-n N --mps would be one size of it; -G's one process shares
//	    nothing).
//	C10. A packing study's figure is the sum over its independent
//	    instances: --metric-mean, which reads instance 0 alone, is
//	    refused.
//	C11. --weak grows the work with the GPUs: a packing study's GPUs
//	    are the same at every size, and each instance does its own work.
func (c Choices) Check() error {
	given := 0
	for _, list := range []string{c.GPUs, c.Instances, c.PerGPU} {
		if list != "" {
			given++
		}
	}
	switch {
	case len(c.Command) == 0:
		return fmt.Errorf("no command to study: gpulaunch scale -G 1,2,4,8 -- COMMAND [ARGS…]")
	case given != 1:
		return fmt.Errorf("give the sizes with -G 1,2,4,8 (one process on G GPUs), -n 1,2,4,8 (N instances of one GPU each) or --per-gpu 1,2,4,8 (K instances on every GPU), one of them")
	case c.GPUs != "" && c.DDP:
		return fmt.Errorf("--ddp is for -n: N instances that form one data-parallel job; -G runs one process on G GPUs")
	case c.PerGPU != "" && c.DDP:
		return fmt.Errorf("--ddp is for -n: N instances that form one data-parallel job; --per-gpu packs independent instances onto the GPUs")
	case c.Repeat < 1:
		return fmt.Errorf("--repeat %d: run every size at least once", c.Repeat)
	case !(c.Efficiency > 0 && c.Efficiency <= 1): // NaN too
		return fmt.Errorf("--efficiency %g: give a share between 0 and 1, e.g. 0.6", c.Efficiency)
	case c.Mean && c.Sum:
		return fmt.Errorf("--metric-mean and --metric-sum exclude each other: the mean of instance 0's matches, or the sum of every instance's last")
	}
	for _, name := range []string{"metric-mean", "metric-sum", "unit", "lower-is-better"} {
		if c.Given(name) && !c.Given("metric") {
			return fmt.Errorf("--%s is about the figure --metric REGEX reads: give --metric", name)
		}
	}
	for _, name := range NotForAStudy {
		if c.Given(name) {
			return fmt.Errorf("--%s is not for a study: each size is one run, and gpulaunch scale reports them all; drop it (or run one size with `gpulaunch run --%s …`)", name, name)
		}
	}
	switch {
	case c.MPS && c.PerGPU == "":
		return fmt.Errorf("--mps is for a packing study: --per-gpu 1,2,4 --mps runs each size taking turns and under MPS, side by side (-n and -G study GPU counts, not how instances share one)")
	case c.PerGPU != "" && c.Given("weak"):
		return fmt.Errorf("--weak grows the work with the GPUs, and a packing study (--per-gpu) runs on the same GPUs at every size, each instance doing its own work: drop --weak")
	case c.PerGPU != "" && c.Mean:
		return fmt.Errorf("--metric-mean reads instance 0's figures alone, and a packing study's (--per-gpu) is the sum over its instances (each one's last match): drop --metric-mean")
	}
	return nil
}

// Axis is the count the sizes are of (C2).
func (c Choices) Axis() Axis {
	switch {
	case c.PerGPU != "":
		return ByPerGPU
	case c.Instances != "":
		return ByInstances
	}
	return ByGPUs
}

// List is the sizes' list, as given.
func (c Choices) List() string {
	switch {
	case c.PerGPU != "":
		return c.PerGPU
	case c.Instances != "":
		return c.Instances
	}
	return c.GPUs
}

// Modes are how a study's sizes share their GPUs: a packing study's take
// turns, and also run under MPS with --mps; other studies have no mode.
func (c Choices) Modes() []Mode {
	switch {
	case c.PerGPU == "":
		return []Mode{""}
	case c.MPS:
		return []Mode{Turns, MPS}
	}
	return []Mode{Turns}
}

// Of is how the figure is made of the matches (Metric's Of): "last",
// "mean" (--metric-mean) or "sum" (--metric-sum, and a packing study's:
// C10).
func (c Choices) Of() string {
	switch {
	case c.Sum, c.PerGPU != "":
		return "sum"
	case c.Mean:
		return "mean"
	}
	return "last"
}
