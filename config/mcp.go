package config

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

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
	QueueMax        int              `toml:"queue_max"`
	QueueMaxBytes   int64            `toml:"queue_max_bytes"`
	SenderRateLimit float64          `toml:"sender_rate_limit"`
	SenderRateBurst int              `toml:"sender_rate_burst"`
	Database        string           `toml:"database"`
	TLSCert         string           `toml:"tls_cert"`
	TLSKey          string           `toml:"tls_key"`
	Accounts        []MCPAccountFile `toml:"account"`
	// ListenerFile holds allowed_origins, max_sessions_per_token and
	// the [[mcp.token]] entries.
	ListenerFile[MCPTokenFile]
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
// transport, acting as an [[mcp.account]].
type MCPTokenFile struct {
	TokenFile
	Account string `toml:"account"`
}

func mcpServerDefaults() MCPServerFile {
	return MCPServerFile{QueueMax: DefaultMCPQueueMax, Database: DefaultMCPDatabase, AgentPollSeconds: DefaultAgentPollSeconds,
		QueueMaxBytes: DefaultMCPQueueMaxBytes, SenderRateLimit: DefaultSenderRateLimit, SenderRateBurst: DefaultSenderRateBurst,
		ListenerFile: ListenerFile[MCPTokenFile]{MaxSessionsPerToken: DefaultMaxSessionsPerToken}}
}

// MCPServer is the validated [mcp] table. Paths are absolute.
type MCPServer struct {
	// MCPQueue holds the queue's bounds: mcpface.Queue is a conversion.
	MCPQueue
	// Listener holds AllowedOrigins, MaxSessionsPerToken and Tokens.
	Listener[MCPToken]
	// Database is mcp.database: a SQLite path, resolved against the
	// file's folder, or a postgres:// URL, which may hold a password: log
	// DatabaseRedacted, never this.
	Database string
	// TLSCert and TLSKey are PEM files for the HTTP transport; both or
	// neither is set.
	TLSCert, TLSKey string
	Accounts        []MCPAccount
	// AgentPollSeconds is how often projected agents are polled.
	AgentPollSeconds int
	Agents           []MCPAgent
}

// MCPQueue is the bounds of an `agentgw mcp` account's queue, of [mcp].
type MCPQueue struct {
	QueueMax      int
	QueueMaxBytes int64
	// SenderRateLimit is messages a second one sender may have queued
	// (0: no limit), with bursts of SenderRateBurst.
	SenderRateLimit float64
	SenderRateBurst int
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
	BearerToken
	// Account is the bare JID of the [[mcp.account]] the token acts as.
	Account string
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
	return "mcp accounts=" + strings.Join(jids, ",") + " tokens=" + strconv.Itoa(len(m.Tokens)) + " db=" + m.DatabaseRedacted()
}

// DatabaseRedacted names mcp.database for logs and messages: the path, or
// the URL without its password.
func (m *MCPServer) DatabaseRedacted() string {
	if strings.Contains(m.Database, "://") {
		return Database{DatabaseURL: m.Database}.Redacted()
	}
	return m.Database
}

