package config

import "log/slog"

// logLevels is the one table of [log] level names, for the gateway's file
// and the MCP face's alike: what Load accepts and the slog.Level each
// name means.
var logLevels = []struct {
	name  string
	level slog.Level
}{
	{"debug", slog.LevelDebug},
	{"info", slog.LevelInfo},
	{"warn", slog.LevelWarn},
	{"error", slog.LevelError},
}

// LogLevel returns the slog.Level of a [log] level name, and whether the
// name is one Load accepts.
func LogLevel(name string) (slog.Level, bool) {
	for _, l := range logLevels {
		if l.name == name {
			return l.level, true
		}
	}
	return slog.LevelInfo, false
}

// checkLogLevel reports a log.level that is not in the table.
func checkLogLevel(name string, p *problems) {
	if _, ok := LogLevel(name); !ok {
		p.bad("log.level", "must be one of debug, info, warn, error")
	}
}
