package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// chatQueueEndpoint keeps its chats for the MCP clients of a [[chat.token]].
const chatQueueEndpoint = "chat-queue@" + harness.ComponentDomain

// chatQueueToken is the bearer token of that endpoint.
const chatQueueToken = "chat-queue-token-0123456789abcdef"

// withChatQueue configures the chat endpoints plus the queue endpoint and
// its MCP listener, restarts the gateway, and returns the MCP URL.
func withChatQueue(t *testing.T) string {
	t.Helper()
	return withChatQueueKeys(t, "")
}

// withChatQueueKeys is withChatQueue with more keys of the [chat] table.
func withChatQueueKeys(t *testing.T, chatKeys string) string {
	t.Helper()
	tokenFile := filepath.Join(suite.dir, "chat-queue.token")
	if err := os.WriteFile(tokenFile, []byte(chatQueueToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	extra := chatConfig() + fmt.Sprintf(`
[[endpoint]]
jid = %[1]q
runtime = "builtin"
chat = "queue"

[[policy.chat]]
principals = ["alice@%[2]s", "carol@%[3]s"]
endpoints = [%[1]q]

[chat]
mcp_listen = %[4]q
%[6]s

[[chat.token]]
file = %[5]q
endpoint = %[1]q
scopes = ["*"]
`, chatQueueEndpoint, harness.HomeDomain, harness.RemoteDomain, addr, tokenFile, chatKeys)
	useConfig(t, extra, chatEndpoint, chatExecEndpoint, chatQueueEndpoint)
	return "http://" + addr + "/mcp"
}

func connectChat(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{chatQueueToken}}, MaxRetries: -1}, legacySession)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// online logs in and sends available presence, so that messages to the
// bare JID reach the session.
func online(t *testing.T, local, domain string) *c2s.Client {
	t.Helper()
	c := login(t, local, domain)
	if err := c.SendRaw(context.Background(), `<presence/>`); err != nil {
		t.Fatal(err)
	}
	return c
}

// sendChat sends a chat with a receipt request and waits for the receipt.
func sendChat(t *testing.T, c *c2s.Client, to, id, text string) {
	t.Helper()
	if err := c.SendRaw(context.Background(), `<message type="chat" id="`+id+`" to="`+to+`"><body>`+text+`</body><request xmlns="urn:xmpp:receipts"/></message>`); err != nil {
		t.Fatal(err)
	}
	messagesFrom(t, c, to, func(m []string) bool { return containing(m, `id='`+id+`'`) != "" && containing(m, "received") != "" })
}

// TestChatQueueMCP: a go-sdk client with a [[chat.token]] acts as the
// endpoint: it reads alice's chat with WaitForMessage and answers it with
// SendChatMessage; without consent, or to someone without a chat grant,
// SendChatMessage is refused.
func TestChatQueueMCP(t *testing.T) {
	need(t)
	url := withChatQueue(t)
	alice := online(t, "alice", harness.HomeDomain)
	cs := connectChat(t, url)
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	want := []string{"AcceptPresenceSubscription", "DeclinePresenceSubscription", "GetMessage", "PopMessage", "SendChatMessage", "WaitForMessage"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}

	sendChat(t, alice, chatQueueEndpoint, "q1", "is anyone there?")
	r := mustSucceed(t, cs, "WaitForMessage", map[string]any{"TimeoutSeconds": 30})
	if r["Body"] != "is anyone there?" || r["FromBareJid"] != "alice@"+harness.HomeDomain || r["Type"] != "Chat" {
		t.Fatalf("WaitForMessage: %v", r)
	}
	mustSucceed(t, cs, "SendChatMessage", map[string]any{"To": "alice@" + harness.HomeDomain, "Message": "yes, the endpoint answers"})
	answer := containing(messagesFrom(t, alice, chatQueueEndpoint, func(m []string) bool { return containing(m, "the endpoint answers") != "" }), "the endpoint answers")
	if originID.FindStringSubmatch(answer) == nil || !strings.Contains(answer, "urn:xmpp:hints") {
		t.Errorf("answer: %s", answer)
	}
	got := mustSucceed(t, cs, "GetMessage", map[string]any{"MessageId": "mid:" + r["MessageId"].(string)})
	if got["Body"] != "is anyone there?" {
		t.Errorf("GetMessage: %v", got)
	}
	mustSucceed(t, cs, "PopMessage", nil)
	if r := mcpCall(t, cs, "PopMessage", nil); r["Success"] != false {
		t.Errorf("PopMessage of an empty queue: %v", r)
	}

	// carol may chat but has not written; bob may not chat at all.
	for _, to := range []string{"carol@" + harness.RemoteDomain, "bob@" + harness.RemoteDomain} {
		r := mcpCall(t, cs, "SendChatMessage", map[string]any{"To": to, "Message": "unsolicited"})
		if r["Success"] != false || !strings.Contains(r["Message"].(string), "not sent") {
			t.Errorf("SendChatMessage to %s without consent: %v", to, r)
		}
	}
	// No tool of this face invokes tools.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "CallAgentTool", Arguments: map[string]any{}}); err == nil {
		t.Error("CallAgentTool exists on the chat face")
	}
}

