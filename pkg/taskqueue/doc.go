// Package taskqueue is a task queue's rules, GNU parallel's where it has
// them: which task a slot runs next, its tries, --halt, the exit status
// (queue.go, halt.go); the joblog and --resume (joblog.go, resume.go —
// SkipDone, the warning of changed records —, and the lock that keeps a
// second gpulaunch off it: joblock_linux.go, on pkg/filelock); the
// queue's flags as given (choices.go: Choices.Check, --colsep's Colsep)
// and its input read (input.go: ReadInput); which
// input lines are tasks and what each becomes (lines.go); a task
// completed for its slot, {%} and its -o/-e files (files.go: Slots, a
// value the caller hands over once); the replacement strings and the
// shell words of a task line (replace.go, words.go); and a queue over
// several nodes — the holder's rules
// (nodes.go), another node's (feed.go) and the messages between them
// (NodeMessage; carried by pkg/nodelink). The rules are pure: a
// Queue or a Feed is told of an exit (job.Exit) and answers with a
// job.Verdict that the supervisor (pkg/launcher) carries out; nothing here
// starts a process, reads a clock or opens a socket; the input file is
// read, and only the joblog's file is written.
package taskqueue
