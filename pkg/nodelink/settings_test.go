package nodelink

import (
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

func TestReadSettings(t *testing.T) {
	base := sched.Env{"GPULAUNCH_RUN_ID": "r1", "HOME": "/home/u"}
	with := func(k, v string) sched.Env {
		env := sched.Env{}
		for key, val := range base {
			env[key] = val
		}
		env[k] = v
		return env
	}
	for _, tc := range []struct {
		rule string
		env  sched.Env
		want Settings
		err  string
	}{
		{"1 the run's id as given, the defaults", base, Settings{Run: "r1", KeyDir: "/home/u/.gpulaunch", Group: 0, JoinWait: DefaultJoinWait}, ""},
		{"1 no id for the launch", with("GPULAUNCH_RUN_ID", ""), Settings{}, "needs a name for this launch that every node shares"},
		{"2 a relative key directory", with("GPULAUNCH_KEY_DIR", "keys"), Settings{}, "GPULAUNCH_KEY_DIR=keys: give an absolute path"},
		{"3 a group size", with("GPULAUNCH_NODE_GROUP", "2"), Settings{Run: "r1", KeyDir: "/home/u/.gpulaunch", Group: 2, JoinWait: DefaultJoinWait}, ""},
		{"4 a wait", with("GPULAUNCH_JOIN_WAIT", "10m"), Settings{Run: "r1", KeyDir: "/home/u/.gpulaunch", Group: 0, JoinWait: 10 * time.Minute}, ""},
		{"4 a wait that is no duration", with("GPULAUNCH_JOIN_WAIT", "soon"), Settings{}, "GPULAUNCH_JOIN_WAIT=soon"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			got, err := ReadSettings(tc.env, "", 4)
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ReadSettings: %v, want %q", err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("ReadSettings = %+v, want %+v", got, tc.want)
			}
		})
	}
}
