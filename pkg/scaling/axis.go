package scaling

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
)

// Axis is what a study's sizes count, and what a size is as a run: the
// GPUs of one process (-G), instances of one GPU each (-n), or instances
// on every GPU of the allocation (--per-gpu: a packing study).
type Axis struct {
	// By is the study's JSON "by" (Study.By).
	By string
	// Flag is the flag the sizes come with, for messages: "-G", "-n",
	// "--per-gpu".
	Flag string
}

var (
	// ByGPUs is -G: one process on G GPUs.
	ByGPUs = Axis{By: "gpus", Flag: "-G"}
	// ByInstances is -n: N instances of one GPU each.
	ByInstances = Axis{By: "instances", Flag: "-n"}
	// ByPerGPU is --per-gpu: K instances on every GPU of the allocation,
	// taking turns on it, or under MPS.
	ByPerGPU = Axis{By: "per_gpu", Flag: "--per-gpu"}
)

// Mode is how a packing study's instances share their GPU: taking turns
// (time slicing, as --share-gpus), or as clients of one MPS daemon
// (--mps). Studies by -G and -n have no mode ("").
type Mode string

const (
	Turns Mode = "turns"
	MPS   Mode = "mps"
)

// Words is how the table and the verdict name a mode at k per GPU:
// "alone" for one per GPU, which shares nothing.
func (m Mode) Words(perGPU int) string {
	switch {
	case perGPU == 1:
		return "alone"
	case m == MPS:
		return "under MPS"
	}
	return "taking turns"
}

// Room is what an allocation offers a study's sizes (Fits): its GPUs,
// where they came from (for the message), and how the sizes may share
// them: -n's --share-gpus, --per-gpu's --mps.
type Room struct {
	GPUs      int
	Reason    string
	ShareGPUs bool
	MPS       bool
	// MPSLimit is the most clients each GPU's MPS serves, under MPS: the
	// least of the node's GPUs' (mps.NodeLimit, rules L1–L5).
	MPSLimit mps.Limit
}

// RunArgs is the run command line of one size: the run flags the study
// was given (runFlags, each --name=value), the size as -n and -G (a
// per-GPU size of k on gpus GPUs: k × gpus instances of one GPU taking
// turns, under MPS in mode MPS), the command.
func (x Axis) RunArgs(runFlags []string, size, gpus int, mode Mode, command []string) []string {
	args := append([]string{}, runFlags...)
	switch x {
	case ByPerGPU:
		args = append(args, "-n", strconv.Itoa(size*gpus), "-G", "1", "--share-gpus")
		if mode == MPS {
			args = append(args, "--mps")
		}
	case ByInstances:
		args = append(args, "-n", strconv.Itoa(size), "-G", "1")
	default:
		args = append(args, "-n", "1", "-G", strconv.Itoa(size))
	}
	return append(append(args, "--"), command...)
}

// Fits refuses a size the allocation cannot hold, before any size runs.
// The rules:
//
//	F1. A size up to the GPUs fits.
//	F2. Instances sharing GPUs (-n with --share-gpus) take turns, as
//	    `gpulaunch -n N --share-gpus` does: any count fits, on a node
//	    of some GPU.
//	F3. One process (-G) cannot have more GPUs than there are, sharing
//	    or not.
//	F4. Otherwise the fix is fewer, turns (-n), or more GPUs from Slurm.
//	F5. A packing study (--per-gpu) puts instances on GPUs: a node
//	    without one is refused.
//	F6. k per GPU on G GPUs is k × G instances: at most a node's
//	    (binding.MaxInstances).
//	F7. Under MPS, k is at most the clients one GPU's daemon serves
//	    (Room.MPSLimit: mps.ClientLimit's rule, the one a run's plan
//	    is refused by).
//	F8. Otherwise any k fits: each GPU's k instances take turns on it.
func (x Axis) Fits(size int, r Room) error {
	if x == ByPerGPU {
		return fitsPerGPU(size, r)
	}
	gpus := r.GPUs
	switch {
	case size <= gpus, x == ByInstances && r.ShareGPUs && gpus > 0:
		return nil
	case x != ByInstances && r.ShareGPUs:
		return fmt.Errorf("-G %d: one process on %d GPUs, and the allocation has %d (%s): --share-gpus lets instances take turns on GPUs, it cannot give one process more than there are; give sizes up to %d (or -n 1,2,4 --share-gpus to study instances sharing them); nothing was started",
			size, size, gpus, r.Reason, gpus)
	}
	fix := "give sizes up to %d, --share-gpus for instances that take turns on them, or ask Slurm for more GPUs"
	if x != ByInstances || gpus == 0 {
		fix = "give sizes up to %d, or ask Slurm for more GPUs"
	}
	return fmt.Errorf("%s %d: the allocation has %d GPU(s) (%s): "+fix+"; nothing was started", x.Flag, size, gpus, r.Reason, gpus)
}

// fitsPerGPU is Fits' rules F5–F8.
func fitsPerGPU(k int, r Room) error {
	switch {
	case r.GPUs == 0:
		return fmt.Errorf("--per-gpu: the allocation has no GPU (%s): a packing study puts instances on GPUs; run it where the job has GPUs (srun --gpus-per-node=1 …), or describe them with --node-file (docs/topology.md); nothing was started", r.Reason)
	case k*r.GPUs > binding.MaxInstances:
		return fmt.Errorf("--per-gpu %d: %d per GPU on %d GPUs is %d instances, and one node runs at most %d: give sizes up to %d; nothing was started",
			k, k, r.GPUs, k*r.GPUs, binding.MaxInstances, binding.MaxInstances/r.GPUs)
	case r.MPS && k > r.MPSLimit.Clients:
		fix := ""
		if r.MPSLimit.Connections > 0 {
			fix = ", or lower " + mps.MaxConnectionsEnv
		}
		return fmt.Errorf("--per-gpu %d --mps: MPS serves at most %d clients per GPU here (%s; NVIDIA's MPS documentation): give sizes up to %d, or drop --mps to study taking turns alone%s; nothing was started",
			k, r.MPSLimit.Clients, r.MPSLimit.Why, r.MPSLimit.Clients, fix)
	}
	return nil
}

// Refused is a size's run refused before anything started: its reason,
// naming the size once ("-n 16: …", not "-n 16: -n 16 …"), and the
// mode of a packing study's size under MPS ("--per-gpu 4 under MPS: …").
// A reason that says nothing was started is not told so twice.
func (x Axis) Refused(size int, mode Mode, err error) error {
	said := fmt.Sprintf("%s %d", x.Flag, size)
	if mode == MPS {
		said += " under MPS"
	}
	why := strings.TrimSuffix(strings.TrimSuffix(err.Error(), "; nothing was started"), ": nothing was started")
	if !strings.HasPrefix(why, said+" ") && !strings.HasPrefix(why, said+":") {
		why = said + ": " + why
	}
	return fmt.Errorf("%s: nothing was started", why)
}
