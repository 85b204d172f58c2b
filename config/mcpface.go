package config

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"agentgw/mcpface/scope"

	"mellium.im/xmpp/jid"
)

// Defaults and bounds of the [mcp] table (`agentgw mcp`, docs/mcp-server.md).
const (
	// DefaultMCPQueueMax is mcp.queue_max: received messages kept per
	// account; past it the oldest is dropped and counted.
	DefaultMCPQueueMax = 1000
	// MaxMCPQueueMax bounds mcp.queue_max.
	MaxMCPQueueMax = 100000
	// DefaultMCPDatabase is mcp.database, beside the configuration file.
	DefaultMCPDatabase = "agentgw-mcp.db"
	// DefaultAgentPollSeconds is mcp.agent_poll_seconds: how often the
	// active version of each [[mcp.agent]] is asked for.
	DefaultAgentPollSeconds = 60
	// MinAgentPollSeconds and MaxAgentPollSeconds bound it.
	MinAgentPollSeconds = 1
	MaxAgentPollSeconds = 86400
	// MaxAgentPrefixBytes bounds mcp.agent[].prefix, leaving room in
	// MCP's 128 characters for the tool name.
	MaxAgentPrefixBytes = 64
	// DefaultMCPQueueMaxBytes is mcp.queue_max_bytes: the bytes of the
	// received messages kept per account (as stored); past it the oldest
	// are dropped. MinMCPQueueMaxBytes and MaxMCPQueueMaxBytes bound it.
	DefaultMCPQueueMaxBytes = 16 << 20
	MinMCPQueueMaxBytes     = 1 << 20
	MaxMCPQueueMaxBytes     = 1 << 30
	// DefaultSenderRateLimit (messages a second) and
	// DefaultSenderRateBurst are mcp.sender_rate_limit and
	// mcp.sender_rate_burst: the messages one sender may have queued.
	DefaultSenderRateLimit = 1.0
	DefaultSenderRateBurst = 20
	MaxSenderRateBurst     = 100000
	// DefaultMaxSessionsPerToken is mcp.max_sessions_per_token.
	DefaultMaxSessionsPerToken = 16
	MaxMaxSessionsPerToken     = 10000
)

// The values of mcp.account[].accept_from: whose messages are queued.
const (
	AcceptSubscribed = "subscribed"
	AcceptRoster     = "roster"
	AcceptAnyone     = "anyone"
)

// MCPServerFile is the [mcp] table as written: the `agentgw mcp` command,
// an MCP server that logs in to XMPP as an account. It is not the
// [[endpoint]] runtime "mcp" (MCPEndpoint), which goes the other way.
type MCPServerFile struct {
	QueueMax            int              `toml:"queue_max"`
	QueueMaxBytes       int64            `toml:"queue_max_bytes"`
	SenderRateLimit     float64          `toml:"sender_rate_limit"`
	SenderRateBurst     int              `toml:"sender_rate_burst"`
	AllowedOrigins      []string         `toml:"allowed_origins"`
	MaxSessionsPerToken int              `toml:"max_sessions_per_token"`
	Database            string           `toml:"database"`
	TLSCert             string           `toml:"tls_cert"`
	TLSKey              string           `toml:"tls_key"`
	Accounts            []MCPAccountFile `toml:"account"`
	Tokens              []MCPTokenFile   `toml:"token"`
	// AgentPollSeconds and Agents: the agent endpoints whose tools are
	// projected as MCP tools of their own (docs/mcp.md).
	AgentPollSeconds int            `toml:"agent_poll_seconds"`
	Agents           []MCPAgentFile `toml:"agent"`
}

// MCPAgentFile is one [[mcp.agent]] entry.
type MCPAgentFile struct {
	JID    string   `toml:"jid"`
	Tools  []string `toml:"tools"`
	Prefix string   `toml:"prefix"`
}

// MCPAgent is one validated [[mcp.agent]]: the tools of JID (every tool
// when Tools is ["*"]) appear as MCP tools named Prefix + "_" + tool.
type MCPAgent struct {
	JID    jid.JID
	Tools  []string
	Prefix string
}

