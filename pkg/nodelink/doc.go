// Package nodelink carries a task queue's messages between the nodes of a
// queue over several nodes (taskqueue.NodeLink): TLS 1.3 over the step's
// own network, between the holder (node 0, which keeps the queue) and
// every other node's gpulaunch.
//
// Who may take part (docs/tasks.md, "Several nodes: the threat model"):
// only processes that can read the run's key file, a 0600 file in a 0700
// directory of the user's, on a filesystem every node shares ($HOME, or
// GPULAUNCH_KEY_DIR). The holder writes it before it listens; it holds
//   - the holder's address,
//   - the SHA-256 of the holder's certificate, made for this run: a node
//     checks it before it says anything, so a process that took the
//     port first (another user's) learns nothing and can send nothing;
//   - a random token a node must show before it is given any task or may
//     report any result: without the file, nothing is given and nothing
//     changes.
//
// Every message is inside TLS, so task lines and results are neither
// readable nor changeable on the network.
//
// It may touch the network and the key file; what the messages mean is
// pkg/taskqueue's (nodes.go, feed.go), which never sees a socket.
// peers.go is this node's side of the link as a run holds it (Peers:
// closed as the holder, a relay that first waits for its group and
// answers INT, TERM and QUIT while it does, or another node), how often
// the holder sends its counts (StatusEvery), and the warnings of the
// link's hooks; settings.go reads what a queue over several nodes needs
// from the environment, alike on every node (ReadSettings).
package nodelink
