// Package instance is what one instance is told, in rank mode (gpulaunch
// exec) and in a run alike: its environment (ranks, its GPUs under the
// vendor's visible-devices variable as its gpuvendor value writes it, the
// instance contract of the README and which variables are its own: IsContract)
// and the file names its patterns expand to (pattern.go: srun's file
// patterns, the one home of -o, -e, --report's and --metrics-file's); under --ddp, where a rank
// reports its exception (TORCHELASTIC_ERROR_FILE) and how that report
// reads. Pure — it reads the plan's slot and writes strings, touching no
// process or file — but for errordir.go: the run's directory of the
// ranks' error files, made and removed, and a failed rank's file read.
package instance
