package logging

import (
	"strings"
	"testing"

	"go.uber.org/zap"
)

// New's rules: the two formats, the refusal of any other, and -v's level.
func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		verbose      bool
		want         string // what a debug and a warning with a field write
		wantErr      string
	}{
		{"1: console is the message only", "console", false, "WARN gpulaunch careful\n", ""},
		{"1: json keeps the fields", "json", false, `"msg":"careful","slot":3`, ""},
		{"1: another format is refused", "xml", false, "", `--log-format "xml": use console or json`},
		{"2: -v adds debug", "console", true, "DEBUG gpulaunch detail\nWARN gpulaunch careful\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			log, err := New(&b, tc.format, tc.verbose, zap.WarnLevel)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("detail", zap.Int("slot", 3))
			log.Warn("careful", zap.Int("slot", 3))
			if got := b.String(); !strings.Contains(got, tc.want) || (tc.format == "console" && got != tc.want) {
				t.Fatalf("wrote %q, want %q", got, tc.want)
			}
		})
	}
}
