package nodelink

import (
	"fmt"
	"math"
	"strconv"
)

// Groups is the tree of a queue over many nodes: the other nodes
// (1..Nodes-1) in groups of Size, each behind a relay that joins the
// holder for its whole group. Size 0: no tree, every node joins the
// holder. The holder decides it (HolderConfig.Group) and writes it in its
// key file, so that every node reads the same tree.
//
// Why a tree (docs/architecture.md, "Scale"): one holder spends a TLS
// handshake, two goroutines, and a TLS record and a write(2) per task on
// every node it links to. 10,000 nodes took ~19 s of its CPU to join and
// held it to ~19,000 tasks/s on this project's 2-CPU machine. Behind 100
// relays, the holder shakes 100 hands, its garbage collector scans 200
// goroutines, and the messages of a group share a relay's records and
// writes; each relay links to ~100 nodes, a load that one gpulaunch
// carries many times over (the 1,000-node row of scripts/bench-holder.sh).
//
// The rules, in order:
//  1. Up to DirectNodes other nodes join the holder itself: no tree.
//  2. Over that, groups of ⌈√(Nodes-1)⌉ nodes (100 for 10,000 other
//     nodes), so that the holder and every relay link to about as many;
//     GPULAUNCH_NODE_GROUP sets another size (0: no tree).
//  3. A group is consecutive ranks; its first node is its relay, which
//     runs tasks on its own slots too.
//  4. A node of a group joins its relay as it would join the holder (the
//     relay's key file, beside the holder's, names the relay's address,
//     certificate and token); the relay speaks for it to the holder, which
//     keeps every node's account as if it had joined directly (the same
//     ledger rules, the same joblog hosts, the same losses named).
//  5. A relay lost is its group lost: the holder hands out again what
//     every node of the group held, and the group's nodes, cut off from
//     the holder, end non-zero, as a node does whose holder is lost.
type Groups struct {
	Nodes int // the launch's nodes, the holder included
	Size  int // nodes per group; 0: no tree
}

// DirectNodes is the most other nodes that join the holder itself (rule
// 1): at 1,000 nodes joined directly the holder took 28,700–34,100 tasks/s
// and all joined in ~2 s (scripts/bench-holder.sh), but below a few
// hundred a tree would only add a hop and a group's worth to lose.
const DirectNodes = 256

// GroupSize is rule 2's size for a launch of nodes nodes: 0 up to
// DirectNodes others.
func GroupSize(nodes int) int {
	others := nodes - 1
	if others <= DirectNodes {
		return 0
	}
	return int(math.Ceil(math.Sqrt(float64(others))))
}

// ParseGroupSize reads GPULAUNCH_NODE_GROUP (rule 2): "" is GroupSize's
// choice, 0 no tree, G groups of G.
func ParseGroupSize(value string, nodes int) (int, error) {
	if value == "" {
		return GroupSize(nodes), nil
	}
	g, err := strconv.Atoi(value)
	if err != nil || g < 0 || g == 1 {
		return 0, fmt.Errorf("GPULAUNCH_NODE_GROUP=%s: give the nodes per relay's group, 2 or more, or 0 for none (every node joins node 0)", value)
	}
	return g, nil
}

// On: the other nodes join through relays.
func (g Groups) On() bool { return g.Size > 1 && g.Nodes > 2 }

// RelayOf is the relay of node's group (rule 3); node itself for a relay,
// and 0 (the holder) without a tree.
func (g Groups) RelayOf(node int) int {
	if !g.On() || node < 1 {
		return 0
	}
	return 1 + (node-1)/g.Size*g.Size
}

// IsRelay: node is the first of its group (rule 3).
func (g Groups) IsRelay(node int) bool { return g.On() && node >= 1 && g.RelayOf(node) == node }

// Members are the nodes a relay speaks for, itself left out: first..last
// (first > last when it has none).
func (g Groups) Members(relay int) (first, last int) {
	return relay + 1, min(relay+g.Size-1, g.Nodes-1)
}

// groupRun names a relay's group, for its key file and its nodes' hello.
func groupRun(run string, relay int) string { return run + ".relay-" + strconv.Itoa(relay) }

// RelayKeyPath is the key file of relay's group, beside the holder's.
func RelayKeyPath(dir, run string, relay int) string { return KeyPath(dir, groupRun(run, relay)) }
