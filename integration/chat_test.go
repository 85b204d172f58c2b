package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
)

// chatEndpoint chats with the builtin answerer; alice (Prosody) and carol
// (ejabberd, over s2s) may chat with it, bob and admin may not.
const chatEndpoint = "chat-demo@" + harness.ComponentDomain

// chatExecEndpoint answers with examples/chat/echo-chat.sh (chat = "exec").
const chatExecEndpoint = "chat-exec@" + harness.ComponentDomain

func chatConfig() string {
	prog, err := filepath.Abs("../examples/chat/echo-chat.sh")
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`
[[endpoint]]
jid = %[1]q
runtime = "builtin"
chat = "builtin"

[[endpoint]]
jid = %[4]q
runtime = "builtin"
chat = "exec"
chat_command = [%[5]q]

[[policy.chat]]
principals = ["alice@%[2]s", "carol@%[3]s"]
endpoints = [%[1]q, %[4]q]
`, chatEndpoint, harness.HomeDomain, harness.RemoteDomain, chatExecEndpoint, prog)
}

// withChat configures the chat endpoint and restarts the gateway; the
// suite's configuration is restored when the test ends.
func withChat(t *testing.T) {
	t.Helper()
	useConfig(t, chatConfig(), chatEndpoint, chatExecEndpoint)
}

// messagesFrom collects the messages from `from` that arrive at c until
// done returns true for the list so far, or the wait ends.
func messagesFrom(t *testing.T, c *c2s.Client, from string, done func([]string) bool) []string {
	t.Helper()
	var got, other []string
	timeout := time.After(20 * time.Second)
	for !done(got) {
		select {
		case el := <-c.Incoming():
			raw := stanzaText(t, el)
			if strings.HasPrefix(raw, "<message") && (strings.Contains(raw, `from="`+from) || strings.Contains(raw, `from='`+from)) {
				got = append(got, raw)
			} else {
				other = append(other, raw)
			}
		case <-timeout:
			t.Fatalf("messages from %s so far: %q\nothers: %q\ngateway log tail:\n%s", from, got, other, tail(suite.gateway.logText(), 30))
		}
	}
	return got
}

func containing(msgs []string, s string) string {
	for _, m := range msgs {
		if strings.Contains(m, s) {
			return m
		}
	}
	return ""
}

var originID = regexp.MustCompile(`<origin-id[^>]*id=["']([0-9a-f]{32})["']`)

// TestChatBuiltin: alice on Prosody and carol over s2s chat with the
// builtin demo; each gets a receipt, composing, and an answer that
// echoes, names the tools and carries origin-id, reply and store.
func TestChatBuiltin(t *testing.T) {
	need(t)
	withChat(t)
	for _, u := range []struct{ local, domain string }{{"alice", harness.HomeDomain}, {"carol", harness.RemoteDomain}} {
		t.Run(u.local, func(t *testing.T) {
			c := login(t, u.local, u.domain)
			text := "hello from " + u.local
			if err := c.SendRaw(context.Background(), `<message type="chat" id="m-`+u.local+`" to="`+chatEndpoint+`"><body>`+text+`</body><request xmlns="urn:xmpp:receipts"/></message>`); err != nil {
				t.Fatal(err)
			}
			msgs := messagesFrom(t, c, chatEndpoint, func(m []string) bool {
				return containing(m, "You said") != "" && containing(m, "urn:xmpp:receipts") != ""
			})
			if r := containing(msgs, "urn:xmpp:receipts"); !strings.Contains(r, "received") || !strings.Contains(r, "m-"+u.local) {
				t.Errorf("receipt: %s", r)
			}
			if containing(msgs, "composing") == "" {
				t.Errorf("no composing state before the answer: %q", msgs)
			}
			answer := containing(msgs, "You said")
			for _, want := range []string{"You said: " + text, "My tools:", "echo", "urn:xmpp:reply:0", "m-" + u.local, "urn:xmpp:hints", "store", "active"} {
				if !strings.Contains(answer, want) {
					t.Errorf("answer lacks %q: %s", want, answer)
				}
			}
			if originID.FindStringSubmatch(answer) == nil {
				t.Errorf("answer without an origin-id: %s", answer)
			}
		})
	}
}

// TestClientChat: `agentgw client chat` prints the endpoint's answer.
func TestClientChat(t *testing.T) {
	need(t)
	withChat(t)
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := agentgw(ctx, "client", "-jid", "carol@"+harness.RemoteDomain, "-password-file", pw, "-server", suite.env.EjabberdC2S,
		"-json", "chat", chatEndpoint, "hi <there>")
	if err != nil || !strings.Contains(out, `"body":"You said: hi \u003cthere\u003e`) || !strings.Contains(out, `"origin_id":"`) {
		t.Fatalf("client chat: %v\n%s", err, out)
	}
	out, err = agentgw(ctx, "client", "-jid", "bob@"+harness.RemoteDomain, "-password-file", pw, "-server", suite.env.EjabberdC2S,
		"chat", chatEndpoint, "hi")
	if err == nil || !strings.Contains(out, "bounced") {
		t.Fatalf("client chat as bob: %v\n%s", err, out)
	}
}

