package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/mcpface"
	"agentgw/mcpface/account"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestChatQueueHTTPHardening: the chat listener ([chat] mcp_listen) has
// the protection of `agentgw mcp -http`: a foreign Origin and a rebound
// Host get 403 on every path, sessions and WaitForMessage calls are
// bounded per token, and idle connections are closed.
func TestChatQueueHTTPHardening(t *testing.T) {
	need(t)
	url := withChatQueueKeys(t, `allowed_origins = ["https://app.example.org"]
max_sessions_per_token = 2`)
	base := strings.TrimSuffix(url, mcpface.Path)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	bodies := []string{initialize,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"PopMessage","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{}}`,
	}
	do := requester(t, base, chatQueueToken)
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Origin": "null"}, {"Host": "rebound.example"}, {"Host": "rebound.example:80"}} {
		for _, path := range []string{mcpface.Path, mcpface.MetricsPath, "/", "/.well-known/oauth-protected-resource"} {
			for _, b := range bodies {
				if code, _ := do("POST", path, b, h); code != http.StatusForbidden {
					t.Errorf("%v POST %s %.50s: %d", h, path, b, code)
				}
			}
			for _, m := range []string{"GET", "DELETE"} {
				if code, _ := do(m, path, "", h); code != http.StatusForbidden {
					t.Errorf("%v %s %s: %d", h, m, path, code)
				}
			}
		}
	}
	// The token's two sessions: a client's, then one the allowed Origin
	// opens right before a third initialize, which is refused. That order
	// keeps both younger than the idle time after which a session may be
	// reclaimed (layer.ReclaimIdle), however slow the machine.
	cs := connectChat(t, url)
	if code, body := do("POST", mcpface.Path, initialize, map[string]string{"Origin": "https://app.example.org"}); code != http.StatusOK {
		t.Errorf("allowed origin: %d %s", code, body)
	}
	code, body := do("POST", mcpface.Path, initialize, nil)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "max_sessions_per_token") {
		t.Errorf("a third session: %d %s", code, body)
	}

	// At most account.MaxWaitsPerToken WaitForMessage calls at once:
	// of one more, one is refused at once, and the others wait.
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused, waited := 0, 0
	for range account.MaxWaitsPerToken + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "WaitForMessage", Arguments: map[string]any{"TimeoutSeconds": 10}})
			if err != nil {
				t.Error(err)
				return
			}
			text := r.Content[0].(*mcp.TextContent).Text
			mu.Lock()
			defer mu.Unlock()
			switch {
			case strings.Contains(text, account.WaitRefused) && time.Since(start) < 5*time.Second:
				refused++
			case strings.Contains(text, "no message in 10 seconds"):
				waited++
			default:
				t.Errorf("WaitForMessage after %v: %s", time.Since(start), text)
			}
		}()
	}
	wg.Wait()
	if refused != 1 || waited != account.MaxWaitsPerToken {
		t.Errorf("%d WaitForMessage calls at once: %d refused, %d waited", account.MaxWaitsPerToken+1, refused, waited)
	}
	if r := chatCall(t, cs, "WaitForMessage", map[string]any{"TimeoutSeconds": 1}); strings.Contains(r, "in progress") {
		t.Errorf("after the waits: %s", r)
	}

	// Idle connections are closed.
	idleClosed(t, strings.TrimPrefix(base, "http://"), "/nowhere", chatQueueToken)
}

// chatCall calls a tool and returns its text.
func chatCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return r.Content[0].(*mcp.TextContent).Text
}
