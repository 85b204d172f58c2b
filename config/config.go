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
	"slices"
	"strconv"
	"strings"
	"time"

	"agentgw/internal/secretfile"
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
	// DefaultRateLimit and DefaultRateBurst bound the IQ requests of one
	// sender (bare JID): requests per second, and how many at once.
	DefaultRateLimit = 100
	DefaultRateBurst = 200
	// DefaultDomainRateLimit and DefaultDomainRateBurst bound the stanzas
	// of all senders of one domain together (domain_rate_limit,
	// domain_rate_burst), so a thousand localparts are one budget.
	DefaultDomainRateLimit = 500
	DefaultDomainRateBurst = 1000
	// maxSecretBytes bounds a secret file.
	maxSecretBytes = 4096
	// DefaultMaxActiveTasks bounds the tasks that are not terminal; past
	// it an invocation gets <resource-constraint/>.
	DefaultMaxActiveTasks = 10000
)

// File is the TOML document as written by the operator.
type File struct {
	// decodedLoosely marks a File decoded despite unknown keys, for Load.
	decodedLoosely bool

	Component Component `toml:"component"`
	Gateway   Gateway   `toml:"gateway"`
	Database  Database  `toml:"database"`
	Log       Log       `toml:"log"`
	Metrics   Metrics   `toml:"metrics"`
	Policy    Policy    `toml:"policy"`
	Tasks     Tasks     `toml:"tasks"`
	Quotas    Quotas    `toml:"quotas"`
	// Endpoints are the [[endpoint]] tables: hosted endpoints and the
	// runtime that executes their tools.
	Endpoints []EndpointFile `toml:"endpoint"`
	// MCP is the [mcp] table of `agentgw mcp` (mcpface.go).
	MCP MCPServerFile `toml:"mcp"`
	// Chat is the [chat] table of the Human Messaging profile (chat.go).
	Chat ChatFile `toml:"chat"`
	// Runtime is the [runtime] table: the sandbox (sandbox.go).
	Runtime RuntimeFile `toml:"runtime"`
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
	Name                 string  `toml:"name"`
	PageMax              int     `toml:"page_max"`
	RequestReplaySeconds int     `toml:"request_replay_seconds"`
	RateLimit            float64 `toml:"rate_limit"`
	RateBurst            int     `toml:"rate_burst"`
	DomainRateLimit      float64 `toml:"domain_rate_limit"`
	DomainRateBurst      int     `toml:"domain_rate_burst"`
}

// Database is the [database] table.
type Database struct {
	Path string `toml:"path"`
}

// Log is the [log] table.
type Log struct {
	Level    string `toml:"level"`
	Format   string `toml:"format"`
	DebugXML bool   `toml:"debug_xml"`
}

// Metrics is the [metrics] table: the optional Prometheus listener.
type Metrics struct {
	Listen string `toml:"listen"`
}

// Policy is the [policy] table.
type Policy struct {
	LocalDomains []string       `toml:"local_domains"`
	Admins       []string       `toml:"admins"`
	SelfRegister bool           `toml:"self_register"`
	Visibility   []GrantFile    `toml:"visibility"`
	Invoke       []InvokeGrant  `toml:"invoke"`
	Approve      []ApproveGrant `toml:"approve"`
	// Chat are the [[policy.chat]] grants (chat.go).
	Chat []GrantFile `toml:"chat"`
}

