package logging

import (
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New is the logger named gpulaunch that writes to w:
//
//  1. format is console (the message only, on one line: no time, caller
//     or fields, which are for json) or json (zap's production encoding);
//     any other is refused, with the two that are.
//  2. The level is level (the command's default), or debug with verbose.
func New(w io.Writer, format string, verbose bool, level zapcore.Level) (*zap.Logger, error) {
	if verbose {
		level = zap.DebugLevel
	}
	var enc zapcore.Encoder
	switch format {
	case "console":
		cfg := zap.NewDevelopmentEncoderConfig()
		cfg.TimeKey, cfg.CallerKey = "", ""
		cfg.ConsoleSeparator = " "
		enc = zapcore.NewConsoleEncoder(cfg)
	case "json":
		enc = zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	default:
		return nil, fmt.Errorf("--log-format %q: use console or json", format)
	}
	core := zapcore.NewCore(enc, zapcore.AddSync(w), level)
	if format == "console" {
		core = messageOnly{core}
	}
	return zap.New(core).Named("gpulaunch"), nil
}

// messageOnly drops structured fields from console logs: the message is
// already the human line, and the fields are for --log-format json.
type messageOnly struct{ zapcore.Core }

func (m messageOnly) With([]zapcore.Field) zapcore.Core { return m }

func (m messageOnly) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if m.Enabled(e.Level) {
		return ce.AddCore(e, m)
	}
	return ce
}

func (m messageOnly) Write(e zapcore.Entry, _ []zapcore.Field) error { return m.Core.Write(e, nil) }
