// Package fate is the fate the instances of a GPU shared under NVIDIA
// MPS share (issue 37): one client's fatal fault makes the GPU's server
// set a sticky error on every client, and the server serves again only
// once every client has exited. Machine is the per-GPU state machine —
// a fault's phases, its cause, the GPU's restarts together, the roles
// its instances had — as a decorator of the launcher's run mode
// (launcher's fateMode adapts it). It holds no process, clock or lock,
// and takes what the server's log said of each exit as a fact
// (job.ServerFault, mps.FaultOf), so its rules are tested by table
// (launcher's TestFateSequence and TestFateQueue, through the adapter
// over the real instance and queue modes, whose answers they read).
package fate
