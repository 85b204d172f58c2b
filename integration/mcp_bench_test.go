package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPMessagePath measures the MCP face's message path end to
// end: `agentgw mcp` over stdio, logged in to Prosody as a fresh account,
// driven by go-sdk's client, with a second Prosody account as the peer.
// Each iteration does both directions, interleaved:
//   - send: SendChatMessage to the peer, until the peer's connection reads
//     the message (tool call, stanza out, Prosody, peer);
//   - receive: the peer sends a chat message, until WaitForMessage returns
//     it (Prosody, the face's queue and its commit, the tool call); the
//     message is then popped, outside the figure.
//
// It reports the p50 of each in µs. It drives only the seed interface's
// tools and flags, so AGENTGW_BINARY may name an older build
// (scripts/bench-compare).
//
//	go test ./integration -run XXX -bench MCPMessagePath -benchtime 300x
func BenchmarkMCPMessagePath(b *testing.B) {
	need(b)
	ctx := context.Background()
	acct := benchMCPAccount(b)
	peer := benchPeer(b)
	peerJID := peer.JID().Bare().String()

	stderr := &syncBuf{}
	cmd := exec.Command(suite.bin, "mcp", "-config", acct.config)
	cmd.Stderr = stderr
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	cancel()
	if err != nil {
		b.Fatalf("connect: %v\n%s", err, stderr)
	}
	defer cs.Close()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "xmpp stream up") {
		if time.Now().After(deadline) {
			b.Fatalf("agentgw mcp: no xmpp stream:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}

	var send, receive []time.Duration
	i := 0
	for b.Loop() {
		i++
		// send
		text := fmt.Sprintf("bench-out-%d", i)
		t0 := time.Now()
		if r := benchCall(b, cs, "SendChatMessage", map[string]any{"To": peerJID, "Message": text}); r["Success"] != true {
			b.Fatalf("SendChatMessage: %v", r)
		}
		awaitBody(b, peer, acct.jid, text)
		send = append(send, time.Since(t0))

		// receive
		text = fmt.Sprintf("bench-in-%d", i)
		t0 = time.Now()
		if err := peer.SendRaw(ctx, `<message type="chat" to="`+acct.jid+`"><body>`+text+`</body></message>`); err != nil {
			b.Fatal(err)
		}
		r := benchCall(b, cs, "WaitForMessage", map[string]any{"TimeoutSeconds": 30})
		receive = append(receive, time.Since(t0))
		if r["Success"] != true || r["Body"] != text || r["FromBareJid"] != peerJID {
			b.Fatalf("WaitForMessage: %v (want %q from %s)\n%s", r, text, peerJID, tail(stderr.String(), 20))
		}
		if p := benchCall(b, cs, "PopMessage", nil); p["MessageId"] != r["MessageId"] {
			b.Fatalf("PopMessage: %v, after WaitForMessage %v", p, r)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(p50(send).Microseconds()), "send-p50-µs")
	b.ReportMetric(float64(p50(receive).Microseconds()), "receive-p50-µs")
}

// benchMCPAccount registers a fresh Prosody account and writes an
// `agentgw mcp` configuration for it that queues every message of the
// peer (accept_from = "anyone", no per-sender rate limit). A build older
// than those keys (which queued every message, unlimited) refuses them as
// unknown, and gets the configuration without them.
func benchMCPAccount(b *testing.B) *mcpAccount {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	local := fmt.Sprintf("mcpbench%d-%d", os.Getpid()%1000, time.Now().UnixNano()%1e9)
	if err := suite.env.Register(ctx, local, harness.HomeDomain, password); err != nil {
		b.Fatal(err)
	}
	a := &mcpAccount{jid: local + "@" + harness.HomeDomain, dir: b.TempDir()}
	writePasswordFile(b, a.dir)
	a.config = filepath.Join(a.dir, "mcp.toml")
	write := func(mcpKeys, accountKeys string) (string, error) {
		body := fmt.Sprintf(`
[log]
level = "info"

[mcp]
queue_max = 1000
%s

[[mcp.account]]
jid = %q
password_file = "account.password"
server = %q
%s
`, mcpKeys, a.jid, suite.env.ProsodyC2S, accountKeys)
		if err := os.WriteFile(a.config, []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
		return agentgw(ctx, "check-config", "-config", a.config)
	}
	out, err := write("sender_rate_limit = 0", `accept_from = "anyone"`)
	if err != nil && strings.Contains(out, "unknown key") {
		out, err = write("", "")
	}
	if err != nil || !strings.Contains(out, "ok: mcp accounts="+a.jid) {
		b.Fatalf("check-config: %v %s", err, out)
	}
	return a
}

// benchPeer registers a fresh Prosody account, logs it in and makes it
// available, so that messages to its bare JID reach it.
func benchPeer(b *testing.B) *c2s.Client {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	local := fmt.Sprintf("peer%d-%d", os.Getpid()%1000, time.Now().UnixNano()%1e9)
	if err := suite.env.Register(ctx, local, harness.HomeDomain, password); err != nil {
		b.Fatal(err)
	}
	c := login(b, local, harness.HomeDomain)
	if el, raw := iq(b, c, "get", "", `<query xmlns='jabber:iq:roster'/>`); attr(el, "type") != "result" {
		b.Fatalf("roster fetch: %s", raw)
	}
	if err := c.SendRaw(ctx, `<presence/>`); err != nil {
		b.Fatal(err)
	}
	return c
}

// benchCall calls a tool and returns its structuredContent.
func benchCall(b *testing.B, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		b.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		b.Fatalf("%s: %s: %v", name, raw, err)
	}
	return out
}

// awaitBody waits until c reads a message from the bare JID from whose
// body is text; other stanzas are skipped.
func awaitBody(b *testing.B, c *c2s.Client, from, text string) {
	b.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case el, ok := <-c.Incoming():
			if !ok {
				b.Fatalf("peer session ended: %v", c.Err())
			}
			if el.Start.Name.Local != "message" {
				continue
			}
			body, _ := el.Child(xmlName("jabber:client", "body"))
			if f := attr(el, "from"); body.Text() == text && (f == from || strings.HasPrefix(f, from+"/")) {
				return
			}
		case <-timeout:
			b.Fatalf("the peer read no message %q from %s", text, from)
		}
	}
}