// MCPConfig is what `agentgw mcp` needs of a configuration file: the
// [mcp] and [log] tables. Such a file needs no [component].
type MCPConfig struct {
	Path string
	Log
	MCP *MCPServer
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
	p := &problems{}
	c := &MCPConfig{Path: path}
	c.Log = f.Log.build(p)
	c.MCP = f.MCP.build(filepath.Dir(path), true, p)
	if len(p.errs) > 0 {
		return nil, p.errs
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
func (m MCPServerFile) build(dir string, needAccount bool, p *problems) *MCPServer {
	out := &MCPServer{MCPQueue: MCPQueue{QueueMax: m.QueueMax}, AgentPollSeconds: m.AgentPollSeconds}
	out.Agents = m.buildAgents(p)
	if m.QueueMax < 1 || m.QueueMax > MaxMCPQueueMax {
		p.bad("mcp.queue_max", "must be between 1 and %d", MaxMCPQueueMax)
	}
	out.QueueMaxBytes, out.SenderRateLimit, out.SenderRateBurst = m.QueueMaxBytes, m.SenderRateLimit, m.SenderRateBurst
	if m.QueueMaxBytes < MinMCPQueueMaxBytes || m.QueueMaxBytes > MaxMCPQueueMaxBytes {
		p.bad("mcp.queue_max_bytes", "must be between %d and %d", MinMCPQueueMaxBytes, MaxMCPQueueMaxBytes)
	}
	if m.SenderRateLimit < 0 || m.SenderRateLimit > 1e6 || m.SenderRateLimit != m.SenderRateLimit {
		p.bad("mcp.sender_rate_limit", "must be messages a second between 0 (no limit) and 1000000")
	}
	if m.SenderRateBurst < 1 || m.SenderRateBurst > MaxSenderRateBurst {
		p.bad("mcp.sender_rate_burst", "must be between 1 and %d", MaxSenderRateBurst)
	}
	out.AllowedOrigins, out.MaxSessionsPerToken = m.limits("mcp", p)
	switch {
	case m.Database == "":
		p.bad("mcp.database", "required")
	case strings.Contains(m.Database, "://"):
		// A PostgreSQL database, which may be the gateway's own: the
		// state of `agentgw mcp` has tables of its own.
		if msg := checkDatabaseURL(m.Database); msg != "" {
			p.bad("mcp.database", "%s", msg)
		} else {
			out.Database = m.Database
		}
	default:
		out.Database = resolve(dir, m.Database)
	}
	switch {
	case m.TLSCert == "" && m.TLSKey == "":
	case m.TLSCert == "":
		p.bad("mcp.tls_cert", "required with mcp.tls_key")
	case m.TLSKey == "":
		p.bad("mcp.tls_key", "required with mcp.tls_cert")
	default:
		out.TLSCert = readableFile("mcp.tls_cert", dir, m.TLSCert, p)
		out.TLSKey = secretFile("mcp.tls_key", dir, m.TLSKey, p)
	}
	if needAccount && len(m.Accounts) == 0 {
		p.bad("mcp.account", "required: at least one [[mcp.account]] with jid and password_file")
	}
	for i, a := range m.Accounts {
		key := fmt.Sprintf("mcp.account[%d]", i)
		acct := MCPAccount{Server: a.Server, AcceptFrom: a.AcceptFrom}
		switch a.AcceptFrom {
		case "":
			acct.AcceptFrom = AcceptSubscribed
		case AcceptSubscribed, AcceptRoster, AcceptAnyone:
		default:
			p.bad(key+".accept_from", "must be one of %q (the default), %q, %q", AcceptSubscribed, AcceptRoster, AcceptAnyone)
		}
		j, ok := bareJID(key+".jid", a.JID, "a bare JID such as alice@example.org", p)
		switch {
		case !ok:
		case out.Account(j.Bare().String()) != nil:
			p.bad(key+".jid", "%s is already configured", j.Bare())
			ok = false
		default:
			acct.JID = j.Bare()
		}
		if a.PasswordFile == "" {
			p.bad(key+".password_file", "required")
			ok = false
		} else {
			acct.PasswordFile = resolve(dir, a.PasswordFile)
			pw, err := readPrivate(acct.PasswordFile)
			if err != nil {
				p.bad(key+".password_file", "%v", err)
				ok = false
			}
			acct.Password = pw
		}
		if a.Server != "" {
			if _, port, err := net.SplitHostPort(a.Server); err != nil || port == "" {
				p.bad(key+".server", "must be host:port")
				ok = false
			}
		}
		if ok {
			out.Accounts = append(out.Accounts, acct)
		}
	}
	out.Tokens = buildTokens(m.ListenerFile, "mcp", dir, p, func(key string, t MCPTokenFile) string {
		j, err := jid.Parse(t.Account)
		switch {
		case t.Account == "":
			p.bad(key+".account", "required: the jid of an [[mcp.account]]")
		case err != nil || out.Account(j.Bare().String()) == nil:
			p.bad(key+".account", "must be the jid of an [[mcp.account]]")
		default:
			return j.Bare().String()
		}
		return t.Account
	}, func(b BearerToken, account string) MCPToken { return MCPToken{b, account} })
	return out
}

// buildAgents validates mcp.agent_poll_seconds and the [[mcp.agent]]
// entries. A prefix must be unique and fit MCP's name grammar, so that
// two agents never project the same MCP name; an empty one keeps the
// agent's tool names, and two such agents must not list the same tool
// (other collisions are found when projected, by mcpface).
func (m MCPServerFile) buildAgents(p *problems) []MCPAgent {
	if m.AgentPollSeconds < MinAgentPollSeconds || m.AgentPollSeconds > MaxAgentPollSeconds {
		p.bad("mcp.agent_poll_seconds", "must be between %d and %d", MinAgentPollSeconds, MaxAgentPollSeconds)
	}
	var out []MCPAgent
	prefixes, unprefixed := map[string]int{}, map[string]int{}
	for i, a := range m.Agents {
		key := fmt.Sprintf("mcp.agent[%d]", i)
		ag := MCPAgent{Prefix: a.Prefix, Tools: a.Tools}
		j, ok := bareJID(key+".jid", a.JID, "the bare JID of an agent endpoint, such as weather@agents.example.org", p)
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
			p.bad(key+".prefix", "must be empty, or 1 to %d characters of A-Z a-z 0-9 . - (MCP's tool name grammar, without _)", MaxAgentPrefixBytes)
			ok = false
		default:
			if prev, dup := prefixes[a.Prefix]; dup {
				p.bad(key+".prefix", "%q is already the prefix of mcp.agent[%d]: the MCP tool names would collide", a.Prefix, prev)
				ok = false
			}
			prefixes[a.Prefix] = i
		}
		switch {
		case len(a.Tools) == 0:
			p.bad(key+".tools", `required: ["*"] or tool names`)
			ok = false
		case len(a.Tools) > 1 && slices.Contains(a.Tools, "*"):
			p.bad(key+".tools", `"*" stands alone`)
			ok = false
		}
		seen := map[string]bool{}
		for k, t := range a.Tools {
			if t == "" || seen[t] {
				p.bad(fmt.Sprintf("%s.tools[%d]", key, k), "must be a tool name, listed once")
				ok = false
			}
			seen[t] = true
			// Two agents without a prefix that name the same tool
			// would project the same MCP name.
			if a.Prefix == "" && t != "*" && t != "" {
				if prev, dup := unprefixed[t]; dup && prev != i {
					p.bad(fmt.Sprintf("%s.tools[%d]", key, k), "%q is also projected without a prefix by mcp.agent[%d]: the MCP tool names would collide", t, prev)
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
