package study

import (
	"fmt"
	"testing"
)

// GPUBusy, by rule: a run's GPU% is how busy its GPUs were, the same
// load giving the same figure taking turns (each instance's own) and
// under MPS (each instance given its GPU's).
func TestGPUBusy(t *testing.T) {
	own := func(util float64, gpus ...string) InstanceUse {
		return InstanceUse{GPUs: gpus, Util: util, Source: "processes"}
	}
	its := func(util float64, gpus ...string) InstanceUse {
		return InstanceUse{GPUs: gpus, Util: util, Source: "gpu"}
	}
	for _, tc := range []struct {
		name  string
		insts []InstanceUse
		want  float64 // -1: not measured
	}{
		{"2: two taking turns at 30% each kept their GPU 60% busy", []InstanceUse{own(30, "A"), own(30, "A"), own(30, "B"), own(30, "B")}, 60},
		{"3: the same two under MPS, each given its GPU's 60", []InstanceUse{its(60, "A"), its(60, "A"), its(60, "B"), its(60, "B")}, 60},
		{"2: four at 30% each: at most 100", []InstanceUse{own(30, "A"), own(30, "A"), own(30, "A"), own(30, "A")}, 100},
		{"3: the GPU's figures over lifetimes that differ: their mean", []InstanceUse{its(58, "A"), its(62, "A")}, 60},
		{"3: an own figure beside the GPU's: the GPU's counts it already", []InstanceUse{own(30, "A"), its(70, "A")}, 70},
		{"1: an instance of two GPUs counts on each", []InstanceUse{own(40, "A", "B"), own(20, "B")}, 50},
		{"1: one instance per GPU: the instances' mean", []InstanceUse{own(90, "A"), own(50, "B"), its(10, "C")}, 50},
		{"1, 4: an instance not sampled counts on none", []InstanceUse{own(80, "A"), own(-1, "B")}, 80},
		{"4: nothing sampled", []InstanceUse{own(-1, "A"), its(-1, "B")}, -1},
		{"4: the mean over the GPUs, not the instances", []InstanceUse{own(20, "A"), own(20, "A"), own(20, "A"), own(80, "B")}, 70},
	} {
		got, ok := GPUBusy(tc.insts)
		if !ok {
			got = -1
		}
		if fmt.Sprintf("%.6g", got) != fmt.Sprintf("%.6g", tc.want) {
			t.Errorf("%s: GPUBusy = %v (measured %v), want %v", tc.name, got, ok, tc.want)
		}
	}
}
