package binding

import "github.com/gpulaunch/gpulaunch/pkg/sched"

// Env is the process environment as a map (sched.Env): the name its
// callers across cmd/ and pkg/ use, kept while issue 35's other moves
// land; new code says sched.Env.
type Env = sched.Env