// TestChatExec: a chat = "exec" endpoint runs its program per message;
// the program sees an opaque conversation handle, the same for the same
// correspondent, and never a JID.
func TestChatExec(t *testing.T) {
	need(t)
	withChat(t)
	c := login(t, "alice", harness.HomeDomain)
	var convs []string
	for i, text := range []string{"first", "second"} {
		if err := c.SendRaw(context.Background(), `<message type="chat" id="e`+fmt.Sprint(i)+`" to="`+chatExecEndpoint+`"><body>`+text+`</body></message>`); err != nil {
			t.Fatal(err)
		}
		msgs := messagesFrom(t, c, chatExecEndpoint, func(m []string) bool { return containing(m, "conversation c-") != "" })
		if containing(msgs, "exec heard: "+text) == "" {
			t.Fatalf("no echo of %q: %q", text, msgs)
		}
		body := regexp.MustCompile(`<body>([^<]*)</body>`).FindStringSubmatch(containing(msgs, "conversation c-"))[1]
		if strings.Contains(body, "alice") || strings.Contains(body, harness.HomeDomain) {
			t.Errorf("the program saw a JID: %s", body)
		}
		convs = append(convs, strings.TrimPrefix(body, "conversation "))
	}
	if convs[0] != convs[1] {
		t.Errorf("conversation handles differ: %q", convs)
	}
}

// TestChatHiddenEqualsNonexistent: an ungranted sender, locally and over
// s2s, gets the bounce of a nonexistent endpoint; and sees no chat
// features in the endpoint's disco#info.
func TestChatHiddenEqualsNonexistent(t *testing.T) {
	need(t)
	withChat(t)
	for _, u := range []struct{ local, domain string }{{"admin", harness.HomeDomain}, {"bob", harness.RemoteDomain}} {
		t.Run(u.local, func(t *testing.T) {
			c := login(t, u.local, u.domain)
			bounce := func(to string) string {
				t.Helper()
				if err := c.SendRaw(context.Background(), `<message type="chat" id="x1" to="`+to+`"><body>hi</body></message>`); err != nil {
					t.Fatal(err)
				}
				msgs := messagesFrom(t, c, to, func(m []string) bool { return len(m) > 0 })
				if !strings.Contains(msgs[0], "service-unavailable") || strings.Contains(msgs[0], "You said") {
					t.Fatalf("to %s: %s", to, msgs[0])
				}
				return stripAddrs(msgs[0])
			}
			hidden, missing := bounce(chatEndpoint), bounce("no-such-chat@"+harness.ComponentDomain)
			if hidden != missing {
				t.Errorf("bounces differ:\n%s\n%s", hidden, missing)
			}
		})
	}
	admin := login(t, "admin", harness.HomeDomain)
	_, info := iq(t, admin, "get", chatEndpoint, `<query xmlns="http://jabber.org/protocol/disco#info"/>`)
	if strings.Contains(info, "urn:xmpp:receipts") {
		t.Errorf("admin, who may not chat, sees chat features: %s", info)
	}
	alice := login(t, "alice", harness.HomeDomain)
	_, info = iq(t, alice, "get", chatEndpoint, `<query xmlns="http://jabber.org/protocol/disco#info"/>`)
	for _, f := range []string{"urn:xmpp:receipts", "http://jabber.org/protocol/chatstates", "urn:xmpp:sid:0", "urn:xmpp:reply:0"} {
		if !strings.Contains(info, f) {
			t.Errorf("alice's disco#info lacks %s: %s", f, info)
		}
	}
}

// TestCheckBlocking: agentgw check-blocking passes for alice on Prosody
// (mod_blocklist) and carol on ejabberd (mod_blocking) over s2s: while
// she blocks the endpoint its message does not reach her, and after the
// unblock one does.
func TestCheckBlocking(t *testing.T) {
	need(t)
	withChat(t)
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct{ account, server string }{
		{"alice@" + harness.HomeDomain, suite.env.ProsodyC2S},
		{"carol@" + harness.RemoteDomain, suite.env.EjabberdC2S},
	} {
		t.Run(u.account, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := agentgw(ctx, "check-blocking", "-config", suite.config, "-endpoint", chatEndpoint,
				"-account", u.account, "-password-file", pw, "-server", u.server)
			if err != nil {
				t.Fatalf("check-blocking: %v\n%s\ngateway log tail:\n%s", err, out, tail(suite.gateway.logText(), 30))
			}
			t.Logf("check-blocking:\n%s", out)
			for _, want := range []string{"probe 1 not delivered: the server bounced it", "probe 2 delivered", "PASS"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
	// Without a chat grant the check refuses to start.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := agentgw(ctx, "check-blocking", "-config", suite.config, "-endpoint", chatEndpoint,
		"-account", "bob@"+harness.RemoteDomain, "-password-file", pw, "-server", suite.env.EjabberdC2S)
	if err == nil || !strings.Contains(out, "no [[policy.chat]] grant") {
		t.Errorf("check-blocking for bob: %v\n%s", err, out)
	}
}