// ApproveGrant is one [[policy.approve]] entry: it vouches, for its
// principals, for the approval and the permissions that the named tools
// declare (approvalRequired, requiredPermissions). It adds to an invoke
// grant; it grants nothing by itself.
type ApproveGrant struct {
	Principals  []string `toml:"principals"`
	Endpoints   []string `toml:"endpoints"`
	Tools       []string `toml:"tools"`
	Permissions []string `toml:"permissions"`
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

// Tasks is the [tasks] table: retention, lifetimes and capacity of tasks.
type Tasks struct {
	Retention      string `toml:"retention"`
	DefaultTimeout string `toml:"default_timeout"`
	MaxTimeout     string `toml:"max_timeout"`
	MaxActive      int    `toml:"max_active"`
	PurgeInterval  string `toml:"purge_interval"`
}

// EndpointFile is one [[endpoint]] entry: a hosted endpoint and its
// runtime, with the keys of that runtime (runtimeKeys says which).
type EndpointFile struct {
	JID     string `toml:"jid"`
	Runtime string `toml:"runtime"`
	// Keys of runtimes "exec" and "mcp".
	Command []string `toml:"command"`
	Dir     string   `toml:"dir"`
	Env     []string `toml:"env"`
	// Keys of runtime "exec".
	Grace     string `toml:"grace"`
	KillGrace string `toml:"kill_grace"`
	// Keys of runtime "mcp" (docs/mcp.md). Pointers tell a key that is
	// absent from one set to its zero value.
	EnvFiles           map[string]string `toml:"env_files"`
	EnvPass            []string          `toml:"env_pass"`
	URL                string            `toml:"url"`
	HeaderFiles        map[string]string `toml:"header_files"`
	ColdStartSupported *bool             `toml:"cold_start_supported"`
	KeepWarm           *bool             `toml:"keep_warm"`
	IdleTimeout        string            `toml:"idle_timeout"`
	Name               string            `toml:"name"`
	Title              string            `toml:"title"`
	Description        string            `toml:"description"`
	DefaultTimeout     string            `toml:"default_timeout"`
	MaxTimeout         string            `toml:"max_timeout"`
	// Insecure allows a plain http:// url to a host that is not loopback.
	Insecure bool `toml:"insecure"`
	// Chat is who answers the endpoint's messages (ChatOff, the default,
	// ChatBuiltin, ChatExec, ChatQueue); ChatCommand the program of
	// ChatExec (chat.go). Any runtime takes them.
	Chat        string   `toml:"chat"`
	ChatCommand []string `toml:"chat_command"`
	// The sandbox_* keys (sandbox.go).
	EndpointSandboxFile
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
			RateLimit:            DefaultRateLimit,
			RateBurst:            DefaultRateBurst,
			DomainRateLimit:      DefaultDomainRateLimit,
			DomainRateBurst:      DefaultDomainRateBurst,
		},
		Database: Database{Path: "agentgw.db"},
		Log:      Log{Level: "info", Format: "text"},
		Quotas:   defaultQuotas(),
		Tasks: Tasks{
			Retention:      "24h",
			DefaultTimeout: "1h",
			MaxTimeout:     "24h",
			MaxActive:      DefaultMaxActiveTasks,
			PurgeInterval:  "1m",
		},
		MCP:     mcpServerDefaults(),
		Chat:    chatDefaults(),
		Runtime: runtimeDefaults(),
	}
}

// Config is a validated configuration.
type Config struct {
	// Path is the file it was loaded from.
	Path string

	Domain jid.JID
	Server string
	Secret []byte
	// SecretFile is where Secret was read from (component.secret_file),
	// if it was.
	SecretFile        string
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
	RateLimit            float64
	RateBurst            int
	DomainRateLimit      float64
	DomainRateBurst      int

	DatabasePath string
	LogLevel     string
	// LogFormat is "text" or "json" (log/slog's handlers).
	LogFormat string
	DebugXML  bool
	// MetricsListen is the host:port of the Prometheus text-format
	// listener; empty (the default) starts none.
	MetricsListen string

	Policy *policy.Policy

	// Tasks is the [tasks] table; Endpoints the [[endpoint]] tables.
	Tasks TaskLimits
	// Quotas is the [quotas] table (quotas.go).
	Quotas    Quotas
	Endpoints []Endpoint
	// MCP is the [mcp] table, for `agentgw mcp` (LoadMCP).
	MCP *MCPServer
	// Chat is the [chat] table (chat.go).
	Chat Chat
	// Sandbox is runtime.sandbox: SandboxRequired, SandboxBestEffort or
	// SandboxOff (sandbox.go).
	Sandbox string
}