// TestChatQueueSurvivesKill: chats queued while no MCP client is
// connected, receipted, survive kill -9 of the gateway.
func TestChatQueueSurvivesKill(t *testing.T) {
	need(t)
	url := withChatQueue(t)
	alice := online(t, "alice", harness.HomeDomain)
	sendChat(t, alice, chatQueueEndpoint, "k1", "queued one")
	sendChat(t, alice, chatQueueEndpoint, "k2", "queued two")

	old := suite.gateway
	old.signal(syscall.SIGKILL)
	<-old.done
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := startGateway(ctx)
	if err != nil {
		t.Fatalf("start after kill -9: %v", err)
	}
	suite.gateway = g

	cs := connectChat(t, url)
	for _, want := range []string{"queued one", "queued two"} {
		r := mustSucceed(t, cs, "PopMessage", nil)
		if r["Body"] != want {
			t.Fatalf("PopMessage = %v, want %q", r, want)
		}
	}
}

// TestChatQueueInspector: the MCP inspector CLI over HTTP with a
// [[chat.token]]: tools/list, tools/call and resources.
func TestChatQueueInspector(t *testing.T) {
	need(t)
	bin := inspector(t)
	url := withChatQueue(t)
	alice := online(t, "alice", harness.HomeDomain)
	sendChat(t, alice, chatQueueEndpoint, "i1", "for the inspector")
	call := func(args ...string) map[string]any {
		t.Helper()
		r, err := inspect(t, bin, append([]string{url, "--transport", "http", "--stored-auth-only", "--header", "Authorization: Bearer " + chatQueueToken}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if names := toolNames(call("--method", "tools/list")); !slices.Contains(names, "SendChatMessage") || !slices.Contains(names, "WaitForMessage") || slices.Contains(names, "AddToRoster") {
		t.Errorf("tools over the inspector: %v", names)
	}
	msg := structured(t, call("--method", "tools/call", "--tool-name", "WaitForMessage", "--tool-args-json", `{"TimeoutSeconds":30}`))
	if msg["Body"] != "for the inspector" {
		t.Fatalf("WaitForMessage: %v", msg)
	}
	res := call("--method", "resources/list")
	if !strings.Contains(fmt.Sprint(res), "mid:"+msg["MessageId"].(string)) {
		t.Errorf("resources/list lacks the message: %v", res)
	}
	if s := structured(t, call("--method", "tools/call", "--tool-name", "SendChatMessage", "--tool-args-json", `{"To":"alice@`+harness.HomeDomain+`","Message":"inspected"}`)); s["Success"] != true {
		t.Fatalf("SendChatMessage: %v", s)
	}
	messagesFrom(t, alice, chatQueueEndpoint, func(m []string) bool { return containing(m, "inspected") != "" })
}

// TestChatQueuePresence: the presence tools work on the endpoint's
// virtual subscriptions, whose subscribers are xmpp: resources.
func TestChatQueuePresence(t *testing.T) {
	need(t)
	url := withChatQueue(t)
	alice := login(t, "alice", harness.HomeDomain)
	goOnline(t, alice)
	sendRaw(t, alice, `<presence type="subscribe" to="`+chatQueueEndpoint+`"/>`)
	expectType(t, awaitPresence(t, alice, chatQueueEndpoint, 20*time.Second), "subscribed")

	cs := connectChat(t, url)
	bare := "alice@" + harness.HomeDomain
	mustSucceed(t, cs, "AcceptPresenceSubscription", map[string]any{"From": bare})
	eventually(t, "the subscriber's resource", func() bool {
		res, err := cs.ListResources(context.Background(), nil)
		if err != nil {
			return false
		}
		for _, r := range res.Resources {
			if r.URI == "xmpp:"+bare {
				return true
			}
		}
		return false
	})
	mustSucceed(t, cs, "DeclinePresenceSubscription", map[string]any{"From": bare})
	for {
		p := awaitPresence(t, alice, chatQueueEndpoint, 20*time.Second)
		if p.typ == "unsubscribed" {
			break
		}
	}
	if r := mcpCall(t, cs, "AcceptPresenceSubscription", map[string]any{"From": bare}); r["Success"] != false {
		t.Errorf("Accept after Decline: %v", r)
	}
}

// TestClientChatQueue: `agentgw client chat` to a queue endpoint gets the
// receipt of the queued chat and no answer: it says the chat waits for
// the endpoint's answerer and exits 0, and the chat is in the queue.
func TestClientChatQueue(t *testing.T) {
	need(t)
	url := withChatQueue(t)
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := agentgw(ctx, "client", "-jid", "carol@"+harness.RemoteDomain, "-password-file", pw, "-server", suite.env.EjabberdC2S,
		"-json", "chat", chatQueueEndpoint, "queued hello")
	if err != nil || !strings.Contains(out, `"received":true`) || !strings.Contains(out, `"queued":true`) {
		t.Fatalf("client chat to a queue endpoint: %v\n%s", err, out)
	}
	// Other tests of the suite may have left chats in the queue before it.
	cs := connectChat(t, url)
	for i := 0; ; i++ {
		msg := mustSucceed(t, cs, "PopMessage", map[string]any{})
		if msg["Body"] == "queued hello" {
			break
		}
		if i == 20 {
			t.Fatalf("the chat is not in the queue; last popped: %v", msg)
		}
	}
}
