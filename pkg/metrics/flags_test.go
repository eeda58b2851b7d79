package metrics

import (
	"net"
	"strings"
	"testing"
)

func TestCheckFlags(t *testing.T) {
	both := func(string) bool { return true }
	for _, tc := range []struct {
		rule, file, addr, err string
	}{
		{"1 an empty file", "", "127.0.0.1:9464", `--metrics-file "": give the .prom file`},
		{"2 not HOST:PORT", "m.prom", "9464", `--metrics-listen "9464": address 9464: missing port in address: give HOST:PORT`},
		{"3 a port out of range", "m.prom", "127.0.0.1:0", `the port "0" is not a number from 1 to 65535`},
		{"3 a port that is no number", "m.prom", "127.0.0.1:http", `the port "http" is not a number`},
		{"4 no host", "m.prom", ":9464", "no host: the port would be open on every address"},
		{"4 every address on purpose", "m.prom", "0.0.0.0:9464", ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			err := CheckFlags(tc.file, tc.addr, both)
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("CheckFlags(%q, %q) = %v, want %q", tc.file, tc.addr, err, tc.err)
			}
		})
	}
}

func TestListenPortInUse(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr).String()
	if _, err := Listen(addr); err == nil || !strings.Contains(err.Error(), "the port is in use (another gpulaunch on this node?") {
		t.Fatalf("Listen(%s) again = %v", addr, err)
	}
	if ln, err := Listen(""); ln != nil || err != nil {
		t.Fatalf(`Listen("") = %v, %v: want none`, ln, err)
	}
}