// TaskLimits is the validated [tasks] table.
type TaskLimits struct {
	// Retention is how long a task's state and result stay queryable
	// after its deadline.
	Retention time.Duration
	// DefaultTimeout is the lifetime of a task whose caller and tool set
	// none; MaxTimeout caps every lifetime.
	DefaultTimeout, MaxTimeout time.Duration
	// MaxActive bounds the tasks that are not terminal.
	MaxActive int
	// PurgeInterval is how often expired tasks are deleted.
	PurgeInterval time.Duration
}

// The runtimes an [[endpoint]] may name (package runtime).
const (
	RuntimeBuiltin = "builtin"
	RuntimeExec    = "exec"
	RuntimeMCP     = "mcp"
)

// Endpoint is one validated [[endpoint]]: a hosted endpoint and its
// runtime. Only the fields of its runtime are set.
type Endpoint struct {
	// JID is the endpoint's normalized bare JID, under component.domain.
	JID string
	// Runtime is RuntimeBuiltin, RuntimeExec or RuntimeMCP.
	Runtime string
	// Command, Dir and Env configure runtimes "exec" and "mcp"; Grace and
	// KillGrace runtime "exec" (exec.Options). Zero durations take the
	// runtime's defaults.
	Command          []string
	Dir              string
	Env              []string
	Grace, KillGrace time.Duration
	// MCP holds the other keys of runtime "mcp"; nil for other runtimes.
	MCP *MCPEndpoint
	// Chat is who answers the endpoint's messages (chat.go): ChatOff
	// unless set; ChatCommand is the program of ChatExec.
	Chat        string
	ChatCommand []string
	// Sandbox confines the endpoint's children (sandbox.go).
	Sandbox EndpointSandbox
}

// MCPEndpoint is the validated configuration of an [[endpoint]] with
// runtime "mcp" besides Command, Dir and Env: the upstream MCP server
// (package runtime/mcpclient, docs/mcp.md). Paths are absolute. Credentials are
// never held here, only the files and variable names they come from.
type MCPEndpoint struct {
	// URL is the Streamable HTTP endpoint; exactly one of URL and
	// Endpoint.Command is set.
	URL string
	// EnvFiles maps a variable of a stdio server to the file holding its
	// value; EnvPass names variables taken from the gateway's environment.
	EnvFiles map[string]string
	EnvPass  []string
	// HeaderFiles maps an HTTP header to the file holding its value.
	HeaderFiles map[string]string
	// ColdStart is cold_start_supported: a call wakes a stopped upstream,
	// and the endpoint advertises cold_start_supported=1.
	ColdStart bool
	// KeepWarm keeps the upstream running (implied without ColdStart).
	KeepWarm bool
	// IdleTimeout stops a cold-started upstream after that long without
	// calls; zero is the runtime's default, negative means never.
	IdleTimeout time.Duration
	// Name, Title and Description override the agent fields of the
	// imported manifest; empty takes the server's own.
	Name, Title, Description string
	// DefaultTimeout and MaxTimeout, when set, are declared in every
	// imported tool (defaultTimeoutSeconds, maximumTimeoutSeconds).
	DefaultTimeout, MaxTimeout time.Duration
}

