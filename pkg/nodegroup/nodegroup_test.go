package nodegroup

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// step is the environment srun gives task procid of a step over nodes.
func step(nodelist, tasksPerNode string, tasks, procid, nodeid, localid string) sched.Env {
	return sched.Env{
		"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "3", "SLURMD_NODENAME": "n" + nodeid,
		"SLURM_STEP_NODELIST": nodelist, "SLURM_STEP_TASKS_PER_NODE": tasksPerNode, "SLURM_STEP_NUM_TASKS": tasks,
		"SLURM_PROCID": procid, "SLURM_NODEID": nodeid, "SLURM_LOCALID": localid,
	}
}

func TestNodeGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    sched.Env
		n      int
		sameN  bool
		local  bool
		inst   int
		want   Ranks
		hosts  []string
		errHas string
	}{
		{name: "one node, no launcher", env: sched.Env{}, n: 4, sameN: true, inst: 3,
			want: Ranks{Rank: 3, WorldSize: 4, LocalRank: 3, LocalWorldSize: 4, GroupRank: 0, GroupWorldSize: 1}},
		{name: "batch step: SLURM_PROCID=0 of the batch step is not a launch over nodes",
			env: sched.Env{"SLURM_JOB_ID": "1", "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "a[1-2]"}, n: 2, sameN: true, inst: 1,
			want: Ranks{Rank: 1, WorldSize: 2, LocalRank: 1, LocalWorldSize: 2, GroupRank: 0, GroupWorldSize: 1}, hosts: []string{"a1", "a2"}},
		{name: "srun 2 nodes x 4, second node", env: step("node[1-2]", "1(x2)", "2", "1", "1", "0"), n: 4, sameN: true, inst: 2,
			want:  Ranks{Rank: 6, WorldSize: 8, LocalRank: 2, LocalWorldSize: 4, GroupRank: 1, GroupWorldSize: 2},
			hosts: []string{"node1", "node2"}},
		{name: "srun 8 nodes of two racks, node 5", env: step("rack[1-2]-node[01-04]", "1(x8)", "8", "5", "5", "0"), n: 2, sameN: true, inst: 1,
			want:  Ranks{Rank: 11, WorldSize: 16, LocalRank: 1, LocalWorldSize: 2, GroupRank: 5, GroupWorldSize: 8},
			hosts: []string{"rack1-node01", "rack1-node02", "rack1-node03", "rack1-node04", "rack2-node01", "rack2-node02", "rack2-node03", "rack2-node04"}},
		{name: "mpirun one per node outranks the leaked SLURM_PROCID",
			env: sched.Env{"SLURM_JOB_ID": "1", "SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "g[07-09]", "OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "3"},
			n:   4, sameN: true, inst: 0,
			want:  Ranks{Rank: 8, WorldSize: 12, LocalRank: 0, LocalWorldSize: 4, GroupRank: 2, GroupWorldSize: 3},
			hosts: []string{"g07", "g08", "g09"}},
		{name: "uneven GPUs per node, N from this node's GPUs: refused", env: step("node[1-2]", "1(x2)", "2", "0", "0", "0"), n: 6, sameN: false,
			errHas: "give -n 6"},
		{name: "srun -n 8 spread 7+1 is not one gpulaunch per node", env: step("node[1-2]", "7,1", "8", "7", "1", "0"), n: 4, sameN: true,
			errHas: "runs 7,1 tasks per node"},
		{name: "uneven with --ranks local: each node a world", env: step("node[1-2]", "1(x2)", "2", "1", "1", "0"), n: 2, sameN: false, local: true, inst: 1,
			want:  Ranks{Rank: 1, WorldSize: 2, LocalRank: 1, LocalWorldSize: 2, GroupRank: 0, GroupWorldSize: 1},
			hosts: []string{"node1", "node2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, warn := sched.Detect(tc.env)
			if len(warn) > 0 {
				t.Fatal(warn)
			}
			g, err := Find(tc.env, s, "thishost", tc.n, tc.sameN, tc.local)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error %v, want one with %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Ranks(tc.inst); got != tc.want {
				t.Errorf("instance %d: %+v, want %+v", tc.inst, got, tc.want)
			}
			if !reflect.DeepEqual(g.Hosts, tc.hosts) {
				t.Errorf("hosts %q, want %q", g.Hosts, tc.hosts)
			}
		})
	}
}

