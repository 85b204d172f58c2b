// Package mcpcall is the tests' MCP client over Streamable HTTP: a go-sdk
// client that sends a bearer token, and tool calls whose structured
// result is checked against their one text item.
package mcpcall

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bearer is an http.RoundTripper that sends Token as a bearer token.
type Bearer struct{ Token string }

// RoundTrip implements http.RoundTripper.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return http.DefaultTransport.RoundTrip(r)
}

// Connect connects a go-sdk client to url with token at revision ("":
// the client's default, the current revision, which opens no session).
// The session is closed when the test ends.
func Connect(t testing.TB, url, token, revision string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: Bearer{token}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Call calls a tool and decodes its structured result, ending the test on
// a failure.
func Call(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := CallTool(ctx, cs, name, args)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CallTool is Call for a goroutine other than the test's: it returns the
// failure instead of ending the test. The result must have one text item
// that agrees with the structured content.
func CallTool(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: structuredContent %s: %w", name, raw, err)
	}
	if len(res.Content) != 1 {
		return nil, fmt.Errorf("%s: content %v", name, res.Content)
	}
	var text map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &text); err != nil || text["Success"] != out["Success"] {
		return nil, fmt.Errorf("%s: text item %v does not match %v", name, res.Content[0], out)
	}
	return out, nil
}