// endpointRuntimes validates the runtime-specific keys of an [[endpoint]],
// by runtime name. A runtime is added here with its keys (and the keys in
// EndpointFile); until then naming it is an error.
var endpointRuntimes = map[string]func(key, dir string, in EndpointFile, out *Endpoint, p *problems){
	RuntimeBuiltin: builtinEndpoint,
	RuntimeExec:    execEndpoint,
	RuntimeMCP:     mcpEndpoint,
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
// is recorded as Config.Path.
func (f File) Validate(dir, path string) (*Config, error) {
	p := &problems{}
	c := &Config{Path: path}

	// [component]
	comp := f.Component
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
		loopback := LoopbackHost(host)
		if !comp.TLS && !loopback && !comp.InsecurePlaintext {
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
		c.SecretFile = resolve(dir, comp.SecretFile)
		sec, err := readComponentSecret(c.SecretFile)
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

	// [gateway]
	c.Name = f.Gateway.Name
	if c.Name == "" {
		p.bad("gateway.name", "must not be empty")
	}
	c.PageMax = f.Gateway.PageMax
	if c.PageMax < 1 || c.PageMax > MaxPage {
		p.bad("gateway.page_max", "must be between 1 and %d", MaxPage)
	}
	c.RequestReplaySeconds = f.Gateway.RequestReplaySeconds
	if c.RequestReplaySeconds < 1 {
		p.bad("gateway.request_replay_seconds", "must be a positive integer")
	}
	c.RateLimit, c.RateBurst = f.Gateway.RateLimit, f.Gateway.RateBurst
	if c.RateLimit < 0 {
		p.bad("gateway.rate_limit", "must be 0 (no limit) or a positive number of requests per second")
	}
	if c.RateBurst < 1 {
		p.bad("gateway.rate_burst", "must be a positive integer")
	}
	c.DomainRateLimit, c.DomainRateBurst = f.Gateway.DomainRateLimit, f.Gateway.DomainRateBurst
	if c.DomainRateLimit < 0 {
		p.bad("gateway.domain_rate_limit", "must be 0 (no limit) or a positive number of requests per second")
	}
	if c.DomainRateBurst < 1 {
		p.bad("gateway.domain_rate_burst", "must be a positive integer")
	}

	// [database]
	if f.Database.Path == "" {
		p.bad("database.path", "required")
	} else {
		c.DatabasePath = resolve(dir, f.Database.Path)
	}

	// [log]
	checkLogLevel(f.Log.Level, p)
	c.LogLevel = f.Log.Level
	switch f.Log.Format {
	case "text", "json":
		c.LogFormat = f.Log.Format
	default:
		p.bad("log.format", "must be \"text\" or \"json\"")
	}
	c.DebugXML = f.Log.DebugXML

	// [metrics]
	if l := f.Metrics.Listen; l != "" {
		if _, port, err := net.SplitHostPort(l); err != nil || port == "" {
			p.bad("metrics.listen", "must be host:port, such as \"127.0.0.1:9464\"")
		} else {
			c.MetricsListen = l
		}
	}

	// [policy]
	c.Policy = f.Policy.build(c.Domain.Domainpart(), p)

	// [tasks] and [[endpoint]]
	c.Tasks = f.Tasks.build(p)
	c.Quotas = f.Quotas.build(p)
	c.Endpoints = buildEndpoints(f.Endpoints, c.Domain.Domainpart(), dir, p)
	c.MCP = f.MCP.build(dir, false, p)
	c.Chat = f.Chat.build(dir, c.Endpoints, p)
	c.Sandbox = f.Runtime.build(p)

	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return c, nil
}

func (pf Policy) build(domain string, p *problems) *policy.Policy {
	out := &policy.Policy{}
	for i, d := range pf.LocalDomains {
		key := fmt.Sprintf("policy.local_domains[%d]", i)
		j, err := jid.Parse(d)
		if err != nil || j.Localpart() != "" || j.Resourcepart() != "" {
			p.bad(key, "must be a domain")
			continue
		}
		out.LocalDomains = append(out.LocalDomains, j.Domainpart())
	}
	for i, a := range pf.Admins {
		key := fmt.Sprintf("policy.admins[%d]", i)
		j, err := jid.Parse(a)
		if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
			p.bad(key, "must be a bare JID such as admin@example.org")
			continue
		}
		out.Admins = append(out.Admins, j.Bare().String())
	}
	out.SelfRegister = pf.SelfRegister
	if pf.SelfRegister && len(pf.LocalDomains) == 0 {
		p.bad("policy.self_register", "requires policy.local_domains: only their accounts may self-register")
	}
	// Endpoints live under the component domain, or are self-registered
	// accounts of a local domain.
	endpointDomains := append([]string{domain}, out.LocalDomains...)
	for i, g := range pf.Visibility {
		key := fmt.Sprintf("policy.visibility[%d]", i)
		grant := buildGrant(key, g.Principals, g.Endpoints, endpointDomains, p)
		out.Visibility = append(out.Visibility, grant)
	}
	for i, g := range pf.Invoke {
		key := fmt.Sprintf("policy.invoke[%d]", i)
		grant := buildGrant(key, g.Principals, g.Endpoints, endpointDomains, p)
		if len(g.Tools) == 0 {
			p.bad(key+".tools", "required: list tool names, or \"*\" for every tool")
		}
		for k, t := range g.Tools {
			switch {
			case t == policy.Wildcard:
				grant.AllTools = true
			case t == "":
				p.bad(fmt.Sprintf("%s.tools[%d]", key, k), "must not be empty")
			default:
				grant.Tools = append(grant.Tools, t)
			}
		}
		out.Invoke = append(out.Invoke, grant)
	}
	for i, g := range pf.Approve {
		key := fmt.Sprintf("policy.approve[%d]", i)
		grant := buildGrant(key, g.Principals, g.Endpoints, endpointDomains, p)
		grant.Tools, grant.AllTools = grantList(key+".tools", g.Tools, true, p)
		grant.Permissions, grant.AllPermissions = grantList(key+".permissions", g.Permissions, false, p)
		out.Approve = append(out.Approve, grant)
	}
	for i, g := range pf.Chat {
		key := fmt.Sprintf("policy.chat[%d]", i)
		out.Chat = append(out.Chat, buildGrant(key, g.Principals, g.Endpoints, endpointDomains, p))
	}
	return out
}

// grantList builds a list of names that may be "*" for all; an empty list
// is an error when required.
func grantList(key string, list []string, required bool, p *problems) (names []string, all bool) {
	if required && len(list) == 0 {
		p.bad(key, "required: list names, or \"*\" for all")
	}
	for k, t := range list {
		switch {
		case t == policy.Wildcard:
			all = true
		case t == "":
			p.bad(fmt.Sprintf("%s[%d]", key, k), "must not be empty")
		default:
			names = append(names, t)
		}
	}
	return names, all
}

// buildGrant builds one grant. Endpoint JIDs must lie under one of domains:
// the component domain first, then the local domains. An empty component
// domain (itself already reported) disables the check.
func buildGrant(key string, principals, endpoints []string, domains []string, p *problems) policy.Grant {
	var g policy.Grant
	if len(principals) == 0 {
		p.bad(key+".principals", "required: list domains or bare JIDs")
	}
	for k, s := range principals {
		principal, err := policy.ParsePrincipal(s)
		if err != nil || s == policy.Wildcard {
			p.bad(fmt.Sprintf("%s.principals[%d]", key, k), "must be a domain or a bare JID")
			continue
		}
		g.Principals = append(g.Principals, principal)
	}
	if len(endpoints) == 0 {
		p.bad(key+".endpoints", "required: list endpoint bare JIDs, or \"*\" for every endpoint")
	}
	for k, e := range endpoints {
		ek := fmt.Sprintf("%s.endpoints[%d]", key, k)
		if e == policy.Wildcard {
			g.AllEndpoints = true
			continue
		}
		j, err := jid.Parse(e)
		if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
			p.bad(ek, "must be an endpoint bare JID or \"*\"")
			continue
		}
		if domains[0] != "" && !slices.Contains(domains, j.Domainpart()) {
			p.bad(ek, "%s is not under component.domain %s nor a local domain", j.Bare(), domains[0])
			continue
		}
		g.Endpoints = append(g.Endpoints, j.Bare().String())
	}
	return g
}

