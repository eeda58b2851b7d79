package main

import (
	"errors"

	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
	"github.com/spf13/pflag"
)

// ddpFlags are the flags of a distributed launch, in run and rank mode.
type ddpFlags struct {
	ddp        bool
	masterAddr string
	masterPort int
}

func (d *ddpFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&d.ddp, "ddp", false, "set MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RUN_ID for torch.distributed (env://), Lightning, Accelerate")
	fs.StringVar(&d.masterAddr, "master-addr", "", "--ddp: rank 0's host (default: MASTER_ADDR, else the first node of the step); a task queue over several nodes: the name node 0 is reached by")
	fs.IntVar(&d.masterPort, "master-port", 0, "--ddp: the rendezvous port (default: MASTER_PORT, else derived from the job and step ids); a task queue over several nodes: node 0's port")
}

// check refuses --master-* without --ddp or a task queue (whose nodes
// meet at node 0 too), and ports out of range.
func (d ddpFlags) check(fs *pflag.FlagSet, queue bool) error {
	if !d.ddp && !queue {
		for _, name := range []string{"master-addr", "master-port"} {
			if fs.Changed(name) {
				return usagef("--%s only means something with --ddp (which sets MASTER_ADDR and MASTER_PORT) or a task queue over several nodes: add --ddp", name)
			}
		}
		return nil
	}
	if fs.Changed("master-port") && (d.masterPort < 1 || d.masterPort > 65535) {
		return usagef("--master-port %d: a port is 1..65535", d.masterPort)
	}
	if fs.Changed("master-addr") && d.masterAddr == "" {
		return usagef("--master-addr: give rank 0's host name or address")
	}
	return nil
}

// rendezvous is MASTER_ADDR/PORT (nodegroup.Meet) for a launch whose node
// group is g and whose rank 0 is on this node when rank0 is set, seen
// from the environment env of the gpulaunch with pid: nil without --ddp.
// No free port is the machine's failure (exit 1), the rest bad input.
func (d ddpFlags) rendezvous(env sched.Env, pid int, s sched.Allocation, g nodegroup.NodeGroup, rank0 bool) (*nodegroup.Rendezvous, error) {
	if !d.ddp {
		return nil, nil
	}
	rv, err := nodegroup.Meet(env, s, g, d.masterAddr, d.masterPort, pid, rank0)
	if err != nil && !errors.As(err, new(nodegroup.NoFreePort)) {
		err = usageError{err}
	}
	if err != nil {
		return nil, err
	}
	return &rv, nil
}
