package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
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

// rendezvous decides MASTER_ADDR/PORT for a launch whose node group is g
// and whose rank 0 is on this node when rank0 is set: nil without --ddp.
func (a *app) rendezvous(d ddpFlags, s binding.Slurm, g binding.NodeGroup, rank0 bool) (*binding.Rendezvous, error) {
	if !d.ddp {
		return nil, nil
	}
	rv, err := binding.NewRendezvous(a.env, s, g, d.masterAddr, d.masterPort, a.pid)
	if err != nil {
		return nil, usageError{err}
	}
	if rv.Port == 0 {
		// One node outside Slurm: any free port will do, nobody else
		// has to find it.
		if rv.Port, err = freePort(); err != nil {
			return nil, fmt.Errorf("--ddp: no free port for MASTER_PORT: %w", err)
		}
	} else if rank0 {
		if err := checkPortFree(rv, d.masterPort, s); err != nil {
			return nil, err
		}
	}
	return &rv, nil
}

// checkPortFree checks, on rank 0's node and before rank 0 binds it, the
// port gpulaunch chose (derived from the job) or was told (--master-port
// given: the port of rank 0, which is this node's, is a typo away from a
// taken one). An inherited MASTER_PORT is not checked: the launcher that
// set it may hold it for the job.
func checkPortFree(rv binding.Rendezvous, flagPort int, s binding.Slurm) error {
	if !rv.PortDerived && (flagPort == 0 || rv.Port != flagPort) {
		return nil
	}
	err := portFree(rv.Port)
	switch {
	case err == nil:
		return nil
	case rv.PortDerived:
		return usagef("--ddp: MASTER_PORT %d (derived from job %s, step %s) is taken on this node, where rank 0 runs (%v): give --master-port PORT or set MASTER_PORT; nothing was started",
			rv.Port, s.JobID, s.StepName(), err)
	}
	return usagef("--master-port %d is taken on this node, where rank 0 runs (%v): give another --master-port, or leave it out for one derived from the job; nothing was started",
		rv.Port, err)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree reports whether a TCP port can be bound on every address, as
// torch's TCPStore will bind it.
func portFree(port int) error {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return errors.New("address already in use")
		}
		return err
	}
	return l.Close()
}
