package mcpclient

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Over Streamable HTTP a tasks-extension request names its task in
// Mcp-Name; the body reaches the server unchanged, and other requests get
// no Mcp-Name from the bridge.
func TestTaskNameHeader(t *testing.T) {
	type seen struct{ name, body string }
	got := make(chan seen, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Get("Mcp-Name"), string(b)}
	}))
	defer ts.Close()
	var version atomic.Value
	version.Store("2026-07-28")
	c := &http.Client{Transport: &headerTransport{base: http.DefaultTransport, version: &version}}
	for _, tc := range []struct{ method, body, name string }{
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-1"}}`, "t-1"},
		{"tasks/update", `{"jsonrpc":"2.0","id":2,"method":"tasks/update","params":{"taskId":"t-2","inputResponses":{}}}`, "t-2"},
		{"tasks/cancel", `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"t-3"}}`, "t-3"},
		{"tools/list", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"taskId":"t-4"}}`, ""},
	} {
		req, err := http.NewRequest("POST", ts.URL, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Mcp-Method", tc.method)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		s := <-got
		if s.name != tc.name || s.body != tc.body {
			t.Errorf("%s: Mcp-Name %q, body %s", tc.method, s.name, s.body)
		}
	}
}
