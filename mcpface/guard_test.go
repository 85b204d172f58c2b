package mcpface_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"agentgw/mcpface"
	"agentgw/scope"
)

func post(t *testing.T, url, body string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestHTTPOriginAndHost: a foreign Origin, or a Host that is not loopback
// on a loopback listener, gets 403 on every path and method, tasks/*
// included, with or without a token; an allowed Origin is served.
func TestHTTPOriginAndHost(t *testing.T) {
	o := startOfflineTokens(t, []mcpface.Token{{Value: []byte(fullToken), Account: alice, Scopes: []string{scope.Wildcard}}},
		mcpface.HTTPOptions{AllowedOrigins: []string{"https://app.example.org"}, Metrics: http.NotFoundHandler()})
	base := strings.TrimSuffix(o.url, mcpface.Path)
	auth := "Bearer " + fullToken
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"x"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"x"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"taskId":"x"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"CallAgentTool","arguments":{},"task":{}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
	}
	for _, bad := range []map[string]string{
		{"Origin": "https://evil.example"},
		{"Origin": "null"},
		{"Origin": "https://app.example.org.evil.example"},
		{"Host": "evil.example"},
		{"Host": "rebound.example:8765", "Origin": "https://app.example.org"},
	} {
		for _, withToken := range []bool{false, true} {
			h := map[string]string{}
			for k, v := range bad {
				h[k] = v
			}
			if withToken {
				h["Authorization"] = auth
			}
			for _, path := range []string{mcpface.Path, mcpface.MetricsPath, "/", "/other"} {
				for _, b := range bodies {
					if resp := post(t, base+path, b, h); resp.StatusCode != http.StatusForbidden {
						t.Errorf("%v token=%v POST %s %.40s: %d, want 403", bad, withToken, path, b, resp.StatusCode)
					}
				}
				for _, method := range []string{"GET", "DELETE", "OPTIONS"} {
					req, _ := http.NewRequest(method, base+path, nil)
					for k, v := range h {
						if k == "Host" {
							req.Host = v
						} else {
							req.Header.Set(k, v)
						}
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusForbidden {
						t.Errorf("%v token=%v %s %s: %d, want 403", bad, withToken, method, path, resp.StatusCode)
					}
				}
			}
		}
	}
	// A page of another loopback origin, or of this origin under a name
	// that is not loopback, is refused.
	host := strings.TrimPrefix(base, "http://")
	_, port, _ := net.SplitHostPort(host)
	for _, h := range []map[string]string{
		{"Authorization": auth, "Origin": "http://127.0.0.1:1"},
		{"Authorization": auth, "Origin": "http://localhost:" + port},
		{"Authorization": auth, "Origin": "https://" + host + ".evil.example"},
		{"Authorization": auth, "Origin": "http://evil.example:" + port, "Host": "evil.example:" + port},
	} {
		if resp := post(t, o.url, bodies[0], h); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%v: initialize %d, want 403", h, resp.StatusCode)
		}
	}
	// The allowed Origin, the listener's own loopback origin (a page it
	// served; the conformance suite's dns-rebinding-protection sends it),
	// and none at all, are served.
	for _, h := range []map[string]string{
		{"Authorization": auth, "Origin": "https://APP.example.org"},
		{"Authorization": auth, "Origin": "http://" + host},
		{"Authorization": auth, "Origin": "http://localhost:" + port, "Host": "localhost:" + port},
		{"Authorization": auth},
	} {
		if resp := post(t, o.url, bodies[0], h); resp.StatusCode != http.StatusOK {
			t.Errorf("%v: initialize %d", h, resp.StatusCode)
		}
	}
}

// TestHTTPSessionsPerToken: past max_sessions_per_token a new session is
// refused; closing one makes room.
func TestHTTPSessionsPerToken(t *testing.T) {
	o := startOfflineTokens(t, []mcpface.Token{
		{Value: []byte(fullToken), Account: alice, Scopes: []string{scope.Wildcard}},
		{Value: []byte(sendToken), Account: alice, Scopes: []string{scope.MessageSend}},
	}, mcpface.HTTPOptions{MaxSessionsPerToken: 2})
	a := connect(t, o.url, fullToken)
	connect(t, o.url, fullToken)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	if resp := post(t, o.url, init, map[string]string{"Authorization": "Bearer " + fullToken}); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third session: %d, want 429", resp.StatusCode)
	}
	// Another token has its own sessions.
	connect(t, o.url, sendToken)
	a.Close()
	connect(t, o.url, fullToken)
	_ = context.Background()
}