// MCPAccountFile is one [[mcp.account]] entry.
type MCPAccountFile struct {
	JID          string `toml:"jid"`
	PasswordFile string `toml:"password_file"`
	Server       string `toml:"server"`
	AcceptFrom   string `toml:"accept_from"`
}

// MCPTokenFile is one [[mcp.token]] entry: a bearer token of the HTTP
// transport.
type MCPTokenFile struct {
	File    string   `toml:"file"`
	Account string   `toml:"account"`
	Scopes  []string `toml:"scopes"`
}

func mcpServerDefaults() MCPServerFile {
	return MCPServerFile{QueueMax: DefaultMCPQueueMax, Database: DefaultMCPDatabase, AgentPollSeconds: DefaultAgentPollSeconds,
		QueueMaxBytes: DefaultMCPQueueMaxBytes, SenderRateLimit: DefaultSenderRateLimit, SenderRateBurst: DefaultSenderRateBurst,
		MaxSessionsPerToken: DefaultMaxSessionsPerToken}
}

// MCPServer is the validated [mcp] table. Paths are absolute.
type MCPServer struct {
	QueueMax      int
	QueueMaxBytes int64
	// SenderRateLimit is messages a second one sender may have queued
	// (0: no limit), with bursts of SenderRateBurst.
	SenderRateLimit float64
	SenderRateBurst int
	// AllowedOrigins are the HTTP Origin values accepted, lowercased.
	AllowedOrigins      []string
	MaxSessionsPerToken int
	Database            string
	// TLSCert and TLSKey are PEM files for the HTTP transport; both or
	// neither is set.
	TLSCert, TLSKey string
	Accounts        []MCPAccount
	Tokens          []MCPToken
	// AgentPollSeconds is how often projected agents are polled.
	AgentPollSeconds int
	Agents           []MCPAgent
}

// MCPAccount is one validated [[mcp.account]].
type MCPAccount struct {
	// JID is the account's bare JID.
	JID jid.JID
	// Password was read from PasswordFile. It is never logged.
	Password     []byte
	PasswordFile string
	// Server is host:port, or empty: resolve the domain (SRV, then A).
	Server string
	// AcceptFrom is whose messages are queued: AcceptSubscribed,
	// AcceptRoster or AcceptAnyone.
	AcceptFrom string
}

// MCPToken is one validated [[mcp.token]].
type MCPToken struct {
	// File holds the token; Token is its content, never logged.
	File  string
	Token []byte
	// Account is the bare JID of the [[mcp.account]] the token acts as.
	Account string
	// Scopes as written; scope.Wildcard means every scope.
	Scopes []string
}

// Account returns the configured account with bare JID j, or nil.
func (m *MCPServer) Account(j string) *MCPAccount {
	for i := range m.Accounts {
		if m.Accounts[i].JID.String() == j {
			return &m.Accounts[i]
		}
	}
	return nil
}

// String describes the table for logs, without passwords or tokens.
func (m *MCPServer) String() string {
	jids := make([]string, len(m.Accounts))
	for i, a := range m.Accounts {
		jids[i] = a.JID.String()
	}
	return "mcp accounts=" + strings.Join(jids, ",") + " tokens=" + strconv.Itoa(len(m.Tokens)) + " db=" + m.Database
}

// MCPConfig is what `agentgw mcp` needs of a configuration file: the
// [mcp] table and the log level. Such a file needs no [component].
type MCPConfig struct {
	Path     string
	LogLevel string
	MCP      *MCPServer
}

// LoadMCP reads and strictly decodes the file at path, and validates the
// [mcp] table (which must configure an account) and [log]. Other tables are
// not checked: `agentgw mcp` does not use them.
func LoadMCP(path string) (*MCPConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	f, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	var errs Errors
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{key}, args...)...))
	}
	c := &MCPConfig{Path: path, LogLevel: f.Log.Level}
	checkLogLevel(f.Log.Level, bad)
	c.MCP = f.MCP.build(filepath.Dir(path), true, bad)
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// Check validates the file at path as check-config does and describes it:
// a file with an [mcp] table and no [component] is checked as `agentgw mcp`
// reads it (LoadMCP), any other as `agentgw serve` reads it (Load).
func Check(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	if f, err := Decode(raw); err == nil && f.mcpOnly() {
		c, err := LoadMCP(path)
		if err != nil {
			return "", err
		}
		return c.MCP.String(), nil
	}
	c, err := Load(path)
	if err != nil {
		return "", err
	}
	if c.MCP != nil && len(c.MCP.Accounts) > 0 {
		return c.String() + " " + c.MCP.String(), nil
	}
	return c.String(), nil
}

