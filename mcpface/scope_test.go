package mcpface_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"agentgw/mcpface"
	"agentgw/mcpface/account"
	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scopeTable is the scope table of docs/mcp-server.md (and the agents'
// scopes of docs/mcp.md): what each scope allows.
var scopeTable = map[string][]string{
	scope.PresenceAccept:      {"AcceptPresenceSubscription"},
	scope.PresenceDecline:     {"DeclinePresenceSubscription"},
	scope.PresenceSubscribe:   {"RequestPresenceSubscription"},
	scope.PresenceUnsubscribe: {"RequestPresenceUnsubscription"},
	scope.RosterAdd:           {"AddToRoster"},
	scope.RosterUpdate:        {"UpdateRosterItem"},
	scope.RosterRemove:        {"RemoveFromRoster"},
	scope.MessageSend:         {"SendChatMessage"},
	scope.MessageGet:          {"GetMessage", "PopMessage", "WaitForMessage"},
	scope.AgentsSearch:        {"DescribeAgent", "ListAgents", "SearchAgents"},
	scope.AgentsCall:          {"CallAgentTool"},
	scope.ResourcesList:       nil, // resources/list, templates/list, subscribe, unsubscribe
	scope.ResourcesRead:       nil, // resources/read
}

func tokenFor(sc ...string) []byte {
	return []byte("token-" + strings.Join(sc, "+"))
}

// jsonrpcCode tells the errors apart as the client reports them (go-sdk's
// client wraps the JSON-RPC error in text).
func jsonrpcCode(err error) int64 {
	var je *jsonrpc.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &je):
		return je.Code
	case strings.Contains(err.Error(), "forbidden: "):
		return mcpface.CodeForbidden
	}
	return -1
}

// TestScopeTable checks every row of the scope table with a token that
// holds that scope alone: it lists exactly the row's tools, every other
// tool is refused before it runs, and resources follow their scopes, a
// message (mid:) only with Tools.Message.Get as well.
func TestScopeTable(t *testing.T) {
	if len(scopeTable) != len(scope.All) {
		t.Fatalf("the table has %d rows, scope.All %d scopes", len(scopeTable), len(scope.All))
	}
	var tokens []mcpface.Token
	for _, sc := range scope.All {
		tokens = append(tokens, mcpface.Token{Value: tokenFor(sc), Account: alice, Scopes: []string{sc}})
	}
	pairs := [][]string{
		{scope.ResourcesList, scope.MessageGet},
		{scope.ResourcesRead, scope.MessageGet},
	}
	for _, p := range pairs {
		tokens = append(tokens, mcpface.Token{Value: tokenFor(p...), Account: alice, Scopes: p})
	}
	o := startOfflineTokens(t, tokens, mcpface.HTTPOptions{})
	ctx := context.Background()
	every := map[string]string{}
	for sc, tools := range scopeTable {
		for _, tl := range tools {
			every[tl] = sc
		}
	}
	for _, sc := range scope.All {
		t.Run(strings.TrimPrefix(sc, "OAUTH.Scope.MCP.XMPP."), func(t *testing.T) {
			cs := connect(t, o.url, string(tokenFor(sc)))
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			if want := scopeTable[sc]; !slices.Equal(names, want) {
				t.Errorf("tools/list = %v, want %v", names, want)
			}
			for tool, need := range every {
				if need == sc {
					continue
				}
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
				if jsonrpcCode(err) != mcpface.CodeForbidden || !strings.Contains(err.Error(), need) {
					t.Errorf("%s without %s: %v", tool, need, err)
				}
			}
			_, err = cs.ListResources(ctx, nil)
			if (sc == scope.ResourcesList) != (err == nil) {
				t.Errorf("resources/list: %v", err)
			}
			if err == nil {
				// Resources.List alone sees no message.
				res, _ := cs.ListResources(ctx, nil)
				for _, r := range res.Resources {
					if strings.HasPrefix(r.URI, "mid:") {
						t.Errorf("resources/list shows %s (%q, %q) without Tools.Message.Get", r.URI, r.Title, r.Description)
					}
				}
			}
			_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: account.MessageURI(o.ids[0])})
			switch sc {
			case scope.ResourcesRead:
				// Without Tools.Message.Get, a queued message reads as
				// a missing one does.
				_, missing := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mid:0123456789abcdef0123456789abcdef"})
				if err == nil || missing == nil || jsonrpcCode(err) != jsonrpcCode(missing) || !strings.Contains(err.Error(), "Resource not found") ||
					strings.ReplaceAll(err.Error(), o.ids[0], "X") != strings.ReplaceAll(missing.Error(), "0123456789abcdef0123456789abcdef", "X") {
					t.Errorf("read of a queued message %v, of a missing one %v: they differ", err, missing)
				}
			default:
				if jsonrpcCode(err) != mcpface.CodeForbidden || !strings.Contains(err.Error(), scope.ResourcesRead) {
					t.Errorf("resources/read: %v", err)
				}
			}
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "xmpp:bob@remote.example"}); (sc == scope.ResourcesList) != (err == nil) {
				t.Errorf("resources/subscribe: %v", err)
			}
		})
	}
	// Nothing above popped a message.
	if l, _ := o.store.List(ctx, alice); len(l) != 2 {
		t.Fatalf("queue after the refused reads: %d messages", len(l))
	}
	// With Tools.Message.Get as well, messages are listed and read.
	lister := connect(t, o.url, string(tokenFor(pairs[0]...)))
	res, err := lister.ListResources(ctx, nil)
	var mids int
	for _, r := range res.Resources {
		if strings.HasPrefix(r.URI, "mid:") {
			mids++
		}
	}
	if err != nil || mids != 2 {
		t.Errorf("Resources.List+Message.Get lists %d messages: %v", mids, err)
	}
	reader := connect(t, o.url, string(tokenFor(pairs[1]...)))
	rr, err := reader.ReadResource(ctx, &mcp.ReadResourceParams{URI: account.MessageURI(o.ids[0])})
	if err != nil || !strings.Contains(rr.Contents[0].Text, `"first"`) {
		t.Errorf("Resources.Read+Message.Get read: %v", err)
	}
}

// TestUnknownToolFailsClosed: a tool without a known scope is refused,
// also to a token holding every scope.
func TestUnknownToolFailsClosed(t *testing.T) {
	o := startOffline(t)
	cs := connect(t, o.url, fullToken)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "NoSuchTool"})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("unknown tool: %v", err)
	}
}
