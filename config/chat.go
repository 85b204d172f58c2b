package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
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
var chatModes = []string{ChatOff, ChatBuiltin, ChatExec}

// ChatFile is the [chat] table as written.
type ChatFile struct {
	ConsentDays int `toml:"consent_days"`
	QueueMax    int `toml:"queue_max"`
}

func chatDefaults() ChatFile {
	return ChatFile{ConsentDays: DefaultConsentDays, QueueMax: DefaultChatQueueMax}
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
}

func (c ChatFile) build(endpoints []Endpoint, bad func(key, format string, args ...any)) Chat {
	out := Chat{Endpoints: map[string]string{}}
	if c.ConsentDays < 1 || c.ConsentDays > MaxConsentDays {
		bad("chat.consent_days", "must be between 1 and %d", MaxConsentDays)
	}
	out.Consent = time.Duration(c.ConsentDays) * 24 * time.Hour
	if c.QueueMax < 1 || c.QueueMax > MaxChatQueueMax {
		bad("chat.queue_max", "must be between 1 and %d", MaxChatQueueMax)
	}
	out.QueueMax = c.QueueMax
	for _, ep := range endpoints {
		if ep.Chat != ChatOff {
			out.Endpoints[ep.JID] = ep.Chat
		}
	}
	return out
}

// chatEndpoint validates the chat keys of an [[endpoint]], which every
// runtime takes.
func chatEndpoint(key string, in EndpointFile, out *Endpoint, bad func(key, format string, args ...any)) {
	out.Chat = in.Chat
	if out.Chat == "" {
		out.Chat = ChatOff
	}
	if !slices.Contains(chatModes, out.Chat) {
		quoted := make([]string, len(chatModes))
		for i, m := range chatModes {
			quoted[i] = fmt.Sprintf("%q", m)
		}
		bad(key+".chat", "must be one of %s", strings.Join(quoted, ", "))
		out.Chat = ChatOff
	}
	switch {
	case out.Chat == ChatExec && len(in.ChatCommand) == 0:
		bad(key+".chat_command", "required for chat = %q", ChatExec)
	case out.Chat == ChatExec:
		prog := in.ChatCommand[0]
		st, err := os.Stat(prog)
		switch {
		case !filepath.IsAbs(prog):
			bad(key+".chat_command[0]", "must be an absolute path to an executable file")
		case err != nil:
			bad(key+".chat_command[0]", "cannot read: %v", errors.Unwrap(err))
		case st.IsDir() || st.Mode().Perm()&0o111 == 0:
			bad(key+".chat_command[0]", "is not an executable file")
		default:
			out.ChatCommand = append([]string(nil), in.ChatCommand...)
		}
	case in.ChatCommand != nil:
		bad(key+".chat_command", "only for chat = %q", ChatExec)
	}
}
