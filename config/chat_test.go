package config_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"agentgw/config"

	"mellium.im/xmpp/jid"
)

func TestChatDefaultsOff(t *testing.T) {
	c, err := config.Load(write(t, minimal+`
[[endpoint]]
jid = "demo@agents.example"
runtime = "builtin"
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoints[0].Chat != config.ChatOff || len(c.Chat.Endpoints) != 0 {
		t.Errorf("chat not off by default: %+v %+v", c.Endpoints[0], c.Chat)
	}
	if c.Chat.Consent != config.DefaultConsentDays*24*time.Hour || c.Chat.QueueMax != config.DefaultChatQueueMax {
		t.Errorf("chat defaults = %+v", c.Chat)
	}
	if c.Policy.CanChat(jid.MustParse("alice@home.example"), "demo@agents.example") {
		t.Error("chat granted without a grant")
	}
}

func TestChatConfig(t *testing.T) {
	c, err := config.Load(write(t, minimal+`
[chat]
consent_days = 7
[[endpoint]]
jid = "demo@agents.example"
runtime = "builtin"
chat = "builtin"
[[policy.chat]]
principals = ["home.example"]
endpoints = ["demo@agents.example"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Chat.Endpoints["demo@agents.example"] != config.ChatBuiltin || c.Chat.Consent != 7*24*time.Hour {
		t.Errorf("chat = %+v", c.Chat)
	}
	if !c.Policy.CanChat(jid.MustParse("alice@home.example/x"), "demo@agents.example") {
		t.Error("policy.chat not applied")
	}
}

func TestChatConfigErrors(t *testing.T) {
	_, err := config.Load(write(t, minimal+`
[chat]
consent_days = 0
queue_max = -1
[[endpoint]]
jid = "demo@agents.example"
runtime = "builtin"
chat = "sometimes"
[[endpoint]]
jid = "two@agents.example"
runtime = "builtin"
chat_command = ["/bin/true"]
[[endpoint]]
jid = "three@agents.example"
runtime = "builtin"
chat = "exec"
[[endpoint]]
jid = "four@agents.example"
runtime = "builtin"
chat = "exec"
chat_command = ["relative/prog"]
[[policy.chat]]
principals = ["*"]
endpoints = ["demo@elsewhere.example"]
`))
	if err == nil {
		t.Fatal("bad chat configuration accepted")
	}
	for _, key := range []string{"chat.consent_days", "chat.queue_max", "endpoint[0].chat:", "endpoint[1].chat_command",
		"endpoint[2].chat_command: required", "endpoint[3].chat_command[0]",
		"policy.chat[0].principals[0]", "policy.chat[0].endpoints[0]"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("no error names %s:\n%v", key, err)
		}
	}
}

func TestChatTokens(t *testing.T) {
	dir := t.TempDir()
	tok := dir + "/tok"
	if err := os.WriteFile(tok, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := minimal + `
[[endpoint]]
jid = "q@agents.example"
runtime = "builtin"
chat = "queue"
[[endpoint]]
jid = "b@agents.example"
runtime = "builtin"
chat = "builtin"
`
	c, err := config.Load(write(t, base+`
[chat]
mcp_listen = "127.0.0.1:8765"
[[chat.token]]
file = "`+tok+`"
endpoint = "q@agents.example"
scopes = ["OAUTH.Scope.MCP.XMPP.Tools.Message.Get"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Chat.Tokens) != 1 || c.Chat.Tokens[0].Endpoint != "q@agents.example" || string(c.Chat.Tokens[0].Token) != "0123456789abcdef0123456789abcdef" {
		t.Errorf("tokens = %+v", c.Chat.Tokens)
	}
	if c.Chat.AllowedOrigins != nil || c.Chat.MaxSessionsPerToken != config.DefaultMaxSessionsPerToken {
		t.Errorf("listener defaults: allowed_origins %v, max_sessions_per_token %d", c.Chat.AllowedOrigins, c.Chat.MaxSessionsPerToken)
	}
	c, err = config.Load(write(t, base+`
[chat]
mcp_listen = "127.0.0.1:8765"
allowed_origins = ["HTTPS://App.Example.org"]
max_sessions_per_token = 3
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Chat.AllowedOrigins) != 1 || c.Chat.AllowedOrigins[0] != "https://app.example.org" || c.Chat.MaxSessionsPerToken != 3 {
		t.Errorf("listener keys: allowed_origins %v, max_sessions_per_token %d", c.Chat.AllowedOrigins, c.Chat.MaxSessionsPerToken)
	}
	// A [[chat.token]] needs the 128 bits of an [[mcp.token]].
	short := dir + "/short"
	if err := os.WriteFile(short, []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = config.Load(write(t, base+`
[chat]
mcp_listen = "127.0.0.1:8765"
[[chat.token]]
file = "`+short+`"
endpoint = "q@agents.example"
scopes = ["OAUTH.Scope.MCP.XMPP.Tools.Message.Get"]
`))
	if err == nil || !strings.Contains(err.Error(), "chat.token[0].file: the token in "+short+" is too short") {
		t.Errorf("a 16-character chat token: %v", err)
	}
	_, err = config.Load(write(t, base+`
[chat]
mcp_listen = "192.0.2.1:8765"
allowed_origins = ["https://app.example.org/path"]
max_sessions_per_token = 0
[[chat.token]]
file = "`+tok+`"
endpoint = "b@agents.example"
scopes = ["no.such.scope"]
`))
	if err == nil {
		t.Fatal("bad [[chat.token]] accepted")
	}
	for _, key := range []string{"chat.mcp_listen: 192.0.2.1 is not a loopback address", "chat.token[0].endpoint", "chat.token[0].scopes[0]",
		"chat.allowed_origins[0]", "chat.max_sessions_per_token"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("no error names %s:\n%v", key, err)
		}
	}
}
