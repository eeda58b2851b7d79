package scaling

import (
	"fmt"
	"strconv"
	"strings"
)

// Axis is what a study's sizes count, and what a size is as a run: the
// GPUs of one process (-G), or instances of one GPU each (-n). A study
// by another count (instances per GPU) is another Axis.
type Axis struct {
	// By is the study's JSON "by" (Study.By).
	By string
	// Flag is the flag the sizes come with, for messages: "-G", "-n".
	Flag string
}

var (
	// ByGPUs is -G: one process on G GPUs.
	ByGPUs = Axis{By: "gpus", Flag: "-G"}
	// ByInstances is -n: N instances of one GPU each.
	ByInstances = Axis{By: "instances", Flag: "-n"}
)

// RunArgs is the run command line of one size: the run flags the study
// was given (runFlags, each --name=value), the size as -n and -G, the
// command.
func (x Axis) RunArgs(runFlags []string, size int, command []string) []string {
	args := append([]string{}, runFlags...)
	if x == ByInstances {
		args = append(args, "-n", strconv.Itoa(size), "-G", "1")
	} else {
		args = append(args, "-n", "1", "-G", strconv.Itoa(size))
	}
	return append(append(args, "--"), command...)
}

// Fits refuses a size the allocation's gpus GPUs cannot hold, before any
// size runs (reason: where the GPUs came from, for the message). The
// rules:
//
//	F1. A size up to the GPUs fits.
//	F2. Instances sharing GPUs (-n with --share-gpus) take turns, as
//	    `gpulaunch -n N --share-gpus` does: any count fits, on a node
//	    of some GPU.
//	F3. One process (-G) cannot have more GPUs than there are, sharing
//	    or not.
//	F4. Otherwise the fix is fewer, turns (-n), or more GPUs from Slurm.
func (x Axis) Fits(size, gpus int, reason string, shareGPUs bool) error {
	switch {
	case size <= gpus, x == ByInstances && shareGPUs && gpus > 0:
		return nil
	case x != ByInstances && shareGPUs:
		return fmt.Errorf("-G %d: one process on %d GPUs, and the allocation has %d (%s): --share-gpus lets instances take turns on GPUs, it cannot give one process more than there are; give sizes up to %d (or -n 1,2,4 --share-gpus to study instances sharing them); nothing was started",
			size, size, gpus, reason, gpus)
	}
	fix := "give sizes up to %d, --share-gpus for instances that take turns on them, or ask Slurm for more GPUs"
	if x != ByInstances || gpus == 0 {
		fix = "give sizes up to %d, or ask Slurm for more GPUs"
	}
	return fmt.Errorf("%s %d: the allocation has %d GPU(s) (%s): "+fix+"; nothing was started", x.Flag, size, gpus, reason, gpus)
}

// Refused is a size's run refused before anything started: its reason,
// naming the size once ("-n 16: …", not "-n 16: -n 16 …").
func (x Axis) Refused(size int, err error) error {
	if said := fmt.Sprintf("%s %d", x.Flag, size); !strings.HasPrefix(err.Error(), said+" ") && !strings.HasPrefix(err.Error(), said+":") {
		return fmt.Errorf("%s: %v: nothing was started", said, err)
	}
	return fmt.Errorf("%v: nothing was started", err)
}
