package layer_test

import (
	"context"
	"errors"
	"testing"

	"agentgw/mcpface/layer"
	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestScopesNoPrompts: no face has prompts nor declares the capability, so
// prompts/list and prompts/get are methods that do not exist (-32601), even
// for a holder of every scope, where go-sdk would answer an empty list (the
// conformance suite's server-stateless checks that a server answering
// prompts/list declares prompts).
func TestScopesNoPrompts(t *testing.T) {
	mw := layer.Scopes(layer.ScopeCheck{
		Held:      func(mcp.Request) scope.Set { return scope.Every() },
		ToolScope: func(string) string { return scope.Wildcard },
	})
	called := false
	h := mw(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		called = true
		return &mcp.ListPromptsResult{}, nil
	})
	for method, req := range map[string]mcp.Request{
		"prompts/list": &mcp.ListPromptsRequest{Params: &mcp.ListPromptsParams{}},
		"prompts/get":  &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "x"}},
	} {
		_, err := h(context.Background(), method, req)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("%s: %v, want -32601", method, err)
		}
	}
	if called {
		t.Error("the prompts methods reached go-sdk")
	}
}
