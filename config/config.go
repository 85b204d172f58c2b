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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"agentgw/policy"

	"github.com/pelletier/go-toml/v2"
	"mellium.im/xmpp/jid"
)

// File is the TOML document as written by the operator: one field per
// table, each table's type, defaults and checks in a file of its own
// (component.go, gateway.go, database.go, log.go, metrics.go, policy.go,
// tasks.go, quotas.go, endpoint.go, mcp.go, chat.go, sandbox.go).
type File struct {
	// decodedLoosely marks a File decoded despite unknown keys, for Load.
	decodedLoosely bool

	Component ComponentFile `toml:"component"`
	Gateway   GatewayFile   `toml:"gateway"`
	Database  DatabaseFile  `toml:"database"`
	Log       LogFile       `toml:"log"`
	Metrics   MetricsFile   `toml:"metrics"`
	Policy    PolicyFile    `toml:"policy"`
	Tasks     TasksFile     `toml:"tasks"`
	Quotas    Quotas        `toml:"quotas"`
	// Endpoints are the [[endpoint]] tables: hosted endpoints and the
	// runtime that executes their tools.
	Endpoints []EndpointFile `toml:"endpoint"`
	// MCP is the [mcp] table of `agentgw mcp`.
	MCP MCPServerFile `toml:"mcp"`
	// Chat is the [chat] table of the Human Messaging profile.
	Chat ChatFile `toml:"chat"`
	// Runtime is the [runtime] table: the sandbox.
	Runtime RuntimeFile `toml:"runtime"`
}

// Defaults returns the File that decoding starts from.
func Defaults() File {
	return File{
		Component: componentDefaults(),
		Gateway:   gatewayDefaults(),
		Database:  databaseDefaults(),
		Log:       logDefaults(),
		Quotas:    defaultQuotas(),
		Tasks:     tasksDefaults(),
		MCP:       mcpServerDefaults(),
		Chat:      chatDefaults(),
		Runtime:   runtimeDefaults(),
	}
}

// Config is a validated configuration: the validated value of each table.
// The tables a service takes whole are embedded, so that their fields read
// as the Config's own (c.Domain, c.PageMax, c.LogFormat).
type Config struct {
	// Path is the file it was loaded from.
	Path string

	Component
	// SecretFile is where Secret was read from (component.secret_file),
	// if it was.
	SecretFile string
	Gateway
	Database
	Log
	Metrics

	Policy *policy.Policy
	// Tasks is the [tasks] table; Endpoints the [[endpoint]] tables.
	Tasks     TaskLimits
	Quotas    Quotas
	Endpoints []Endpoint
	// MCP is the [mcp] table, for `agentgw mcp` (LoadMCP).
	MCP  *MCPServer
	Chat Chat
	// Sandbox is runtime.sandbox: SandboxRequired, SandboxBestEffort or
	// SandboxOff.
	Sandbox string
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

// problems gathers every problem found in a configuration, each naming its
// key: the tables' build methods report to it and carry on, so that one
// run reports them all.
type problems struct{ errs Errors }

// bad reports the problem at key, format and args saying what is wrong.
func (p *problems) bad(key, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s: "+format, append([]any{key}, args...)...))
}

// Load reads, decodes and validates the file at path.
func Load(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	f, err := Decode(raw)
	var errs Errors
	if errors.As(err, &errs) && f.decodedLoosely {
		// Unknown keys: report them together with every other problem.
		if _, verr := f.Validate(filepath.Dir(path), path); verr != nil {
			var more Errors
			if errors.As(verr, &more) {
				errs = append(errs, more...)
			}
		}
		return nil, errs
	}
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
		// The document is well-formed: decode it again without the strict
		// check, so that Load can report every other problem too.
		loose := Defaults()
		if toml.NewDecoder(bytes.NewReader(raw)).Decode(&loose) == nil {
			loose.decodedLoosely = true
			return loose, errs
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
// is recorded as Config.Path. Tables are checked in the order of File, so
// that problems are reported in that order.
func (f File) Validate(dir, path string) (*Config, error) {
	p := &problems{}
	c := &Config{Path: path}
	c.Component, c.SecretFile = f.Component.build(dir, p)
	c.Gateway = f.Gateway.build(p)
	c.Database = f.Database.build(dir, p)
	c.Log = f.Log.build(p)
	c.Metrics = f.Metrics.build(p)
	domain := c.Domain.Domainpart()
	c.Policy = f.Policy.build(domain, p)
	c.Tasks = f.Tasks.build(p)
	c.Quotas = f.Quotas.build(p)
	c.Endpoints = buildEndpoints(f.Endpoints, domain, dir, p)
	c.MCP = f.MCP.build(dir, false, p)
	c.Chat = f.Chat.build(dir, c.Endpoints, p)
	c.Sandbox = f.Runtime.build(p)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return c, nil
}

// bareJID parses the bare JID at key, reporting a missing or malformed one
// as "must be " + want; ok is false after a report.
func bareJID(key, value, want string, p *problems) (_ jid.JID, ok bool) {
	j, err := jid.Parse(value)
	switch {
	case value == "":
		p.bad(key, "required")
	case err != nil || j.Localpart() == "" || j.Resourcepart() != "":
		p.bad(key, "must be %s", want)
	default:
		return j.Bare(), true
	}
	return jid.JID{}, false
}

func duration(s, key string, p *problems) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		p.bad(key, "must be a positive duration such as \"30s\"")
		return 0
	}
	return d
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// String describes the file for logs without the secret.
func (c *Config) String() string {
	return "domain=" + c.Domain.String() + " server=" + c.Server + " tls=" + strconv.FormatBool(c.TLS) + " db=" + c.Database.Redacted()
}