// mcpOnly reports whether f is a file for `agentgw mcp` alone: some [mcp]
// key is set and no [component] key is.
func (f File) mcpOnly() bool {
	d, m := mcpServerDefaults(), f.MCP
	set := len(m.Accounts) > 0 || len(m.Tokens) > 0 || m.QueueMax != d.QueueMax || m.Database != d.Database || m.TLSCert != "" || m.TLSKey != "" ||
		m.QueueMaxBytes != d.QueueMaxBytes || m.SenderRateLimit != d.SenderRateLimit || m.SenderRateBurst != d.SenderRateBurst ||
		len(m.AllowedOrigins) > 0 || m.MaxSessionsPerToken != d.MaxSessionsPerToken
	return set && f.Component == Defaults().Component
}

// build validates the [mcp] table. needAccount makes an empty account list
// an error (`agentgw mcp`); a gateway configuration may carry [mcp] defaults
// alone.
func (m MCPServerFile) build(dir string, needAccount bool, bad func(key, format string, args ...any)) *MCPServer {
	out := &MCPServer{QueueMax: m.QueueMax, AgentPollSeconds: m.AgentPollSeconds}
	out.Agents = m.buildAgents(bad)
	if m.QueueMax < 1 || m.QueueMax > MaxMCPQueueMax {
		bad("mcp.queue_max", "must be between 1 and %d", MaxMCPQueueMax)
	}
	out.QueueMaxBytes, out.SenderRateLimit, out.SenderRateBurst, out.MaxSessionsPerToken = m.QueueMaxBytes, m.SenderRateLimit, m.SenderRateBurst, m.MaxSessionsPerToken
	if m.QueueMaxBytes < MinMCPQueueMaxBytes || m.QueueMaxBytes > MaxMCPQueueMaxBytes {
		bad("mcp.queue_max_bytes", "must be between %d and %d", MinMCPQueueMaxBytes, MaxMCPQueueMaxBytes)
	}
	if m.SenderRateLimit < 0 || m.SenderRateLimit > 1e6 || m.SenderRateLimit != m.SenderRateLimit {
		bad("mcp.sender_rate_limit", "must be messages a second between 0 (no limit) and 1000000")
	}
	if m.SenderRateBurst < 1 || m.SenderRateBurst > MaxSenderRateBurst {
		bad("mcp.sender_rate_burst", "must be between 1 and %d", MaxSenderRateBurst)
	}
	if m.MaxSessionsPerToken < 1 || m.MaxSessionsPerToken > MaxMaxSessionsPerToken {
		bad("mcp.max_sessions_per_token", "must be between 1 and %d", MaxMaxSessionsPerToken)
	}
	for i, o := range m.AllowedOrigins {
		if norm, ok := originValue(o); ok {
			out.AllowedOrigins = append(out.AllowedOrigins, norm)
		} else {
			bad(fmt.Sprintf("mcp.allowed_origins[%d]", i), "must be an origin, scheme://host[:port] with no path (https://app.example.org)")
		}
	}
	if m.Database == "" {
		bad("mcp.database", "required")
	} else {
		out.Database = resolve(dir, m.Database)
	}
	switch {
	case m.TLSCert == "" && m.TLSKey == "":
	case m.TLSCert == "":
		bad("mcp.tls_cert", "required with mcp.tls_key")
	case m.TLSKey == "":
		bad("mcp.tls_key", "required with mcp.tls_cert")
	default:
		out.TLSCert = readableFile("mcp.tls_cert", dir, m.TLSCert, bad)
		out.TLSKey = secretFile("mcp.tls_key", dir, m.TLSKey, bad)
	}
	if needAccount && len(m.Accounts) == 0 {
		bad("mcp.account", "required: at least one [[mcp.account]] with jid and password_file")
	}
	for i, a := range m.Accounts {
		key := fmt.Sprintf("mcp.account[%d]", i)
		acct := MCPAccount{Server: a.Server, AcceptFrom: a.AcceptFrom}
		switch a.AcceptFrom {
		case "":
			acct.AcceptFrom = AcceptSubscribed
		case AcceptSubscribed, AcceptRoster, AcceptAnyone:
		default:
			bad(key+".accept_from", "must be one of %q (the default), %q, %q", AcceptSubscribed, AcceptRoster, AcceptAnyone)
		}
		j, ok := bareJID(key+".jid", a.JID, "a bare JID such as alice@example.org", bad)
		switch {
		case !ok:
		case out.Account(j.Bare().String()) != nil:
			bad(key+".jid", "%s is already configured", j.Bare())
			ok = false
		default:
			acct.JID = j.Bare()
		}
		if a.PasswordFile == "" {
			bad(key+".password_file", "required")
			ok = false
		} else {
			acct.PasswordFile = resolve(dir, a.PasswordFile)
			pw, err := readPrivate(acct.PasswordFile)
			if err != nil {
				bad(key+".password_file", "%v", err)
				ok = false
			}
			acct.Password = pw
		}
		if a.Server != "" {
			if _, port, err := net.SplitHostPort(a.Server); err != nil || port == "" {
				bad(key+".server", "must be host:port")
				ok = false
			}
		}
		if ok {
			out.Accounts = append(out.Accounts, acct)
		}
	}
	for i, t := range m.Tokens {
		key := fmt.Sprintf("mcp.token[%d]", i)
		tok := MCPToken{Account: t.Account}
		seen := make([][]byte, len(out.Tokens))
		for k, prev := range out.Tokens {
			seen[k] = prev.Token
		}
		tok.File, tok.Token = readBearerToken(key, dir, t.File, "mcp.token", seen, bad)
		if j, err := jid.Parse(t.Account); t.Account == "" {
			bad(key+".account", "required: the jid of an [[mcp.account]]")
		} else if err != nil || out.Account(j.Bare().String()) == nil {
			bad(key+".account", "must be the jid of an [[mcp.account]]")
		} else {
			tok.Account = j.Bare().String()
		}
		if len(t.Scopes) == 0 {
			bad(key+".scopes", "required: list scopes, or \"*\" for every scope")
		}
		for k, s := range t.Scopes {
			if s != scope.Wildcard && !scope.Known(s) {
				bad(fmt.Sprintf("%s.scopes[%d]", key, k), "unknown scope %q (see docs/mcp-server.md)", s)
				continue
			}
			tok.Scopes = append(tok.Scopes, s)
		}
		out.Tokens = append(out.Tokens, tok)
	}
	return out
}

