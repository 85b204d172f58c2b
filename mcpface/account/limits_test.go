package account_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"agentgw/internal/mcpcall"
	"agentgw/internal/pgtest"
	"agentgw/mcpface"
	"agentgw/mcpface/account"
	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

const alice = "alice@example.org"

// served is alice's account, offline, served over Streamable HTTP by the
// whole MCP face (package mcpface), as `agentgw mcp -http` serves it.
type served struct {
	url  string
	acct *account.Account
}

func serveAccount(t *testing.T, tokens []mcpface.Token) served {
	t.Helper()
	ctx := context.Background()
	store, err := mcpface.OpenStore(ctx, pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	acct := account.New(account.Options{JID: jid.MustParse(alice), Store: store.Store, Queue: account.Queue{QueueMax: 10}})
	srv, err := mcpface.New(ctx, acct, store, mcpface.Options{CheckScopes: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcpface.NewHTTPHandler(map[string]*mcpface.Server{alice: srv}, tokens, mcpface.HTTPOptions{}))
	t.Cleanup(hs.Close)
	return served{url: hs.URL + mcpface.Path, acct: acct}
}

// connect opens a session of MCP 2025-11-25 (the revision with sessions).
func connect(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	return mcpcall.Connect(t, url, token, "2025-11-25", nil)
}

var call, callTool = mcpcall.Call, mcpcall.CallTool

// TestWaitsPerToken: a token has at most MaxWaitsPerToken WaitForMessage
// calls in progress; another token is not held back by it.
//
// The waits last until the test queues a message, however slowly the
// machine runs: when they ended by a 3 s timeout instead, a busy machine
// let them end before the probe saw them, and the test failed.
func TestWaitsPerToken(t *testing.T) {
	const fullToken, getToken = "full-token-0123456789", "get-token-0123456789"
	o := serveAccount(t, []mcpface.Token{
		{Value: []byte(fullToken), Account: alice, Scopes: []string{scope.Wildcard}},
		{Value: []byte(getToken), Account: alice, Scopes: []string{scope.MessageGet}},
	})
	full := connect(t, o.url, fullToken)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	type result struct {
		r   map[string]any
		err error
	}
	done := make(chan result, account.MaxWaitsPerToken)
	for range account.MaxWaitsPerToken {
		go func() {
			for {
				r, err := callTool(ctx, full, "WaitForMessage", map[string]any{"TimeoutSeconds": account.MaxWaitSeconds})
				if err == nil && r["Message"] == account.WaitRefused && ctx.Err() == nil {
					// The probe below held a slot for its second;
					// this wait begins once the probe is done.
					time.Sleep(10 * time.Millisecond)
					continue
				}
				done <- result{r, err}
				return
			}
		}()
	}
	// A refused probe proves the four waits in progress: only they and
	// the probe use the token.
	waitFor(t, "the waits to begin", func() bool {
		return call(t, full, "WaitForMessage", map[string]any{"TimeoutSeconds": 1})["Message"] == account.WaitRefused
	})
	other := connect(t, o.url, getToken)
	if r := call(t, other, "WaitForMessage", map[string]any{"TimeoutSeconds": 1}); r["Message"] == account.WaitRefused {
		t.Errorf("another token was refused: %v", r)
	}
	// A message ends the waits; each gives its slot back before it
	// answers, so none is in progress once all have answered.
	typ := "Chat"
	o.acct.Queue(ctx, account.MessageResponse{From: "bob@remote.example/phone", FromBareJid: "bob@remote.example", Body: "wake", Type: &typ})
	for range account.MaxWaitsPerToken {
		res := <-done
		if res.err != nil || res.r["Success"] != true {
			t.Errorf("a wait ended with %v, %v; want the message", res.r, res.err)
		}
	}
	if r := call(t, full, "WaitForMessage", map[string]any{"TimeoutSeconds": 1}); r["Success"] != true {
		t.Errorf("after the waits: %v", r)
	}
}
