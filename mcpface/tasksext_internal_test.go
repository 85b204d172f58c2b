package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/internal/pgtest"
	"agentgw/manifest"
	"agentgw/mcpface/account"
	"agentgw/mcpface/layer"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// TestExtTasksTaskSupport: a projected tool whose manifest declares its
// execution.taskSupport keeps it on the extension (forbidden is a plain
// call, required answers -32021 to a client without the extension); one
// that declares none is optional, as CallAgentTool is.
func TestExtTasksTaskSupport(t *testing.T) {
	ctx := context.Background()
	store, err := OpenStore(ctx, pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	acct := account.New(account.Options{JID: jid.MustParse("alice@example.org"), Store: store.Store, Queue: account.Queue{QueueMax: 10}})
	s, err := New(ctx, acct, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse([]byte(`{"manifestSpecVersion":"0","agent":{"jid":"a@agents.example","name":"a","version":"1"},"tools":[
		{"name":"sync_only","inputSchema":{"type":"object"},"execution":{"taskSupport":"forbidden"}},
		{"name":"must_task","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},
		{"name":"may_task","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},
		{"name":"plain","inputSchema":{"type":"object"}}]}`), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.agents.proj.project(AgentProjection{JID: jid.MustParse("a@agents.example"), Tools: []string{"*"}}, m)

	for name, want := range map[string]struct {
		support  string
		directed bool
	}{
		"sync_only": {"forbidden", true}, "must_task": {"required", true}, "may_task": {"optional", true},
		"plain": {"optional", false}, "CallAgentTool": {"optional", false}, "PopMessage": {"", false},
	} {
		if support, directed := s.taskSupport(name); support != want.support || directed != want.directed {
			t.Errorf("%s: taskSupport %q directed %v, want %q %v", name, support, directed, want.support, want.directed)
		}
	}

	passed := errors.New("passed on")
	mw := s.extTasks(func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, passed })
	call := func(name string, ext bool) error {
		caps := map[string]any{}
		if ext {
			caps["extensions"] = map[string]any{ExtTasks: map[string]any{}}
		}
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(`{}`),
			Meta: mcp.Meta{layer.MetaProtocolVersion: layer.Current, layer.MetaClientCapabilities: caps}}}
		_, err := mw(ctx, "tools/call", req)
		return err
	}
	var rpcErr *jsonrpc.Error
	if err := call("must_task", false); !errors.As(err, &rpcErr) || rpcErr.Code != codeMissingCapability ||
		!strings.Contains(string(rpcErr.Data), `"requiredCapabilities":{"extensions":{"`+ExtTasks+`":{}}}`) {
		t.Errorf("required tool without the extension: %v", err)
	}
	for _, c := range []struct {
		name string
		ext  bool
	}{{"sync_only", true}, {"sync_only", false}, {"may_task", false}, {"plain", false}, {"PopMessage", true}} {
		if err := call(c.name, c.ext); !errors.Is(err, passed) {
			t.Errorf("%s (extension %v): %v, want a plain call", c.name, c.ext, err)
		}
	}
}
