package integration

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"agentgw/mcpface/layer"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacySession pins MCP 2025-11-25, the revision with sessions, for the
// tests written against it (the current revision is tested in this file).
var legacySession = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// connectCurrent connects go-sdk's client at its default revision
// (2026-07-28) to an MCP HTTP listener.
func connectCurrent(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "integration-current", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	expectCurrent(t, cs)
	return cs
}

// expectCurrent checks that cs negotiated the current revision, without a
// session, and heard the server's info.
func expectCurrent(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	r := cs.InitializeResult()
	if r.ProtocolVersion != layer.Current || cs.ID() != "" || r.ServerInfo == nil || !strings.HasPrefix(r.ServerInfo.Name, "agentgw-") {
		t.Fatalf("negotiated %s, session %q, serverInfo %+v", r.ProtocolVersion, cs.ID(), r.ServerInfo)
	}
}

// hundredCalls makes 100 calls of a seed tool that reads a missing
// message (no state changes).
func hundredCalls(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for i := range 100 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "GetMessage", Arguments: map[string]any{"MessageId": "0123456789abcdef0123456789abcdef"}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i+1, err, res)
		}
	}
}

// TestMCPCurrentRevision: go-sdk v1.8.0's client at its default revision
// against the real binary, on `agentgw mcp -http` and over stdio:
// 2026-07-28 is negotiated, a seed tool works, and 100 calls open no
// session, so the token still opens its max_sessions_per_token (2)
// sessions for older clients.
func TestMCPCurrentRevision(t *testing.T) {
	a := newMCPAccountWith(t, "", "", "max_sessions_per_token = 2")
	dave := remoteUser(t, "dave")

	t.Run("http", func(t *testing.T) {
		url, _, _ := startMCPHTTP(t, a)
		cs := connectCurrent(t, url, mcpFullToken, nil)
		mustSucceed(t, cs, "SendChatMessage", map[string]any{"To": bareOf(dave), "Message": "at 2026-07-28"})
		if body, _ := awaitMessage(t, dave, a.jid).Child(xmlName("jabber:client", "body")); body.Text() != "at 2026-07-28" {
			t.Fatalf("body %q", body.Text())
		}
		hundredCalls(t, cs)
		connectHTTP(t, url, mcpFullToken)
		connectHTTP(t, url, mcpFullToken)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "third", Version: "1"}, nil)
		if cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{mcpFullToken}}, MaxRetries: -1}, legacySession); err == nil {
			cs.Close()
			t.Fatal("a third 2025-11-25 session past max_sessions_per_token = 2")
		}
		// A current client is never refused for sessions.
		mcpCall(t, connectCurrent(t, url, mcpFullToken, nil), "GetMessage", map[string]any{"MessageId": "x"})
	})

	t.Run("stdio", func(t *testing.T) {
		stderr := &syncBuf{}
		cmd := exec.Command(suite.bin, "mcp", "-config", a.config)
		cmd.Stderr = stderr
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "integration-current", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, stderr)
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != layer.Current {
			t.Fatalf("negotiated %s", v)
		}
		waitMCPLog(t, stderr, "xmpp stream up", 1)
		mustSucceed(t, cs, "SendChatMessage", map[string]any{"To": bareOf(dave), "Message": "stdio at 2026-07-28"})
		if body, _ := awaitMessage(t, dave, a.jid).Child(xmlName("jabber:client", "body")); body.Text() != "stdio at 2026-07-28" {
			t.Fatalf("body %q", body.Text())
		}
		hundredCalls(t, cs)
	})
}

// TestChatQueueCurrentRevision: [chat] mcp_listen serves go-sdk's client
// at 2026-07-28 without a session: 100 calls, then the token's
// max_sessions_per_token (2) sessions still open for older clients.
func TestChatQueueCurrentRevision(t *testing.T) {
	need(t)
	url := withChatQueueKeys(t, "max_sessions_per_token = 2")
	cs := connectCurrent(t, url, chatQueueToken, nil)
	hundredCalls(t, cs)
	connectChat(t, url)
	connectChat(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "third", Version: "1"}, nil)
	if cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{chatQueueToken}}, MaxRetries: -1}, legacySession); err == nil {
		cs.Close()
		t.Fatal("a third 2025-11-25 session past max_sessions_per_token = 2")
	}
}
