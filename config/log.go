package config

import "log/slog"

// LogFile is the [log] table as written.
type LogFile struct {
	Level    string `toml:"level"`
	Format   string `toml:"format"`
	DebugXML bool   `toml:"debug_xml"`
}

func logDefaults() LogFile { return LogFile{Level: "info", Format: "text"} }

// Log is the validated [log] table, for `agentgw serve` and `agentgw mcp`
// alike.
type Log struct {
	LogLevel string
	// LogFormat is "text" or "json" (log/slog's handlers).
	LogFormat string
	// DebugXML traces the component stream's XML.
	DebugXML bool
}

// logLevels is the one table of [log] level names: what Load accepts and
// the slog.Level each name means.
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

func (l LogFile) build(p *problems) Log {
	if _, ok := LogLevel(l.Level); !ok {
		p.bad("log.level", "must be one of debug, info, warn, error")
	}
	out := Log{LogLevel: l.Level, DebugXML: l.DebugXML}
	switch l.Format {
	case "text", "json":
		out.LogFormat = l.Format
	default:
		p.bad("log.format", "must be \"text\" or \"json\"")
	}
	return out
}