// A bearer token carries at least 128 bits: 22 characters of base64url
// (6 bits each) or 32 hex digits (4 bits each).
const (
	minTokenBase64 = 22
	minTokenHex    = 32
)

// strongToken reports whether b is long enough for 128 bits: a token of
// hex digits alone needs minTokenHex of them, any other minTokenBase64
// characters.
func strongToken(b []byte) bool {
	hexOnly := true
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			hexOnly = false
			break
		}
	}
	if hexOnly {
		return len(b) >= minTokenHex
	}
	return len(b) >= minTokenBase64
}

// readBearerToken reads the bearer token file of [[mcp.token]] or
// [[chat.token]] number key (list names the array, for the error about a
// token that seen, the tokens before it, already holds): a private file
// (readPrivate) holding at least 128 bits (strongToken). It returns the
// resolved path and the token, or reports to bad and returns a nil token.
func readBearerToken(key, dir, file, list string, seen [][]byte, bad func(key, format string, args ...any)) (string, []byte) {
	if file == "" {
		bad(key+".file", "required")
		return "", nil
	}
	path := resolve(dir, file)
	b, err := readPrivate(path)
	switch {
	case err != nil:
		bad(key+".file", "%v", err)
		return path, nil
	case !strongToken(b):
		bad(key+".file", "the token in %s is too short: a token needs at least 128 bits, %d or more base64url characters or %d hex digits (openssl rand -hex 16)", path, minTokenBase64, minTokenHex)
		return path, nil
	}
	for k, prev := range seen {
		if subtle.ConstantTimeCompare(prev, b) == 1 {
			bad(key+".file", "holds the same token as %s[%d]", list, k)
		}
	}
	return path, b
}