func (t Tasks) build(p *problems) TaskLimits {
	out := TaskLimits{
		Retention:      duration(t.Retention, "tasks.retention", p),
		DefaultTimeout: duration(t.DefaultTimeout, "tasks.default_timeout", p),
		MaxTimeout:     duration(t.MaxTimeout, "tasks.max_timeout", p),
		MaxActive:      t.MaxActive,
		PurgeInterval:  duration(t.PurgeInterval, "tasks.purge_interval", p),
	}
	if out.DefaultTimeout > out.MaxTimeout && out.MaxTimeout > 0 {
		p.bad("tasks.default_timeout", "must not exceed tasks.max_timeout")
	}
	if out.MaxActive < 1 {
		p.bad("tasks.max_active", "must be a positive integer")
	}
	return out
}

// buildEndpoints validates the [[endpoint]] tables: each a distinct bare JID
// under the component domain with a known runtime and that runtime's keys.
func buildEndpoints(in []EndpointFile, domain, dir string, p *problems) []Endpoint {
	var out []Endpoint
	seen := map[string]int{}
	for i, e := range in {
		key := fmt.Sprintf("endpoint[%d]", i)
		ep := Endpoint{Runtime: e.Runtime}
		j, ok := bareJID(key+".jid", e.JID, "a bare JID such as demo@"+domain, p)
		switch {
		case !ok:
		case domain != "" && j.Domainpart() != domain:
			p.bad(key+".jid", "%s is not under component.domain %s", j.Bare(), domain)
			ok = false
		default:
			ep.JID = j.Bare().String()
			if first, dup := seen[ep.JID]; dup {
				p.bad(key+".jid", "%s is already configured by endpoint[%d]", ep.JID, first)
				ok = false
			}
			seen[ep.JID] = i
		}
		check, known := endpointRuntimes[e.Runtime]
		switch {
		case e.Runtime == "":
			p.bad(key+".runtime", "required: one of %s", runtimeNames())
			continue
		case !known:
			p.bad(key+".runtime", "must be one of %s", runtimeNames())
			continue
		}
		foreignKeys(key, e, p)
		check(key, dir, e, &ep, p)
		chatEndpoint(key, e, &ep, p)
		sandboxEndpoint(key, dir, e, &ep, p)
		if ok {
			out = append(out, ep)
		}
	}
	return out
}