// Every rank of a layout exactly once: the property the rendezvous probe
// checks on the testbed, here over layouts the testbed cannot make.
func TestNodeGroupCoversEveryRankOnce(t *testing.T) {
	for _, layout := range []struct{ nodes, n int }{{1, 1}, {2, 4}, {3, 8}, {16, 2}} {
		seen := map[int]int{}
		for node := 0; node < layout.nodes; node++ {
			env := sched.Env{"OMPI_COMM_WORLD_RANK": strconv.Itoa(node), "OMPI_COMM_WORLD_SIZE": strconv.Itoa(layout.nodes)}
			g, err := Find(env, sched.Allocation{}, "h", layout.n, true, false)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < layout.n; i++ {
				r := g.Ranks(i)
				if r.WorldSize != layout.nodes*layout.n {
					t.Fatalf("%v: world size %d", layout, r.WorldSize)
				}
				seen[r.Rank]++
			}
		}
		for r := 0; r < layout.nodes*layout.n; r++ {
			if seen[r] != 1 {
				t.Errorf("%d nodes x %d: rank %d seen %d times", layout.nodes, layout.n, r, seen[r])
			}
		}
	}
}

func TestWrapperRanks(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  sched.Env
		want Ranks
	}{
		{name: "srun -n 8 on 2 nodes, even", env: step("node[1-2]", "4(x2)", "8", "5", "1", "1"),
			want: Ranks{Rank: 5, WorldSize: 8, LocalRank: 1, LocalWorldSize: 4, GroupRank: 1, GroupWorldSize: 2}},
		{name: "srun -n 6 on 2 nodes, uneven 4+2", env: step("node[1-2]", "4,2", "6", "5", "1", "1"),
			want: Ranks{Rank: 5, WorldSize: 6, LocalRank: 1, LocalWorldSize: 2, GroupRank: 1, GroupWorldSize: 2}},
		{name: "srun -n 5 on 3 nodes, uneven 2(x2),1", env: step("a[1-3]", "2(x2),1", "5", "4", "2", "0"),
			want: Ranks{Rank: 4, WorldSize: 5, LocalRank: 0, LocalWorldSize: 1, GroupRank: 2, GroupWorldSize: 3}},
		{name: "mpirun -np 8 on 2 nodes: the node index is not guessed",
			env:  sched.Env{"OMPI_COMM_WORLD_RANK": "6", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
			want: Ranks{Rank: 6, WorldSize: 8, LocalRank: 2, LocalWorldSize: 4, GroupRank: -1, GroupWorldSize: -1}},
		{name: "srun -n 4 on one node", env: step("n1", "4", "4", "2", "0", "2"),
			want: Ranks{Rank: 2, WorldSize: 4, LocalRank: 2, LocalWorldSize: 4, GroupRank: 0, GroupWorldSize: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := sched.Detect(tc.env)
			lr, ok, err := sched.DetectLocalRank(tc.env, s, binding.MaxInstances)
			if err != nil || !ok {
				t.Fatalf("local rank: %v %v", ok, err)
			}
			global, have, err := sched.DetectGlobalRank(tc.env, s)
			if err != nil {
				t.Fatal(err)
			}
			g := Wrapper(global, have, lr.Size, s, "h")
			if og, got, err := OfRank(tc.env, s, "h", lr.Size, lr.Rank); err != nil || got != tc.want || og.Rank != g.Rank || og.Size != g.Size {
				t.Errorf("OfRank: group %d of %d, %+v, %v; want %+v", og.Rank, og.Size, got, err, tc.want)
			}
			if got := WrapperRanks(global, have, lr.Rank, g); got != tc.want {
				t.Errorf("%+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNewRendezvous(t *testing.T) {
	twoNodes := step("node[1-2]", "1(x2)", "2", "1", "1", "0")
	group := func(env sched.Env) (sched.Allocation, NodeGroup) {
		s, _ := sched.Detect(env)
		g, err := Find(env, s, "h", 4, true, false)
		if err != nil {
			t.Fatal(err)
		}
		return s, g
	}
	s, g := group(twoNodes)
	rv, err := NewRendezvous(twoNodes, s, g, "", 0, 99)
	if err != nil {
		t.Fatal(err)
	}
	if rv.Addr != "node1" || !rv.PortDerived || rv.Port < 20000 || rv.Port >= 30000 || rv.RunID != "slurm-4242.3" {
		t.Errorf("two nodes: %+v, want node1, a derived port in 20000..29999, run id slurm-4242.3", rv)
	}
	// every node derives the same port without talking
	other := step("node[1-2]", "1(x2)", "2", "0", "0", "0")
	s0, g0 := group(other)
	if rv0, _ := NewRendezvous(other, s0, g0, "", 0, 7); rv0 != rv {
		t.Errorf("node 0 derived %+v, node 1 %+v", rv0, rv)
	}
	// another step of the job gets another port
	next := step("node[1-2]", "1(x2)", "2", "1", "1", "0")
	next["SLURM_STEP_ID"] = "4"
	s4, g4 := group(next)
	if rv4, _ := NewRendezvous(next, s4, g4, "", 0, 99); rv4.Port == rv.Port {
		t.Errorf("steps 3 and 4 of one job share port %d", rv.Port)
	}

	inherited := step("node[1-2]", "1(x2)", "2", "1", "1", "0")
	inherited["MASTER_ADDR"], inherited["MASTER_PORT"], inherited["TORCHELASTIC_RUN_ID"] = "10.0.0.1", "29500", "mine"
	si, gi := group(inherited)
	if rv, _ := NewRendezvous(inherited, si, gi, "", 0, 99); rv != (Rendezvous{Addr: "10.0.0.1", Port: 29500, RunID: "mine"}) {
		t.Errorf("inherited values: %+v", rv)
	}
	if rv, _ := NewRendezvous(inherited, si, gi, "ib-node1", 31000, 99); rv.Addr != "ib-node1" || rv.Port != 31000 {
		t.Errorf("flags must win over the environment: %+v", rv)
	}
	inherited["MASTER_PORT"] = "http"
	if _, err := NewRendezvous(inherited, si, gi, "", 0, 99); err == nil || !strings.Contains(err.Error(), "--master-port") {
		t.Errorf("MASTER_PORT=http: %v", err)
	}

	alone := sched.Env{}
	sa, ga := group(alone)
	if rv, _ := NewRendezvous(alone, sa, ga, "", 0, 99); rv.Addr != "127.0.0.1" || rv.Port != 0 || rv.RunID != "gpulaunch-h-99" {
		t.Errorf("one node outside Slurm: %+v, want 127.0.0.1, port 0 (the caller picks a free one)", rv)
	}
	mpi := sched.Env{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}
	sm, gm := group(mpi)
	if _, err := NewRendezvous(mpi, sm, gm, "", 0, 99); err == nil || !strings.Contains(err.Error(), "--master-addr") {
		t.Errorf("mpirun over nodes outside Slurm without --master-addr: %v", err)
	}
	if _, err := NewRendezvous(mpi, sm, gm, "n1", 0, 99); err == nil || !strings.Contains(err.Error(), "--master-port") {
		t.Errorf("mpirun over nodes outside Slurm without a port: %v", err)
	}
}

// Labels name the host only where instance numbers repeat: over nodes.
func TestLabelHost(t *testing.T) {
	if h := Local(2, "n1").LabelHost(); h != "" {
		t.Errorf("one node: label host %q, want none", h)
	}
	if h := (NodeGroup{Host: "n3", Rank: 1, Size: 2}).LabelHost(); h != "n3" {
		t.Errorf("two nodes: label host %q, want n3", h)
	}
}
