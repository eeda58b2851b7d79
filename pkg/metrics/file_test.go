package metrics

import (
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
)

// Over several nodes each node writes its own metrics file, whose name
// still ends in .prom (the textfile collector reads no other).
func TestMetricsFilePerNode(t *testing.T) {
	names := instance.Names{JobID: "7", Host: "n2", NodeIndex: 1}
	for pattern, want := range map[string]string{
		"gpulaunch.prom":    "gpulaunch.n2.prom",
		"gpulaunch-%j.prom": "gpulaunch-7.n2.prom",
		"d/%N-%j.prom":      "d/n2-7.prom",
		"d/%n.prom":         "d/1.prom",
	} {
		got, err := FileName(pattern, names, true)
		if err != nil || got != want || outputs.PromName(got) != nil {
			t.Errorf("%q: %q %v, want %q", pattern, got, err, want)
		}
	}
	if got, _ := FileName("gpulaunch-%j.prom", names, false); got != "gpulaunch-7.prom" {
		t.Errorf("one node: %q", got)
	}
}
