package chatface_test

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/chat"
	"agentgw/chatface"
	"agentgw/db"
	"agentgw/mcpface/layer"
	"agentgw/policy"
	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	endpoint = "desk@agents.example"
	peer     = "alice@home.example"
	token    = "chat-token-0123456789"
	readOnly = "read-token-0123456789"
)

// startChat serves [chat] mcp_listen for one queue endpoint with one chat
// queued, and returns its URL, the store and the message's id.
func startChat(t *testing.T, maxSessions int) (url string, store *db.Store, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store, err := db.Open(ctx, filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	canon := []byte(`{"agent":{"jid":"` + endpoint + `","name":"desk","version":"1"},"manifestSpecVersion":"0","tools":[]}`)
	if _, err := store.RegisterVersion(ctx, db.Version{JID: endpoint, Version: "1", Hash: sha256.Sum256(canon), Canonical: canon, Name: "desk"}, db.OriginAdmin); err != nil {
		t.Fatal(err)
	}
	if err := store.Activate(ctx, endpoint, "1", nil); err != nil {
		t.Fatal(err)
	}
	m, _, err := store.ChatEnqueue(ctx, db.ChatIn{ID: chat.NewID(), Endpoint: endpoint, Sender: peer + "/phone", Recipient: endpoint,
		Type: "chat", Body: "a secret"}, peer, 10)
	if err != nil {
		t.Fatal(err)
	}
	svc := chat.New(chat.Options{Store: store, Endpoints: map[string]chat.Endpoint{endpoint: {Queue: true}}, Consent: time.Hour, QueueMax: 10})
	h := chatface.Handler(ctx, chatface.Options{Chat: svc, Policy: func() *policy.Policy { return nil }, Endpoints: []string{endpoint},
		Tokens: []chatface.Token{
			{Value: []byte(token), Endpoint: endpoint, Scopes: []string{scope.Wildcard}},
			{Value: []byte(readOnly), Endpoint: endpoint, Scopes: []string{scope.ResourcesList, scope.ResourcesRead}},
		}, MaxSessionsPerToken: maxSessions})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL + layer.Path, store, m.ID
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens a session of MCP 2025-11-25 (the revision with sessions).
func connect(t *testing.T, url, tok string) (*mcp.ClientSession, error) {
	return connectAt(t, url, tok, "2025-11-25", nil)
}

// connectAt connects a go-sdk client at revision (one of the current
// revision opens no session).
func connectAt(t *testing.T, url, tok, revision string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{tok}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func post(t *testing.T, url, tok, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// TestMessageNeedsMessageGet: a token with Resources.List and
// Resources.Read but not Tools.Message.Get neither lists the queued chat
// (sender and text) nor reads it, and reading does not remove it; the
// answer is a missing resource's, as on agentgw mcp (the MCP layer's one
// scope check). It failed before: the chat was listed, read and deleted.
func TestMessageNeedsMessageGet(t *testing.T) {
	url, store, id := startChat(t, 0)
	ctx := context.Background()
	// With every scope the chat is listed (once the watcher added it).
	full, err := connect(t, url, token)
	if err != nil {
		t.Fatal(err)
	}
	var lr *mcp.ListResourcesResult
	for i := 0; ; i++ {
		if lr, err = full.ListResources(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if len(lr.Resources) == 1 && lr.Resources[0].URI == "mid:"+id {
			break
		}
		if i == 200 {
			t.Fatalf("full token lists %v", lr.Resources)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cs, err := connect(t, url, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	if lr, err = cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range lr.Resources {
		if layer.IsMessageURI(r.URI) {
			t.Errorf("listed without Tools.Message.Get: %s %q %q", r.URI, r.Title, r.Description)
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mid:" + id}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("read without Tools.Message.Get: %v", err)
	}
	if q, err := store.ChatQueue(ctx, endpoint, 10); err != nil || len(q) != 1 {
		t.Fatalf("queue after the refused read: %v %v", q, err)
	}
}

// TestBatchInitializeRefused: a JSON-RPC batch holding initialize is
// refused (400, Invalid Request), logged and counted, and opens no
// session: the token can still open its two sessions, and no third. It
// failed before: each batch opened a session past max_sessions_per_token.
func TestBatchInitializeRefused(t *testing.T) {
	url, _, _ := startChat(t, 2)
	before := layer.Refused.Value("chat", layer.ReasonBatch)
	for range 20 {
		code, body := post(t, url, token, "["+initialize+"]")
		if code != http.StatusBadRequest || !strings.Contains(body, "-32600") {
			t.Errorf("batch: %d %s", code, body)
		}
	}
	if n := layer.Refused.Value("chat", layer.ReasonBatch) - before; n != 20 {
		t.Errorf("counted %d batch refusals, want 20", n)
	}
	for i := range 2 {
		if _, err := connect(t, url, token); err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
	}
	if code, body := post(t, url, token, initialize); code != http.StatusTooManyRequests || !strings.Contains(body, "max_sessions_per_token") {
		t.Errorf("third session: %d %s", code, body)
	}
}

// TestSessionsCountedAtomically: of 20 initializes at once, with the
// limit at 2, two open a session and the others get 429, each counted.
func TestSessionsCountedAtomically(t *testing.T) {
	url, _, _ := startChat(t, 2)
	before := layer.Refused.Value("chat", layer.ReasonSessions)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := post(t, url, token, initialize)
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusOK] != 2 || codes[http.StatusTooManyRequests] != 18 {
		t.Errorf("answers %v, want 2 × 200 and 18 × 429", codes)
	}
	if n := layer.Refused.Value("chat", layer.ReasonSessions) - before; n != 18 {
		t.Errorf("counted %d session refusals, want 18", n)
	}
}

// TestCurrentRevision: [chat] mcp_listen serves go-sdk's client at its
// default revision (2026-07-28) without a session: 100 calls leave the
// token's two sessions (max_sessions_per_token) whole for older clients.
func TestCurrentRevision(t *testing.T) {
	url, _, id := startChat(t, 2)
	cs, err := connectAt(t, url, token, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != layer.Current || cs.ID() != "" {
		t.Fatalf("negotiated %s, session %q", v, cs.ID())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 100 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "GetMessage", Arguments: map[string]any{"MessageId": id}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %v", i+1, err, res)
		}
	}
	for i := range 2 {
		if _, err := connect(t, url, token); err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
	}
	if code, body := post(t, url, token, initialize); code != http.StatusTooManyRequests {
		t.Errorf("third session: %d %s", code, body)
	}
	// The revision's cache hints and header check, as on agentgw mcp.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	for _, c := range []struct{ method, header, want string }{
		{"tools/list", "tools/list", `"cacheScope":"private"`},
		{"resources/list", "resources/list", `"ttlMs":0`},
		{"tools/list", "resources/list", `-32020`},
	} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+c.method+`","params":{`+meta+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Protocol-Version", layer.Current)
		req.Header.Set("Mcp-Method", c.header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), c.want) {
			t.Errorf("%s (Mcp-Method %s): %d %s, want %s", c.method, c.header, resp.StatusCode, b, c.want)
		}
	}
}
