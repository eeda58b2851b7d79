package nodegroup

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// Rendezvous is where a distributed framework's processes meet:
// torch.distributed's env:// MASTER_ADDR and MASTER_PORT, and the
// TORCHELASTIC_RUN_ID that makes PyTorch Lightning and
// torch.distributed.is_torchelastic_launched() trust RANK and WORLD_SIZE
// instead of the SLURM_PROCID every instance inherits.
type Rendezvous struct {
	Addr  string `json:"master_addr"`
	Port  int    `json:"master_port"`
	RunID string `json:"run_id"`
	// PortDerived: Port came from the job and step ids, not from the user,
	// so the master node checks that it is free before anything starts.
	PortDerived bool `json:"port_derived,omitempty"`
}

// Rendezvous ports are derived into [rendezvousPortBase,
// rendezvousPortBase+rendezvousPorts): below Linux's ephemeral range
// (32768–60999), where outgoing connections would take them.
const (
	rendezvousPortBase = 20000
	rendezvousPorts    = 10000
)

// NewRendezvous decides the rendezvous of a launch (--ddp):
//
//  1. The address is --master-addr, else an inherited MASTER_ADDR, else
//     the first host of the node list (node 0 runs rank 0), else, on a
//     launch of one node, 127.0.0.1. A launch over nodes whose node list is
//     unknown (mpirun outside Slurm) needs --master-addr.
//  2. The port is --master-port, else an inherited MASTER_PORT, else
//     derived from the job id and the step id (the scheduler's LaunchKey:
//     Slurm's job.step, Flux's job), so that every node computes the same
//     one without talking, and two steps of one job on one node get
//     different ones (Lightning's 15000 + last four digits of the job id
//     collides there). Outside Slurm (or Flux) on one node, port is 0:
//     the caller picks a free one.
//  3. The run id is an inherited TORCHELASTIC_RUN_ID, else the scheduler
//     and its launch key ("slurm-JOB.STEP"), else gpulaunch's host and
//     pid.
func NewRendezvous(env sched.Env, s sched.Allocation, g NodeGroup, addr string, port int, pid int) (Rendezvous, error) {
	rv := Rendezvous{Addr: addr, Port: port}
	if rv.Addr == "" {
		rv.Addr = env["MASTER_ADDR"]
	}
	if rv.Addr == "" {
		switch {
		case len(g.Hosts) > 0 && g.MultiNode():
			rv.Addr = g.Hosts[0]
		case g.MultiNode():
			return Rendezvous{}, fmt.Errorf("--ddp: %d nodes, but no node list says which runs rank 0 (%s): give --master-addr HOST of rank 0's node", g.Size, g.Source)
		default:
			rv.Addr = "127.0.0.1"
		}
	}
	if rv.Port == 0 {
		if v, ok := env["MASTER_PORT"]; ok {
			p, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || p < 1 || p > 65535 {
				return Rendezvous{}, fmt.Errorf("--ddp: MASTER_PORT=%q is not a port: unset it or give --master-port", v)
			}
			rv.Port = p
		}
	}
	key := s.LaunchKey
	if rv.Port == 0 && key != "" {
		h := fnv.New32a()
		h.Write([]byte(key))
		rv.Port, rv.PortDerived = rendezvousPortBase+int(h.Sum32()%rendezvousPorts), true
	}
	if rv.Port == 0 && g.MultiNode() {
		return Rendezvous{}, fmt.Errorf("--ddp: %d nodes, and no Slurm step or Flux job names this launch (docs/schedulers.md): give --master-port so that every node uses the same one", g.Size)
	}
	rv.RunID = env["TORCHELASTIC_RUN_ID"]
	if rv.RunID == "" {
		if key != "" {
			rv.RunID = s.Scheduler + "-" + key
		} else {
			rv.RunID = fmt.Sprintf("gpulaunch-%s-%d", g.Host, pid)
		}
	}
	return rv, nil
}

// CheckPortFree checks, on rank 0's node and before rank 0 binds it, the
// port gpulaunch chose (derived from the job) or was told (--master-port
// given: the port of rank 0, which is this node's, is a typo away from a
// taken one). An inherited MASTER_PORT is not checked: the launcher that
// set it may hold it for the job. portFree is PortFree, but for tests.
func (rv Rendezvous) CheckPortFree(flagPort int, s sched.Allocation, portFree func(int) error) error {
	if !rv.PortDerived && (flagPort == 0 || rv.Port != flagPort) {
		return nil
	}
	err := portFree(rv.Port)
	switch {
	case err == nil:
		return nil
	case rv.PortDerived:
		return fmt.Errorf("--ddp: MASTER_PORT %d (derived from job %s, step %s) is taken on this node, where rank 0 runs (%v): give --master-port PORT or set MASTER_PORT; nothing was started",
			rv.Port, s.JobID, s.StepName(), err)
	}
	return fmt.Errorf("--master-port %d is taken on this node, where rank 0 runs (%v): give another --master-port, or leave it out for one derived from the job; nothing was started",
		rv.Port, err)
}

// Meet is the rendezvous of a launch on this node (NewRendezvous's
// rules), with its port made sure of; rank0: rank 0 runs on this node.
//
//  1. Without a port (one node outside a scheduler) any free port will
//     do: nobody else has to find it. Finding none is the machine's
//     failure, not the input's: the error is a NoFreePort.
//  2. With one, the node where rank 0 runs checks it is free before
//     anything starts (CheckPortFree); the other nodes cannot tell.
func Meet(env sched.Env, s sched.Allocation, g NodeGroup, addr string, port, pid int, rank0 bool) (Rendezvous, error) {
	rv, err := NewRendezvous(env, s, g, addr, port, pid)
	switch {
	case err != nil:
		return rv, err
	case rv.Port == 0:
		if rv.Port, err = FreePort(); err != nil {
			return rv, NoFreePort{err}
		}
	case rank0:
		err = rv.CheckPortFree(port, s, PortFree)
	}
	return rv, err
}

// NoFreePort is Meet's rule 1 failing: no port was free for MASTER_PORT.
type NoFreePort struct{ Err error }

func (e NoFreePort) Error() string { return "--ddp: no free port for MASTER_PORT: " + e.Err.Error() }

func (e NoFreePort) Unwrap() error { return e.Err }

// FreePort is a port the kernel has free now, for a launch of one node
// that nobody else has to find.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PortFree reports whether a TCP port can be bound on every address, as
// torch's TCPStore will bind it.
func PortFree(port int) error {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return errors.New("address already in use")
		}
		return err
	}
	return l.Close()
}
