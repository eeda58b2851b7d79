// Package privatedir is the rule for a directory that holds what only
// its user may reach — a running gpulaunch's control socket, a task
// queue's key: a real directory (not a symlink), owned by the user,
// that nobody else may enter. One planted in a shared directory by
// someone else must never receive the secret.
package privatedir
