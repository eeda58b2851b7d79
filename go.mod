module github.com/gpulaunch/gpulaunch

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.4-0
	github.com/spf13/pflag v1.0.10
	go.uber.org/zap v1.28.0
	golang.org/x/sync v0.24.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)
