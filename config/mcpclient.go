package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"agentgw/internal/ident"
	"agentgw/internal/loopback"
	"agentgw/internal/secretfile"
)

// Bounds and fixed values of the keys of runtime "mcp", as package
// runtime/mcpclient and the manifest schema apply them.
const (
	// mcpBasePath is the PATH of a stdio MCP server unless env sets one.
	mcpBasePath = "/usr/local/bin:/usr/bin:/bin"
	// maxAgentName, maxAgentTitle and maxAgentDescription are the manifest
	// schema's bounds of agent.name, agent.title and agent.description.
	maxAgentName        = 128
	maxAgentTitle       = 256
	maxAgentDescription = 4096
	// maxToolTimeout bounds default_timeout and max_timeout, which become
	// integer seconds in every imported tool.
	maxToolTimeout = (1<<31 - 1) * time.Second
	// idleNever is the idle_timeout that never stops the upstream.
	idleNever = "never"
)

// mcpReservedHeaders are set by the MCP transport and may not come from
// header_files.
var mcpReservedHeaders = []string{
	"Accept", "Connection", "Content-Length", "Content-Type", "Host",
	"Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id", "Transfer-Encoding",
}

// mcpEndpoint validates the keys of runtime "mcp" (docs/mcp.md): exactly
// one of command and url, the files credentials come from (readable now;
// the runtime reads them again at every connection), and the lifecycle
// and manifest keys. Errors name the key and never a value read from a
// file, the environment or the URL.
func mcpEndpoint(key, dir string, in EndpointFile, out *Endpoint, p *problems) {
	m := &MCPEndpoint{}
	out.MCP = m
	switch {
	case in.Command == nil && in.URL == "":
		p.bad(key+".command", "required for runtime %q (a stdio server), or set url", RuntimeMCP)
	case in.Command != nil && in.URL != "":
		p.bad(key+".url", "set only one of command and url")
	case in.Command != nil:
		mcpCommand(key, dir, in, out, p)
	default:
		m.URL = mcpURL(key, in.URL, in.Insecure, p)
	}
	if in.Dir != "" {
		out.Dir = resolve(dir, in.Dir)
		if st, err := os.Stat(out.Dir); err != nil || !st.IsDir() {
			p.bad(key+".dir", "must be an existing directory")
		}
	}
	stdio := in.Command != nil
	for k, kv := range in.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !ident.EnvName(name) {
			p.bad(fmt.Sprintf("%s.env[%d]", key, k), "must be KEY=value")
			continue
		}
		out.Env = append(out.Env, kv)
	}
	for _, name := range slices.Sorted(maps.Keys(in.EnvFiles)) {
		k := key + ".env_files." + name
		if !ident.EnvName(name) {
			p.bad(k, "is not a valid environment variable name")
			continue
		}
		if m.EnvFiles == nil {
			m.EnvFiles = map[string]string{}
		}
		m.EnvFiles[name] = secretFile(k, dir, in.EnvFiles[name], p)
	}
	for k, name := range in.EnvPass {
		if !ident.EnvName(name) {
			p.bad(fmt.Sprintf("%s.env_pass[%d]", key, k), "is not a valid environment variable name")
			continue
		}
		m.EnvPass = append(m.EnvPass, name)
	}
	if !stdio {
		for _, k := range []struct {
			name string
			set  bool
		}{{"env", len(in.Env) > 0}, {"env_files", len(in.EnvFiles) > 0}, {"env_pass", len(in.EnvPass) > 0}} {
			if k.set {
				p.bad(key+"."+k.name, "only for a stdio server (command)")
			}
		}
	}
	for _, h := range slices.Sorted(maps.Keys(in.HeaderFiles)) {
		k := key + ".header_files." + h
		switch {
		case !ident.HeaderName(h):
			p.bad(k, "is not a valid header name")
			continue
		case slices.Contains(mcpReservedHeaders, http.CanonicalHeaderKey(h)):
			p.bad(k, "is set by the MCP transport")
			continue
		}
		if m.HeaderFiles == nil {
			m.HeaderFiles = map[string]string{}
		}
		m.HeaderFiles[h] = secretFile(k, dir, in.HeaderFiles[h], p)
	}
	if len(in.HeaderFiles) > 0 && stdio {
		p.bad(key+".header_files", "only for a Streamable HTTP server (url)")
	}

	if in.ColdStartSupported != nil {
		m.ColdStart = *in.ColdStartSupported
	}
	if in.KeepWarm != nil {
		m.KeepWarm = *in.KeepWarm
	}
	if in.IdleTimeout != "" {
		k := key + ".idle_timeout"
		if in.IdleTimeout == idleNever {
			m.IdleTimeout = -1
		} else if d, err := time.ParseDuration(in.IdleTimeout); err != nil || d <= 0 {
			p.bad(k, "must be a positive duration such as \"10m\", or %q", idleNever)
		} else {
			m.IdleTimeout = d
		}
		if !m.ColdStart || m.KeepWarm {
			p.bad(k, "applies only with cold_start_supported = true and keep_warm = false")
		}
	}

	m.Name = agentText(key+".name", in.Name, maxAgentName, false, p)
	m.Title = agentText(key+".title", in.Title, maxAgentTitle, false, p)
	m.Description = agentText(key+".description", in.Description, maxAgentDescription, true, p)
	if in.DefaultTimeout != "" {
		m.DefaultTimeout = toolTimeout(key+".default_timeout", in.DefaultTimeout, p)
	}
	if in.MaxTimeout != "" {
		m.MaxTimeout = toolTimeout(key+".max_timeout", in.MaxTimeout, p)
	}
	if m.DefaultTimeout > 0 && m.MaxTimeout > 0 && m.DefaultTimeout > m.MaxTimeout {
		p.bad(key+".default_timeout", "must not exceed max_timeout")
	}
}

