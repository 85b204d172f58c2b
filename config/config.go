// Package config loads agentgw's TOML configuration in two stages, after
// soju: strict decoding over Defaults (an unknown key is an error), then
// Validate, which builds typed values and reports every problem with the key
// it concerns ("policy.visibility[1].principals[0]: invalid JID").
//
// Secrets are read here but never appear in an error: problems with the
// component secret name the key, not the value, and TOML decoding errors are
// reported by line and key without echoing the offending line.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"agentgw/policy"

	"github.com/pelletier/go-toml/v2"
	"mellium.im/xmpp/jid"
)

// Limits and defaults documented in config.example.toml.
const (
	// MaxPage is the protocol page cap for directory listing and search:
	// larger RSM max values are clamped to page_max, which may not exceed it.
	MaxPage = 100
	// DefaultReplaySeconds is the advertised request_replay_seconds.
	DefaultReplaySeconds = 86400
	// maxSecretBytes bounds a secret file.
	maxSecretBytes = 4096
)

// File is the TOML document as written by the operator.
type File struct {
	Component Component `toml:"component"`
	Gateway   Gateway   `toml:"gateway"`
	Database  Database  `toml:"database"`
	Log       Log       `toml:"log"`
	Policy    Policy    `toml:"policy"`
}

// Component is the [component] table: the XEP-0114 connection.
type Component struct {
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

// Gateway is the [gateway] table: what the gateway advertises.
type Gateway struct {
	Name                 string `toml:"name"`
	PageMax              int    `toml:"page_max"`
	RequestReplaySeconds int    `toml:"request_replay_seconds"`
}

// Database is the [database] table.
type Database struct {
	Path string `toml:"path"`
}

// Log is the [log] table.
type Log struct {
	Level    string `toml:"level"`
	DebugXML bool   `toml:"debug_xml"`
}

// Policy is the [policy] table.
type Policy struct {
	LocalDomains []string      `toml:"local_domains"`
	Admins       []string      `toml:"admins"`
	Visibility   []GrantFile   `toml:"visibility"`
	Invoke       []InvokeGrant `toml:"invoke"`
}

// GrantFile is one [[policy.visibility]] entry.
type GrantFile struct {
	Principals []string `toml:"principals"`
	Endpoints  []string `toml:"endpoints"`
}

// InvokeGrant is one [[policy.invoke]] entry.
type InvokeGrant struct {
	Principals []string `toml:"principals"`
	Endpoints  []string `toml:"endpoints"`
	Tools      []string `toml:"tools"`
}

// Defaults returns the File that decoding starts from.
func Defaults() File {
	return File{
		Component: Component{
			PingInterval: "60s",
			PingTimeout:  "15s",
			ReconnectMax: "60s",
		},
		Gateway: Gateway{
			Name:                 "Agent Gateway",
			PageMax:              MaxPage,
			RequestReplaySeconds: DefaultReplaySeconds,
		},
		Database: Database{Path: "agentgw.db"},
		Log:      Log{Level: "info"},
	}
}

// Config is a validated configuration.
type Config struct {
	// Path is the file it was loaded from.
	Path string

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

	Name                 string
	PageMax              int
	RequestReplaySeconds int

	DatabasePath string
	LogLevel     string
	DebugXML     bool

	Policy *policy.Policy
}

// Errors is every problem found in a configuration, one per key.
type Errors []error

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "\n")
}

// Load reads, decodes and validates the file at path.
func Load(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	f, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	return f.Validate(filepath.Dir(path), path)
}

