package config

import (
	"errors"
	"net"
	"os"
	"time"

	"agentgw/internal/loopback"

	"mellium.im/xmpp/jid"
)

// ComponentFile is the [component] table as written: the XEP-0114
// connection.
type ComponentFile struct {
	Domain            string `toml:"domain"`
	Server            string `toml:"server"`
	Secret            string `toml:"secret"`
	SecretFile        string `toml:"secret_file"`
	TLS               bool   `toml:"tls"`
	TLSServerName     string `toml:"tls_server_name"`
	TLSCAFile         string `toml:"tls_ca_file"`
	InsecurePlaintext bool   `toml:"insecure_plaintext"`
	PingInterval      string `toml:"ping_interval"`
	PingTimeout       string `toml:"ping_timeout"`
	ReconnectMax      string `toml:"reconnect_max"`
}

func componentDefaults() ComponentFile {
	return ComponentFile{PingInterval: "60s", PingTimeout: "15s", ReconnectMax: "60s"}
}

// Component is the validated [component] table, the component stream.
// Its fields are those of gateway.Stream, which app makes from it by a
// conversion: a key the gateway needs is added to both.
type Component struct {
	Domain            jid.JID
	Server            string
	Secret            []byte
	TLS               bool
	TLSServerName     string
	TLSCAFile         string
	InsecurePlaintext bool
	PingInterval      time.Duration
	PingTimeout       time.Duration
	ReconnectMax      time.Duration
}

// build validates the table. secretFile is component.secret_file,
// resolved, when the secret was read from it.
func (comp ComponentFile) build(dir string, p *problems) (c Component, secretFile string) {
	if comp.Domain == "" {
		p.bad("component.domain", "required")
	} else if d, err := jid.Parse(comp.Domain); err != nil || d.Localpart() != "" || d.Resourcepart() != "" {
		p.bad("component.domain", "must be a domain JID such as agents.example.org")
	} else {
		c.Domain = d
	}
	host, _, err := net.SplitHostPort(comp.Server)
	switch {
	case comp.Server == "":
		p.bad("component.server", "required (host:port of the XMPP server's component port)")
	case err != nil:
		p.bad("component.server", "must be host:port")
	default:
		c.Server = comp.Server
		if !comp.TLS && !loopback.Host(host) && !comp.InsecurePlaintext {
			p.bad("component.server", "%s is not a loopback address: set component.tls = true (direct TLS with certificate verification), or component.insecure_plaintext = true to send the secret in the clear", host)
		}
	}
	c.TLS = comp.TLS
	c.TLSServerName = comp.TLSServerName
	c.InsecurePlaintext = comp.InsecurePlaintext
	if comp.TLSCAFile != "" {
		c.TLSCAFile = resolve(dir, comp.TLSCAFile)
		if !comp.TLS {
			p.bad("component.tls_ca_file", "set, but component.tls is false")
		} else if _, err := os.Stat(c.TLSCAFile); err != nil {
			p.bad("component.tls_ca_file", "cannot read: %v", errors.Unwrap(err))
		}
	}
	switch {
	case comp.Secret != "" && comp.SecretFile != "":
		p.bad("component.secret", "set only one of component.secret and component.secret_file")
	case comp.Secret != "":
		c.Secret = []byte(comp.Secret)
	case comp.SecretFile != "":
		secretFile = resolve(dir, comp.SecretFile)
		sec, err := readComponentSecret(secretFile)
		if err != nil {
			p.bad("component.secret_file", "%v", err)
		} else {
			c.Secret = sec
		}
	default:
		p.bad("component.secret", "required (or component.secret_file)")
	}
	c.PingInterval = duration(comp.PingInterval, "component.ping_interval", p)
	c.PingTimeout = duration(comp.PingTimeout, "component.ping_timeout", p)
	c.ReconnectMax = duration(comp.ReconnectMax, "component.reconnect_max", p)
	return c, secretFile
}
