package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"agentgw/internal/loopback"
)

// The answerers an [[endpoint]] chat key may name (package chat,
// docs/messaging.md).
const (
	// ChatOff, the default, bounces every message as if the endpoint
	// did not exist.
	ChatOff = "off"
	// ChatBuiltin answers with the demo answerer: it echoes the text and
	// names the endpoint's tools.
	ChatBuiltin = "builtin"
	// ChatExec runs chat_command once per message (agentgw-chat/0).
	ChatExec = "exec"
	// ChatQueue keeps messages in a durable queue for the MCP clients
	// of [[chat.token]] (chat.mcp_listen).
	ChatQueue = "queue"
)

// Limits and defaults of the [chat] table, documented in docs/limits.md.
const (
	// DefaultConsentDays is how long a person's last message lets an
	// endpoint write to them (chat.consent_days).
	DefaultConsentDays = 30
	// MaxConsentDays caps chat.consent_days.
	MaxConsentDays = 3650
	// DefaultChatQueueMax bounds the queued chats of one endpoint
	// (chat.queue_max).
	DefaultChatQueueMax = 1000
	// MaxChatQueueMax caps chat.queue_max.
	MaxChatQueueMax = 1_000_000
)

// chatModes are the chat answerers this build implements, for validation.
var chatModes = []string{ChatOff, ChatBuiltin, ChatExec, ChatQueue}

// ChatFile is the [chat] table as written.
type ChatFile struct {
	ConsentDays int `toml:"consent_days"`
	QueueMax    int `toml:"queue_max"`
	// MCPListen is the host:port of the MCP Streamable HTTP listener of
	// queue endpoints (path /mcp); loopback only, as it is plain HTTP.
	MCPListen string `toml:"mcp_listen"`
	// ListenerFile holds allowed_origins, max_sessions_per_token and the
	// [[chat.token]] entries, as [mcp] does.
	ListenerFile[ChatTokenFile]
}

// ChatTokenFile is one [[chat.token]]: a bearer token that acts as one
// queue endpoint, with the scopes and file rules of [[mcp.token]].
type ChatTokenFile struct {
	TokenFile
	Endpoint string `toml:"endpoint"`
}

// ChatToken is one validated [[chat.token]].
type ChatToken struct {
	BearerToken
	// Endpoint is the bare JID of the queue endpoint the token acts as.
	Endpoint string
}

func chatDefaults() ChatFile {
	return ChatFile{ConsentDays: DefaultConsentDays, QueueMax: DefaultChatQueueMax, ListenerFile: ListenerFile[ChatTokenFile]{MaxSessionsPerToken: DefaultMaxSessionsPerToken}}
}

// Chat is the validated [chat] table.
type Chat struct {
	// Consent is how long after a person's last message an endpoint may
	// still write to them (chat.consent_days).
	Consent time.Duration
	// QueueMax bounds the queued chats of one endpoint.
	QueueMax int
	// Endpoints maps every endpoint whose chat is not off to its
	// answerer (ChatBuiltin, …).
	Endpoints map[string]string
	// MCPListen and the Listener's Tokens serve the queue endpoints to
	// MCP clients.
	MCPListen string
	Listener[ChatToken]
}

func (c ChatFile) build(dir string, endpoints []Endpoint, p *problems) Chat {
	out := Chat{Endpoints: map[string]string{}}
	if c.ConsentDays < 1 || c.ConsentDays > MaxConsentDays {
		p.bad("chat.consent_days", "must be between 1 and %d", MaxConsentDays)
	}
	out.Consent = time.Duration(c.ConsentDays) * 24 * time.Hour
	if c.QueueMax < 1 || c.QueueMax > MaxChatQueueMax {
		p.bad("chat.queue_max", "must be between 1 and %d", MaxChatQueueMax)
	}
	out.QueueMax = c.QueueMax
	for _, ep := range endpoints {
		if ep.Chat != ChatOff {
			out.Endpoints[ep.JID] = ep.Chat
		}
	}
	if l := c.MCPListen; l != "" {
		host, port, err := net.SplitHostPort(l)
		switch {
		case err != nil || port == "":
			p.bad("chat.mcp_listen", "must be host:port, such as \"127.0.0.1:8765\"")
		case !loopback.Host(host):
			p.bad("chat.mcp_listen", "%s is not a loopback address: the listener is plain HTTP; put a TLS proxy in front of a loopback one", host)
		default:
			out.MCPListen = l
		}
	}
	out.AllowedOrigins, out.MaxSessionsPerToken = c.limits("chat", p)
	out.Tokens = buildTokens(c.ListenerFile, "chat", dir, p, func(key string, t ChatTokenFile) string {
		j, ok := bareJID(key+".endpoint", t.Endpoint, "the bare JID of an [[endpoint]] with chat = \"queue\"", p)
		switch {
		case !ok:
		case out.Endpoints[j.String()] != ChatQueue:
			p.bad(key+".endpoint", "%s is not an [[endpoint]] with chat = %q", j, ChatQueue)
		default:
			return j.String()
		}
		return ""
	}, func(b BearerToken, endpoint string) ChatToken { return ChatToken{b, endpoint} })
	if len(out.Tokens) > 0 && c.MCPListen == "" {
		p.bad("chat.mcp_listen", "required with [[chat.token]]")
	}
	return out
}

// chatEndpoint validates the chat keys of an [[endpoint]], which every
// runtime takes.
func chatEndpoint(key string, in EndpointFile, out *Endpoint, p *problems) {
	out.Chat = in.Chat
	if out.Chat == "" {
		out.Chat = ChatOff
	}
	if !slices.Contains(chatModes, out.Chat) {
		quoted := make([]string, len(chatModes))
		for i, m := range chatModes {
			quoted[i] = fmt.Sprintf("%q", m)
		}
		p.bad(key+".chat", "must be one of %s", strings.Join(quoted, ", "))
		out.Chat = ChatOff
	}
	switch {
	case out.Chat == ChatExec && len(in.ChatCommand) == 0:
		p.bad(key+".chat_command", "required for chat = %q", ChatExec)
	case out.Chat == ChatExec:
		prog := in.ChatCommand[0]
		st, err := os.Stat(prog)
		switch {
		case !filepath.IsAbs(prog):
			p.bad(key+".chat_command[0]", "must be an absolute path to an executable file")
		case err != nil:
			p.bad(key+".chat_command[0]", "cannot read: %v", errors.Unwrap(err))
		case st.IsDir() || st.Mode().Perm()&0o111 == 0:
			p.bad(key+".chat_command[0]", "is not an executable file")
		default:
			out.ChatCommand = append([]string(nil), in.ChatCommand...)
		}
	case in.ChatCommand != nil:
		p.bad(key+".chat_command", "only for chat = %q", ChatExec)
	}
}
