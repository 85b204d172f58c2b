package config_test

import (
	"strings"
	"testing"

	"agentgw/config"
)

// TestLogAndMetrics: [log] format and [metrics] listen, their defaults
// (text, no listener) and the errors that name them.
func TestLogAndMetrics(t *testing.T) {
	cfg, err := config.Load(write(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LogFormat != "text" || cfg.MetricsListen != "" {
		t.Errorf("defaults: format %q, metrics %q", cfg.LogFormat, cfg.MetricsListen)
	}
	cfg, err = config.Load(write(t, minimal+"[log]\nformat = \"json\"\n[metrics]\nlisten = \"127.0.0.1:9464\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LogFormat != "json" || cfg.MetricsListen != "127.0.0.1:9464" {
		t.Errorf("set: format %q, metrics %q", cfg.LogFormat, cfg.MetricsListen)
	}
	for body, want := range map[string]string{
		minimal + "[log]\nformat = \"xml\"\n":       "log.format: must be",
		minimal + "[metrics]\nlisten = \"9464\"\n":  "metrics.listen: must be host:port",
		minimal + "[metrics]\nport = 9464\n":        "metrics.port: unknown key",
		minimal + "[metrics]\nlisten = \"host:\"\n": "metrics.listen: must be host:port",
	} {
		_, err := config.Load(write(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", body[len(minimal):], err, want)
		}
	}
}
