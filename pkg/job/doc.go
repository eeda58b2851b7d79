// Package job is the vocabulary every rule of a run speaks: what a slot
// runs (a Job: an instance's command or a queue's Task), how it ended
// (Exit, Ended), and a mode's answer to that (Verdict, Then, Note), with a
// finished task's Record. It holds data and no rule, touches no process,
// clock or file, and builds on every system, so that the supervisor
// (pkg/launcher) and the task queue (pkg/taskqueue) share it without
// importing each other's rules.
package job
