package nodegroup

import (
	"errors"
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