// mcpCommand checks the program of a stdio server: a path (relative ones
// are relative to the configuration's folder) to an executable file, or
// a name found in the server's own PATH, which is not the gateway's.
func mcpCommand(key, dir string, in EndpointFile, out *Endpoint, p *problems) {
	if len(in.Command) == 0 || in.Command[0] == "" {
		p.bad(key+".command", "must name a program")
		return
	}
	cmd := slices.Clone(in.Command)
	prog := cmd[0]
	if strings.Contains(prog, "/") {
		cmd[0] = resolve(dir, prog)
		if msg := notExecutable(cmd[0]); msg != "" {
			p.bad(key+".command[0]", "%s", msg)
			return
		}
		out.Command = cmd
		return
	}
	path := mcpBasePath
	for _, kv := range in.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) && notExecutable(filepath.Join(d, prog)) == "" {
			out.Command = cmd
			return
		}
	}
	p.bad(key+".command[0]", "%s is not in the server's PATH (%s): give a path, or set PATH in env", prog, path)
}

// notExecutable says why path is not an executable file, or returns "".
func notExecutable(path string) string {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Sprintf("cannot read: %v", errors.Unwrap(err))
	case st.IsDir() || st.Mode().Perm()&0o111 == 0:
		return "is not an executable file"
	}
	return ""
}

// mcpURL checks a Streamable HTTP endpoint. Its text is never repeated in
// an error: it might hold a credential. Plain http:// is refused to a host
// that is not loopback (localhost or a loopback address), since every
// request carries the header_files secrets, unless insecure is set.
func mcpURL(key, raw string, insecure bool, p *problems) string {
	k := key + ".url"
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		p.bad(k, "is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		p.bad(k, "must be an http or https URL")
	case u.User != nil:
		p.bad(k, "must not hold userinfo: put credentials in header_files")
	case u.Host == "":
		p.bad(k, "has no host")
	case u.Scheme == "http" && !insecure && !loopback.Host(u.Hostname()):
		p.bad(k, "plain http to a host that is not loopback would send its headers in the clear: use https, or set insecure = true")
	default:
		return raw
	}
	return ""
}

// readableFile resolves a credential file and checks that it can be
// opened now. Its content is not read here.
func readableFile(key, dir, file string, p *problems) string {
	if file == "" {
		p.bad(key, "must name a file")
		return ""
	}
	path := resolve(dir, file)
	f, err := os.Open(path)
	if err != nil {
		p.bad(key, "cannot read: %v", errors.Unwrap(err))
		return path
	}
	f.Close()
	return path
}

// secretFile is readableFile for a file that holds a secret: it is also
// refused if group or others can read or write it (internal/secretfile).
func secretFile(key, dir, file string, p *problems) string {
	path := readableFile(key, dir, file, p)
	if path == "" {
		return ""
	}
	if err := secretfile.Check(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.bad(key, "%v", err)
	}
	return path
}

// agentText checks an agent text field of the imported manifest: at most
// max characters, no control characters (besides line breaks and tabs
// where multiline is set).
func agentText(key, s string, max int, multiline bool, p *problems) string {
	if s == "" {
		return ""
	}
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > max {
		p.bad(key, "must be at most %d characters of UTF-8", max)
		return ""
	}
	for _, r := range s {
		if r < 0x20 && !(multiline && (r == '\n' || r == '\t')) || r == 0x7f {
			p.bad(key, "must not hold control characters")
			return ""
		}
	}
	return s
}

// toolTimeout parses a whole number of seconds for an imported tool.
func toolTimeout(key, s string, p *problems) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d%time.Second != 0 || d > maxToolTimeout {
		p.bad(key, "must be a whole number of seconds, at least 1, such as \"5m\"")
		return 0
	}
	return d
}
