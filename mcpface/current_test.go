package mcpface_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentgw/mcpface"
	"agentgw/mcpface/account"
	"agentgw/mcpface/layer"
	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// currentBody is a request of the current revision: its _meta carries
// the revision, the client's capabilities and its info.
func currentBody(id int, method string, params map[string]any) string {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		layer.MetaProtocolVersion:            layer.Current,
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"},
		layer.MetaClientCapabilities:         map[string]any{},
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return string(b)
}

// currentHeaders are the headers of a current-revision request.
func currentHeaders(method, name string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + fullToken, "Mcp-Protocol-Version": layer.Current, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// resultOf decodes the one JSON-RPC answer of a JSON or event-stream body.
func resultOf(t *testing.T, body string) (result map[string]any, code float64) {
	t.Helper()
	for _, l := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			body = d
		}
	}
	var resp struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Code float64 `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	if resp.Error != nil {
		return nil, resp.Error.Code
	}
	return resp.Result, 0
}

// TestCurrentRevision: go-sdk's client at its default revision negotiates
// 2026-07-28 without a session; 100 calls never meet
// max_sessions_per_token (2 here), which older clients still have whole;
// results carry serverInfo and list results their cache hints; a header
// that contradicts the body is refused (HeaderMismatch); and
// subscriptions/listen hears a tool list change.
func TestCurrentRevision(t *testing.T) {
	o := limitTwo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	changed := make(chan struct{}, 4)
	cs := connectAt(t, o.url, fullToken, "", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if v := cs.InitializeResult().ProtocolVersion; v != layer.Current {
		t.Fatalf("negotiated %s", v)
	}
	if si := cs.InitializeResult().ServerInfo; si == nil || si.Name != "agentgw-xmpp" {
		t.Errorf("serverInfo %+v", si)
	}
	if cs.ID() != "" {
		t.Errorf("session id %q on the current revision", cs.ID())
	}
	for i := range 100 {
		out, err := callTool(ctx, cs, "GetMessage", map[string]any{"MessageId": "0123456789abcdef0123456789abcdef"})
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if out["Success"] != false {
			t.Fatalf("call %d: %v", i+1, out)
		}
	}
	// The token's sessions are all still there for older clients.
	connect(t, o.url, fullToken)
	connect(t, o.url, fullToken)
	if code, body, _ := postBody(t, o.url, initBody, map[string]string{"Authorization": "Bearer " + fullToken}); code != http.StatusTooManyRequests {
		t.Errorf("third session: %d %s", code, body)
	}

	code, body, _ := postBody(t, o.url, currentBody(1, "tools/list", nil), currentHeaders("tools/list", ""))
	res, _ := resultOf(t, body)
	if code != http.StatusOK || res["ttlMs"] != float64(layer.ToolsTTL/time.Millisecond) || res["cacheScope"] != layer.CacheScope {
		t.Errorf("tools/list: %d ttlMs %v cacheScope %v", code, res["ttlMs"], res["cacheScope"])
	}
	if meta, _ := res["_meta"].(map[string]any); meta == nil || meta["io.modelcontextprotocol/serverInfo"] == nil {
		t.Errorf("tools/list: no serverInfo in %v", res["_meta"])
	}
	code, body, _ = postBody(t, o.url, currentBody(2, "resources/list", nil), currentHeaders("resources/list", ""))
	if res, _ := resultOf(t, body); code != http.StatusOK || res["ttlMs"] != float64(0) || res["cacheScope"] != layer.CacheScope {
		t.Errorf("resources/list: %d %s", code, body)
	}
	code, body, _ = postBody(t, o.url, currentBody(3, "tools/call", map[string]any{"name": "GetMessage", "arguments": map[string]any{"MessageId": "x"}}),
		currentHeaders("tools/list", "GetMessage"))
	if _, c := resultOf(t, body); code != http.StatusBadRequest || c != -32020 {
		t.Errorf("a contradicting Mcp-Method: %d %s", code, body)
	}
	code, body, _ = postBody(t, o.url, currentBody(4, "tools/call", map[string]any{"name": "GetMessage", "arguments": map[string]any{"MessageId": "x"}}),
		currentHeaders("tools/call", "PopMessage"))
	if _, c := resultOf(t, body); code != http.StatusBadRequest || c != -32020 {
		t.Errorf("a contradicting Mcp-Name: %d %s", code, body)
	}

	// A resource update reaches a current client's subscription (its
	// subscriptions/listen stream).
	updated := make(chan string, 4)
	rs := connectAt(t, o.url, fullToken, "", &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		updated <- r.Params.URI
	}})
	uri := account.ContactURI("bob@remote.example")
	if err := rs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	o.srv.ContactChanged("bob@remote.example")
	select {
	case u := <-updated:
		if u != uri {
			t.Errorf("updated %s", u)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated on subscriptions/listen")
	}

	o.srv.MCP().AddTool(&mcp.Tool{Name: "Extra", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed on subscriptions/listen")
	}
}

// TestCurrentListenScopes: on the current revision, listening to
// resources needs Resources.List, as resources/subscribe does.
func TestCurrentListenScopes(t *testing.T) {
	o := startOffline(t)
	h := currentHeaders("subscriptions/listen", "")
	h["Authorization"] = "Bearer " + sendToken
	code, body, _ := postBody(t, o.url, currentBody(1, "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"xmpp:bob@remote.example"}}}), h)
	if _, c := resultOf(t, body); c != mcpface.CodeForbidden || !strings.Contains(body, scope.ResourcesList) {
		t.Errorf("listen without Resources.List: %d %s", code, body)
	}
}
