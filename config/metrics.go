package config

import "net"

// MetricsFile is the [metrics] table as written: the optional Prometheus
// listener.
type MetricsFile struct {
	Listen string `toml:"listen"`
}

// Metrics is the validated [metrics] table.
type Metrics struct {
	// MetricsListen is the host:port of the Prometheus text-format
	// listener; empty (the default) starts none.
	MetricsListen string
}

func (m MetricsFile) build(p *problems) Metrics {
	if m.Listen == "" {
		return Metrics{}
	}
	if _, port, err := net.SplitHostPort(m.Listen); err != nil || port == "" {
		p.bad("metrics.listen", "must be host:port, such as \"127.0.0.1:9464\"")
		return Metrics{}
	}
	return Metrics{MetricsListen: m.Listen}
}
