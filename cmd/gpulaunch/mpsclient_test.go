package main

import (
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/test/mpsstandin"
)

// The bed's mpsclient is a client of its instance's daemon: under --mps
// one instance's fault reaches its GPU's other instance (the stand-in
// plays the H200's fault: test/mpsstandin), where without MPS a client
// has a context of its own. What gpulaunch makes of it is issue 37's.
func TestMPSBedClientsShareTheirGPUsFault(t *testing.T) {
	const app = `if [ "$GPULAUNCH_INSTANCE" = 1 ]; then exec mpsclient fault 0s; fi; exec mpsclient run 1m`
	b := newMPSBed(t)
	cmd := b.cmd(t, []string{"MPSCLIENT_FAULT_CLIENTS=2"}, "-n", "2", "-O", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0", "--", "sh", "-c", app)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the run exited 0:\n%s", out)
	}
	for _, want := range []string{mpsstandin.ErrFault, mpsstandin.ErrSticky + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
