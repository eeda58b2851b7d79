package nodegroup

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// CheckPortFree checks a derived port and a --master-port, never an
// inherited MASTER_PORT.
func TestCheckPortFree(t *testing.T) {
	job, _ := sched.Detect(sched.Env{"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "2"})
	taken := func(int) error { return errors.New("address already in use") }
	free := func(int) error { return nil }
	for _, tc := range []struct {
		name     string
		rv       Rendezvous
		flagPort int
		portFree func(int) error
		want     string // "" for no error
	}{
		{"rule: a derived port taken names the job and step", Rendezvous{Port: 21000, PortDerived: true}, 0, taken, "MASTER_PORT 21000 (derived from job 7, step 2) is taken"},
		{"rule: --master-port taken", Rendezvous{Port: 29500}, 29500, taken, "--master-port 29500 is taken"},
		{"rule: an inherited MASTER_PORT is not checked", Rendezvous{Port: 29500}, 0, taken, ""},
		{"rule: a free port passes", Rendezvous{Port: 21000, PortDerived: true}, 0, free, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rv.CheckPortFree(tc.flagPort, job, tc.portFree)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// Meet's rules: a free port where nobody else has to find it, and the
// check of a given port only where rank 0 runs.
func TestMeet(t *testing.T) {
	taken, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Skip("no TCP here:", err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	one := Local(1, "n1")
	t.Run("1: no port on one node: a free one", func(t *testing.T) {
		rv, err := Meet(sched.Env{}, sched.Allocation{}, one, "", 0, 42, true)
		if err != nil || rv.Port == 0 {
			t.Fatalf("port %d, %v; want a free port", rv.Port, err)
		}
	})
	t.Run("2: a taken --master-port where rank 0 runs: refused", func(t *testing.T) {
		_, err := Meet(sched.Env{}, sched.Allocation{}, one, "", port, 42, true)
		if err == nil || !strings.Contains(err.Error(), "is taken on this node") || errors.As(err, new(NoFreePort)) {
			t.Fatalf("error %v, want the taken port named as bad input", err)
		}
	})
	t.Run("2: another node does not check it", func(t *testing.T) {
		if rv, err := Meet(sched.Env{}, sched.Allocation{}, one, "", port, 42, false); err != nil || rv.Port != port {
			t.Fatalf("port %d, %v; want %d unchecked", rv.Port, err, port)
		}
	})
}