// readPrivate reads a password or token file as every secret file is read
// (readSecret: the secret alone on one line, in a file that neither group
// nor others may read or write, internal/secretfile), into a copy of its
// own.
func readPrivate(path string) ([]byte, error) {
	b, err := readSecret(path)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// buildAgents validates mcp.agent_poll_seconds and the [[mcp.agent]]
// entries. A prefix must be unique and fit MCP's name grammar, so that
// two agents never project the same MCP name; an empty one keeps the
// agent's tool names, and two such agents must not list the same tool
// (other collisions are found when projected, by mcpface).
func (m MCPServerFile) buildAgents(bad func(key, format string, args ...any)) []MCPAgent {
	if m.AgentPollSeconds < MinAgentPollSeconds || m.AgentPollSeconds > MaxAgentPollSeconds {
		bad("mcp.agent_poll_seconds", "must be between %d and %d", MinAgentPollSeconds, MaxAgentPollSeconds)
	}
	var out []MCPAgent
	prefixes, unprefixed := map[string]int{}, map[string]int{}
	for i, a := range m.Agents {
		key := fmt.Sprintf("mcp.agent[%d]", i)
		ag := MCPAgent{Prefix: a.Prefix, Tools: a.Tools}
		j, ok := bareJID(key+".jid", a.JID, "the bare JID of an agent endpoint, such as weather@agents.example.org", bad)
		switch {
		case !ok:
		default:
			ag.JID = j.Bare()
		}
		switch {
		case a.Prefix == "":
			// The agent's tools keep their own names; a name that
			// collides with another tool is refused when projected
			// (mcpface), naming both.
		case len(a.Prefix) > MaxAgentPrefixBytes || !mcpNameChars(a.Prefix):
			bad(key+".prefix", "must be empty, or 1 to %d characters of A-Z a-z 0-9 . - (MCP's tool name grammar, without _)", MaxAgentPrefixBytes)
			ok = false
		default:
			if prev, dup := prefixes[a.Prefix]; dup {
				bad(key+".prefix", "%q is already the prefix of mcp.agent[%d]: the MCP tool names would collide", a.Prefix, prev)
				ok = false
			}
			prefixes[a.Prefix] = i
		}
		switch {
		case len(a.Tools) == 0:
			bad(key+".tools", `required: ["*"] or tool names`)
			ok = false
		case len(a.Tools) > 1 && slices.Contains(a.Tools, "*"):
			bad(key+".tools", `"*" stands alone`)
			ok = false
		}
		seen := map[string]bool{}
		for k, t := range a.Tools {
			if t == "" || seen[t] {
				bad(fmt.Sprintf("%s.tools[%d]", key, k), "must be a tool name, listed once")
				ok = false
			}
			seen[t] = true
			// Two agents without a prefix that name the same tool
			// would project the same MCP name.
			if a.Prefix == "" && t != "*" && t != "" {
				if prev, dup := unprefixed[t]; dup && prev != i {
					bad(fmt.Sprintf("%s.tools[%d]", key, k), "%q is also projected without a prefix by mcp.agent[%d]: the MCP tool names would collide", t, prev)
					ok = false
				}
				unprefixed[t] = i
			}
		}
		if ok {
			out = append(out, ag)
		}
	}
	return out
}

// originValue checks an allowed Origin (RFC 6454: scheme "://" host
// [":" port], as browsers send it) and returns it lowercased.
func originValue(o string) (string, bool) {
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok || scheme == "" || rest == "" || strings.ContainsAny(rest, "/?#@ \t") {
		return "", false
	}
	for _, r := range scheme {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '+' || r == '-' || r == '.') {
			return "", false
		}
	}
	if h, p, err := net.SplitHostPort(rest); err == nil {
		if h == "" || p == "" {
			return "", false
		}
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return "", false
		}
	}
	return strings.ToLower(o), true
}

// mcpNameChars reports whether s has only A-Z a-z 0-9 . and -: MCP's
// tool name characters but the _ that joins prefix and tool.
func mcpNameChars(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}