// runtimeNames lists the runtimes endpointRuntimes knows, sorted.
func runtimeNames() string {
	names := make([]string, 0, len(endpointRuntimes))
	for n := range endpointRuntimes {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// builtinEndpoint: the demo tools need no keys, and take none.
func builtinEndpoint(string, string, EndpointFile, *Endpoint, *problems) {
}

// runtimeKeys lists the runtime-specific keys of [[endpoint]], each with
// the runtimes that take it, in the order they are checked.
var runtimeKeys = []struct {
	name     string
	runtimes []string
	set      func(EndpointFile) bool
}{
	{"command", []string{RuntimeExec, RuntimeMCP}, func(e EndpointFile) bool { return e.Command != nil }},
	{"dir", []string{RuntimeExec, RuntimeMCP}, func(e EndpointFile) bool { return e.Dir != "" }},
	{"env", []string{RuntimeExec, RuntimeMCP}, func(e EndpointFile) bool { return e.Env != nil }},
	{"grace", []string{RuntimeExec}, func(e EndpointFile) bool { return e.Grace != "" }},
	{"kill_grace", []string{RuntimeExec}, func(e EndpointFile) bool { return e.KillGrace != "" }},
	{"env_files", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.EnvFiles != nil }},
	{"env_pass", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.EnvPass != nil }},
	{"url", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.URL != "" }},
	{"header_files", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.HeaderFiles != nil }},
	{"cold_start_supported", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.ColdStartSupported != nil }},
	{"keep_warm", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.KeepWarm != nil }},
	{"idle_timeout", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.IdleTimeout != "" }},
	{"name", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.Name != "" }},
	{"title", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.Title != "" }},
	{"description", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.Description != "" }},
	{"default_timeout", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.DefaultTimeout != "" }},
	{"max_timeout", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.MaxTimeout != "" }},
	{"insecure", []string{RuntimeMCP}, func(e EndpointFile) bool { return e.Insecure }},
}

