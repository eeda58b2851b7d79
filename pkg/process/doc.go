//go:build linux

// Package process is the Linux mechanics of starting and following
// processes, and nothing of what they mean: a thread per slot bound to
// its CPUs and memory policy that forks from there (Thread), follows the
// child on its pidfd and copies its output (Stream, LineMux, Ring,
// OutputFiles), gpulaunch as the subreaper of what the children leave
// behind (Reaper), /proc read in one pass (ProcTable), rank mode's
// bind-and-execve (Exec), and COMMAND looked up as a shell does, with its
// 126/127 (LookPath). It may touch processes, threads, pipes and
// /proc; it holds no rule of a run (that is pkg/launcher's).
package process
