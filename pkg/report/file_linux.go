package report

import (
	"fmt"
	"path/filepath"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
)

// FileFor is where this node writes the --report pattern, checked before
// anything starts; "" without one.
//
//  1. The pattern expands to Path.
//  2. Its directory must be one this process can write a file in.
func FileFor(pattern string, names instance.Names, multiNode bool) (string, error) {
	if pattern == "" {
		return "", nil
	}
	file, err := Path(pattern, names, multiNode)
	if err != nil {
		return "", err
	}
	if err := outputs.WritableDir(filepath.Dir(file)); err != nil {
		return "", fmt.Errorf("--report %s: %v: nothing was started", pattern, err)
	}
	return file, nil
}

// Path expands the --report pattern (%N host, %n node index, as for -o).
// Over several nodes every node writes its own report: a path that names
// no node gets ".<host>" before its extension, so that the nodes do not
// overwrite each other's on a shared filesystem.
func Path(pattern string, names instance.Names, multiNode bool) (string, error) {
	return instance.NodePath("--report", pattern, names, multiNode)
}
