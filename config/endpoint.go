package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
