package metrics

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/gpulaunch/gpulaunch/pkg/outputs"
)

// CheckFlags reads --metrics-file (file) and --metrics-listen (addr) as
// given (given says which flags were), before anything is looked up; the
// file itself is checked with the run's other outputs. The rules:
//  1. --metrics-file "" is refused: it names no file.
//  2. --metrics-listen is HOST:PORT …
//  3. … its port a number from 1 to 65535 …
//  4. … and its host given: an empty one would open the port on every
//     address of the node (0.0.0.0:PORT says so on purpose).
func CheckFlags(file, addr string, given func(flag string) bool) error {
	if given("metrics-file") && file == "" {
		return errors.New(`--metrics-file "": give the .prom file to write the run's metrics to (in node_exporter's textfile directory), or drop the flag`)
	}
	if !given("metrics-listen") {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--metrics-listen %q: %v: give HOST:PORT, e.g. 127.0.0.1:9464 (this node only) or the node's private address", addr, outputs.Pathless(err))
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("--metrics-listen %q: the port %q is not a number from 1 to 65535: give HOST:PORT, e.g. 127.0.0.1:9464", addr, port)
	}
	if host == "" {
		return fmt.Errorf("--metrics-listen %q: no host: the port would be open on every address of the node; give HOST:PORT, e.g. 127.0.0.1:9464 (this node only) or the node's private address (0.0.0.0:PORT for every address)", addr)
	}
	return nil
}

// Listen opens --metrics-listen's port (addr) before anything starts, so
// that an address in use is refused with nothing started; nil without
// one. A port in use is said so, with the likely cause.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err // "bind: …", without the address said already
	}
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("--metrics-listen %s: the port is in use (another gpulaunch on this node? each run needs its own port): give another port: nothing was started", addr)
	case err != nil:
		return nil, fmt.Errorf("--metrics-listen %s: %v: give an address of this node (127.0.0.1:PORT, or its private address): nothing was started", addr, outputs.Pathless(err))
	}
	return ln, nil
}