// foreignKeys reports every key set on an [[endpoint]] whose runtime does
// not take it.
func foreignKeys(key string, in EndpointFile, p *problems) {
	for _, k := range runtimeKeys {
		if !k.set(in) || slices.Contains(k.runtimes, in.Runtime) {
			continue
		}
		quoted := make([]string, len(k.runtimes))
		for i, r := range k.runtimes {
			quoted[i] = strconv.Quote(r)
		}
		p.bad(key+"."+k.name, "only for runtime %s", strings.Join(quoted, " or "))
	}
}

// execEndpoint validates the keys of runtime "exec" (docs/exec-runtime.md).
// The program must exist now; serve checks again when it starts.
func execEndpoint(key, dir string, in EndpointFile, out *Endpoint, p *problems) {
	switch {
	case len(in.Command) == 0:
		p.bad(key+".command", "required for runtime %q", RuntimeExec)
	case !filepath.IsAbs(in.Command[0]):
		p.bad(key+".command[0]", "must be an absolute path to an executable file")
	default:
		st, err := os.Stat(in.Command[0])
		switch {
		case err != nil:
			p.bad(key+".command[0]", "cannot read: %v", errors.Unwrap(err))
		case st.IsDir() || st.Mode().Perm()&0o111 == 0:
			p.bad(key+".command[0]", "is not an executable file")
		default:
			out.Command = append([]string(nil), in.Command...)
		}
	}
	if in.Dir != "" {
		out.Dir = resolve(dir, in.Dir)
		if st, err := os.Stat(out.Dir); err != nil || !st.IsDir() {
			p.bad(key+".dir", "must be an existing directory")
		}
	}
	for k, kv := range in.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			p.bad(fmt.Sprintf("%s.env[%d]", key, k), "must be KEY=value")
			continue
		}
		out.Env = append(out.Env, kv)
	}
	if in.Grace != "" {
		out.Grace = duration(in.Grace, key+".grace", p)
	}
	if in.KillGrace != "" {
		out.KillGrace = duration(in.KillGrace, key+".kill_grace", p)
	}
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

func readSecret(path string) ([]byte, error) {
	return readSecretWith(path, secretfile.Read)
}

// readComponentSecret reads component.secret_file, which the XMPP server's
// group may also read (secretfile.ReadShared): Prosody reads the secret
// from this file, as `agentgw init` and docs/deploy.md set it up.
func readComponentSecret(path string) ([]byte, error) {
	return readSecretWith(path, secretfile.ReadShared)
}

func readSecretWith(path string, read func(string, int) ([]byte, error)) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", errors.Unwrap(err))
	}
	if info.Size() > maxSecretBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxSecretBytes)
	}
	// A secret that group or others can read or write is refused, naming the
	// file and its mode (internal/secretfile).
	b, err := read(path, maxSecretBytes)
	if errors.Is(err, secretfile.ErrExposed) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", errors.Unwrap(err))
	}
	// The secret is the first line; anything after it is an error, not
	// silently part of the secret (which would fail the handshake as
	// not-authorized, fatally and without a hint).
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	first = bytes.TrimRight(first, "\r")
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("must hold the secret on its first and only line")
	}
	if len(first) == 0 {
		return nil, errors.New("file is empty")
	}
	return first, nil
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// String describes the file for logs without the secret.
func (c *Config) String() string {
	return "domain=" + c.Domain.String() + " server=" + c.Server + " tls=" + strconv.FormatBool(c.TLS) + " db=" + c.DatabasePath
}
