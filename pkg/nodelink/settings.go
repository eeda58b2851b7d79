package nodelink

import (
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// Settings are what a queue over several nodes needs beyond one node's,
// read alike on every node.
type Settings struct {
	// Run is the run's id, the same on every node (sched.QueueRunID).
	Run string
	// KeyDir is the key files' directory (KeyDir).
	KeyDir string
	// Group is the nodes per relay's group (Groups): the holder's
	// choice, which the others read in its key file.
	Group int
	// JoinWait is how long another node waits for the holder.
	JoinWait time.Duration
}

// ReadSettings reads a queue's Settings from the environment of a launch
// over nodes nodes, told by source (sched.QueueRunID). The rules, in
// order, each refused on every node, the holder too (the step gives each
// the same environment, so all stop alike):
//  1. The run's id: GPULAUNCH_RUN_ID, else the launch's (sched.QueueRunID).
//  2. The key directory: GPULAUNCH_KEY_DIR, else $HOME/.gpulaunch (KeyDir).
//  3. The nodes per relay's group: GPULAUNCH_NODE_GROUP (ParseGroupSize).
//  4. The wait for the holder: GPULAUNCH_JOIN_WAIT (JoinWait).
func ReadSettings(env sched.Env, source string, nodes int) (Settings, error) {
	run, err := sched.QueueRunID(env, source)
	if err != nil {
		return Settings{}, err
	}
	dir, err := KeyDir(env)
	if err != nil {
		return Settings{}, err
	}
	group, err := ParseGroupSize(env["GPULAUNCH_NODE_GROUP"], nodes)
	if err != nil {
		return Settings{}, err
	}
	wait, err := JoinWait(env["GPULAUNCH_JOIN_WAIT"])
	if err != nil {
		return Settings{}, err
	}
	return Settings{Run: run, KeyDir: dir, Group: group, JoinWait: wait}, nil
}
