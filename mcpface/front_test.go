package mcpface_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/mcpface"
	"agentgw/mcpface/layer"
	"agentgw/scope"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

func postBody(t *testing.T, url, body string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, "", nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func limitTwo(t *testing.T) *offline {
	return startOfflineTokens(t, []mcpface.Token{{Value: []byte(fullToken), Account: alice, Scopes: []string{scope.Wildcard}}},
		mcpface.HTTPOptions{MaxSessionsPerToken: 2})
}

// TestHTTPBatchInitializeRefused: a JSON-RPC batch holding initialize is
// refused (400, Invalid Request), counted, and opens no session. It
// failed before: 20 of 20 opened a session with the limit at 2.
func TestHTTPBatchInitializeRefused(t *testing.T) {
	o := limitTwo(t)
	auth := map[string]string{"Authorization": "Bearer " + fullToken}
	before := layer.Refused.Value("mcp", layer.ReasonBatch)
	for range 20 {
		if code, body, _ := postBody(t, o.url, "["+initBody+"]", auth); code != http.StatusBadRequest || !strings.Contains(body, "-32600") {
			t.Errorf("batch: %d %s", code, body)
		}
	}
	if n := layer.Refused.Value("mcp", layer.ReasonBatch) - before; n != 20 {
		t.Errorf("counted %d batch refusals, want 20", n)
	}
	connect(t, o.url, fullToken)
	connect(t, o.url, fullToken)
	if code, _, _ := postBody(t, o.url, initBody, auth); code != http.StatusTooManyRequests {
		t.Errorf("third session: %d, want 429", code)
	}
}

// TestHTTPBatchInSession: a batch goes on only inside a session of a
// revision with batches (2025-03-26); in a 2025-11-25 session, or with no
// session, it is refused.
func TestHTTPBatchInSession(t *testing.T) {
	o := limitTwo(t)
	auth := map[string]string{"Authorization": "Bearer " + fullToken}
	batch := `[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]`
	if code, _, _ := postBody(t, o.url, batch, auth); code != http.StatusBadRequest {
		t.Errorf("batch without a session: %d", code)
	}
	for _, c := range []struct {
		version string
		ok      bool
	}{{"2025-03-26", true}, {"2025-11-25", false}} {
		code, body, h := postBody(t, o.url, strings.Replace(initBody, "2025-11-25", c.version, 1), auth)
		id := h.Get("Mcp-Session-Id")
		if code != http.StatusOK || id == "" {
			t.Fatalf("%s initialize: %d %s", c.version, code, body)
		}
		sh := map[string]string{"Authorization": "Bearer " + fullToken, "Mcp-Session-Id": id}
		postBody(t, o.url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sh)
		code, body, _ = postBody(t, o.url, batch, sh)
		if got := code == http.StatusOK && strings.Contains(body, "SendChatMessage"); got != c.ok {
			t.Errorf("%s: batch in session answered %d %.200s", c.version, code, body)
		}
	}
}

// TestHTTPSessionsCountedAtomically: of 20 initializes at once, with the
// limit at 2, two open a session and the others get 429.
func TestHTTPSessionsCountedAtomically(t *testing.T) {
	o := limitTwo(t)
	auth := map[string]string{"Authorization": "Bearer " + fullToken}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := postBody(t, o.url, initBody, auth)
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusOK] != 2 || codes[http.StatusTooManyRequests] != 18 {
		t.Errorf("answers %v, want 2 × 200 and 18 × 429", codes)
	}
}

// TestHTTPIdleSessionReclaimed: at the limit, a session idle for
// layer.ReclaimIdle is closed for a new one (its client gets 404 and
// starts again).
func TestHTTPIdleSessionReclaimed(t *testing.T) {
	old := layer.ReclaimIdle
	layer.ReclaimIdle = 200 * time.Millisecond
	t.Cleanup(func() { layer.ReclaimIdle = old })
	o := limitTwo(t)
	auth := map[string]string{"Authorization": "Bearer " + fullToken}
	_, _, h := postBody(t, o.url, initBody, auth)
	first := h.Get("Mcp-Session-Id")
	postBody(t, o.url, initBody, auth)
	if code, _, _ := postBody(t, o.url, initBody, auth); code != http.StatusTooManyRequests {
		t.Fatalf("third session at once: %d, want 429", code)
	}
	time.Sleep(300 * time.Millisecond)
	if code, body, _ := postBody(t, o.url, initBody, auth); code != http.StatusOK {
		t.Fatalf("third session after the idle time: %d %s", code, body)
	}
	code, _, _ := postBody(t, o.url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		map[string]string{"Authorization": "Bearer " + fullToken, "Mcp-Session-Id": first, "Mcp-Protocol-Version": "2025-11-25"})
	if code != http.StatusNotFound {
		t.Errorf("the reclaimed session answered %d, want 404", code)
	}
}