// Decode strictly decodes TOML over Defaults. Errors name the line and key
// but never quote the document, which may hold the component secret.
func Decode(raw []byte) (File, error) {
	f := Defaults()
	dec := toml.NewDecoder(bytes.NewReader(raw)).DisallowUnknownFields()
	err := dec.Decode(&f)
	if err == nil {
		return f, nil
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var errs Errors
		for i := range strict.Errors {
			de := &strict.Errors[i]
			line, _ := de.Position()
			errs = append(errs, fmt.Errorf("line %d: %s: unknown key", line, strings.Join(de.Key(), ".")))
		}
		return f, errs
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		key := strings.Join(de.Key(), ".")
		if key == "" {
			return f, Errors{fmt.Errorf("line %d: %s", line, strings.TrimPrefix(de.Error(), "toml: "))}
		}
		return f, Errors{fmt.Errorf("line %d: %s: %s", line, key, strings.TrimPrefix(de.Error(), "toml: "))}
	}
	// Type mismatches come back as plain errors naming the Go field; they
	// carry no document text.
	return f, Errors{fmt.Errorf("decode: %w", err)}
}

// Validate checks f and builds a Config. dir resolves relative paths; path
// is recorded as Config.Path.
func (f File) Validate(dir, path string) (*Config, error) {
	var errs Errors
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{key}, args...)...))
	}
	c := &Config{Path: path}

	// [component]
	comp := f.Component
	if comp.Domain == "" {
		bad("component.domain", "required")
	} else if d, err := jid.Parse(comp.Domain); err != nil || d.Localpart() != "" || d.Resourcepart() != "" {
		bad("component.domain", "must be a domain JID such as agents.example.org")
	} else {
		c.Domain = d
	}
	host, _, err := net.SplitHostPort(comp.Server)
	switch {
	case comp.Server == "":
		bad("component.server", "required (host:port of the XMPP server's component port)")
	case err != nil:
		bad("component.server", "must be host:port")
	default:
		c.Server = comp.Server
		loopback := isLoopback(host)
		if !comp.TLS && !loopback && !comp.InsecurePlaintext {
			bad("component.server", "%s is not a loopback address: set component.tls = true (direct TLS with certificate verification), or component.insecure_plaintext = true to send the secret in the clear", host)
		}
	}
	c.TLS = comp.TLS
	c.TLSServerName = comp.TLSServerName
	c.InsecurePlaintext = comp.InsecurePlaintext
	if comp.TLSCAFile != "" {
		c.TLSCAFile = resolve(dir, comp.TLSCAFile)
		if !comp.TLS {
			bad("component.tls_ca_file", "set, but component.tls is false")
		} else if _, err := os.Stat(c.TLSCAFile); err != nil {
			bad("component.tls_ca_file", "cannot read: %v", errors.Unwrap(err))
		}
	}
	switch {
	case comp.Secret != "" && comp.SecretFile != "":
		bad("component.secret", "set only one of component.secret and component.secret_file")
	case comp.Secret != "":
		c.Secret = []byte(comp.Secret)
	case comp.SecretFile != "":
		sec, err := readSecret(resolve(dir, comp.SecretFile))
		if err != nil {
			bad("component.secret_file", "%v", err)
		} else {
			c.Secret = sec
		}
	default:
		bad("component.secret", "required (or component.secret_file)")
	}
	c.PingInterval = duration(comp.PingInterval, "component.ping_interval", bad)
	c.PingTimeout = duration(comp.PingTimeout, "component.ping_timeout", bad)
	c.ReconnectMax = duration(comp.ReconnectMax, "component.reconnect_max", bad)

	// [gateway]
	c.Name = f.Gateway.Name
	if c.Name == "" {
		bad("gateway.name", "must not be empty")
	}
	c.PageMax = f.Gateway.PageMax
	if c.PageMax < 1 || c.PageMax > MaxPage {
		bad("gateway.page_max", "must be between 1 and %d", MaxPage)
	}
	c.RequestReplaySeconds = f.Gateway.RequestReplaySeconds
	if c.RequestReplaySeconds < 1 {
		bad("gateway.request_replay_seconds", "must be a positive integer")
	}

	// [database]
	if f.Database.Path == "" {
		bad("database.path", "required")
	} else {
		c.DatabasePath = resolve(dir, f.Database.Path)
	}

	// [log]
	switch f.Log.Level {
	case "debug", "info", "warn", "error":
		c.LogLevel = f.Log.Level
	default:
		bad("log.level", "must be one of debug, info, warn, error")
	}
	c.DebugXML = f.Log.DebugXML

	// [policy]
	c.Policy = f.Policy.build(c.Domain.Domainpart(), bad)

	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

