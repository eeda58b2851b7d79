// Package runstatus is a running supervisor's live state as its readers
// see it: the rows that `gpulaunch status` and `top` show, the control
// socket serves and the metrics export (launcher's Board writes them).
package runstatus