func (p Policy) build(domain string, bad func(key, format string, args ...any)) *policy.Policy {
	out := &policy.Policy{}
	for i, d := range p.LocalDomains {
		key := fmt.Sprintf("policy.local_domains[%d]", i)
		j, err := jid.Parse(d)
		if err != nil || j.Localpart() != "" || j.Resourcepart() != "" {
			bad(key, "must be a domain")
			continue
		}
		out.LocalDomains = append(out.LocalDomains, j.Domainpart())
	}
	for i, a := range p.Admins {
		key := fmt.Sprintf("policy.admins[%d]", i)
		j, err := jid.Parse(a)
		if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
			bad(key, "must be a bare JID such as admin@example.org")
			continue
		}
		out.Admins = append(out.Admins, j.Bare().String())
	}
	for i, g := range p.Visibility {
		key := fmt.Sprintf("policy.visibility[%d]", i)
		grant := buildGrant(key, g.Principals, g.Endpoints, domain, bad)
		out.Visibility = append(out.Visibility, grant)
	}
	for i, g := range p.Invoke {
		key := fmt.Sprintf("policy.invoke[%d]", i)
		grant := buildGrant(key, g.Principals, g.Endpoints, domain, bad)
		if len(g.Tools) == 0 {
			bad(key+".tools", "required: list tool names, or \"*\" for every tool")
		}
		for k, t := range g.Tools {
			switch {
			case t == policy.Wildcard:
				grant.AllTools = true
			case t == "":
				bad(fmt.Sprintf("%s.tools[%d]", key, k), "must not be empty")
			default:
				grant.Tools = append(grant.Tools, t)
			}
		}
		out.Invoke = append(out.Invoke, grant)
	}
	return out
}

func buildGrant(key string, principals, endpoints []string, domain string, bad func(key, format string, args ...any)) policy.Grant {
	var g policy.Grant
	if len(principals) == 0 {
		bad(key+".principals", "required: list domains or bare JIDs")
	}
	for k, s := range principals {
		p, err := policy.ParsePrincipal(s)
		if err != nil || s == policy.Wildcard {
			bad(fmt.Sprintf("%s.principals[%d]", key, k), "must be a domain or a bare JID")
			continue
		}
		g.Principals = append(g.Principals, p)
	}
	if len(endpoints) == 0 {
		bad(key+".endpoints", "required: list endpoint bare JIDs, or \"*\" for every endpoint")
	}
	for k, e := range endpoints {
		ek := fmt.Sprintf("%s.endpoints[%d]", key, k)
		if e == policy.Wildcard {
			g.AllEndpoints = true
			continue
		}
		j, err := jid.Parse(e)
		if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
			bad(ek, "must be an endpoint bare JID or \"*\"")
			continue
		}
		if domain != "" && j.Domainpart() != domain {
			bad(ek, "%s is not under component.domain %s", j.Bare(), domain)
			continue
		}
		g.Endpoints = append(g.Endpoints, j.Bare().String())
	}
	return g
}

func duration(s, key string, bad func(key, format string, args ...any)) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		bad(key, "must be a positive duration such as \"30s\"")
		return 0
	}
	return d
}

func readSecret(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", errors.Unwrap(err))
	}
	if info.Size() > maxSecretBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxSecretBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", errors.Unwrap(err))
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) == 0 {
		return nil, errors.New("file is empty")
	}
	return b, nil
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// String describes the file for logs without the secret.
func (c *Config) String() string {
	return "domain=" + c.Domain.String() + " server=" + c.Server + " tls=" + strconv.FormatBool(c.TLS) + " db=" + c.DatabasePath
}
