package mcpface_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentgw/internal/mcpcall"
	"agentgw/internal/pgtest"
	"agentgw/mcpface"
	"agentgw/mcpface/account"
	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

const (
	fullToken = "full-token-0123456789"
	sendToken = "send-token-0123456789"
	alice     = "alice@example.org"
)

// offline is an HTTP MCP server for an account that never connects, with
// two messages already queued.
type offline struct {
	url   string
	store *mcpface.Store
	acct  *account.Account
	srv   *mcpface.Server
	ids   []string
}

func startOffline(t *testing.T) *offline {
	t.Helper()
	return startOfflineTokens(t, []mcpface.Token{
		{Value: []byte(fullToken), Account: alice, Scopes: []string{scope.Wildcard}},
		{Value: []byte(sendToken), Account: alice, Scopes: []string{scope.MessageSend}},
	}, mcpface.HTTPOptions{})
}

func startOfflineTokens(t *testing.T, tokens []mcpface.Token, opts mcpface.HTTPOptions) *offline {
	t.Helper()
	ctx := context.Background()
	store := openStore(t, pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db")))
	o := &offline{store: store}
	for _, body := range []string{"first", "second"} {
		typ := "Chat"
		st, _, err := store.Push(ctx, alice, account.MessageResponse{From: "bob@remote.example/phone", FromBareJid: "bob@remote.example", Body: body, Type: &typ}, 10)
		if err != nil {
			t.Fatal(err)
		}
		o.ids = append(o.ids, st.ID)
	}
	acct := account.New(account.Options{JID: jid.MustParse(alice), Store: store.Store, Queue: account.Queue{QueueMax: 10}})
	o.acct = acct
	srv, err := mcpface.New(ctx, acct, store, mcpface.Options{CheckScopes: true})
	if err != nil {
		t.Fatal(err)
	}
	o.srv = srv
	h := mcpface.NewHTTPHandler(map[string]*mcpface.Server{alice: srv}, tokens, opts)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	o.url = hs.URL + mcpface.Path
	return o
}

// connect opens a session of MCP 2025-11-25 (the revision with sessions).
func connect(t *testing.T, url, token string) *mcp.ClientSession {
	return connectAt(t, url, token, "2025-11-25", nil)
}

// connectAt connects a go-sdk client at revision (one of the current
// revision opens no session).
func connectAt(t *testing.T, url, token, revision string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return mcpcall.Connect(t, url, token, revision, opts)
}

// call calls a tool and decodes its structured result.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	return mcpcall.Call(t, cs, name, args)
}

// callTool is call for a goroutine other than the test's: it returns the
// failure instead of ending the test.
var callTool = mcpcall.CallTool

func TestHTTPUnauthorized(t *testing.T) {
	o := startOffline(t)
	for _, h := range []string{"", "Bearer wrong-token-000000000", "Basic " + fullToken} {
		req, _ := http.NewRequest("POST", o.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%q: %d %q", h, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
}

// seedProps are the seed's Properties: Can Destroy, Is Idempotent.
var seedProps = map[string][2]bool{
	"AcceptPresenceSubscription":    {false, false},
	"AddToRoster":                   {false, false},
	"DeclinePresenceSubscription":   {false, false},
	"GetMessage":                    {true, false},
	"PopMessage":                    {true, false},
	"RemoveFromRoster":              {true, false},
	"RequestPresenceSubscription":   {false, true},
	"RequestPresenceUnsubscription": {true, true},
	"SendChatMessage":               {false, false},
	"UpdateRosterItem":              {true, true},
}

func TestHTTPToolsAndScopes(t *testing.T) {
	o := startOffline(t)
	ctx := context.Background()
	full := connect(t, o.url, fullToken)
	if v := full.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %s", v)
	}
	list, err := full.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if p, ok := seedProps[tl.Name]; ok {
			a := tl.Annotations
			if a.ReadOnlyHint || *a.DestructiveHint != p[0] || a.IdempotentHint != p[1] || !*a.OpenWorldHint {
				t.Errorf("%s annotations %+v, want destroy=%v idempotent=%v", tl.Name, a, p[0], p[1])
			}
		}
		// CallAgentTool returns whatever result the agent's tool has.
		if tl.OutputSchema == nil && tl.Name != "CallAgentTool" {
			t.Errorf("%s has no outputSchema", tl.Name)
		}
	}
	want := []string{"AcceptPresenceSubscription", "AddToRoster", "CallAgentTool", "DeclinePresenceSubscription", "DescribeAgent", "GetMessage",
		"ListAgents", "PopMessage", "RemoveFromRoster", "RequestPresenceSubscription", "RequestPresenceUnsubscription", "SearchAgents",
		"SendChatMessage", "UpdateRosterItem", "WaitForMessage"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v", names)
	}

	send := connect(t, o.url, sendToken)
	list, err = send.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "SendChatMessage" {
		t.Fatalf("send-only token lists %v %v", list, err)
	}
	if _, err := send.CallTool(ctx, &mcp.CallToolParams{Name: "PopMessage"}); err == nil || !strings.Contains(err.Error(), scope.MessageGet) {
		t.Errorf("PopMessage outside scopes: %v", err)
	}
	if _, err := send.ListResources(ctx, nil); err == nil || !strings.Contains(err.Error(), scope.ResourcesList) {
		t.Errorf("resources/list outside scopes: %v", err)
	}
	if _, err := send.ReadResource(ctx, &mcp.ReadResourceParams{URI: account.MessageURI(o.ids[0])}); err == nil || !strings.Contains(err.Error(), scope.ResourcesRead) {
		t.Errorf("resources/read outside scopes: %v", err)
	}
	// The refused calls did nothing: both messages are still queued.
	if l, _ := o.store.List(ctx, alice); len(l) != 2 {
		t.Fatalf("queue after refused calls: %d messages", len(l))
	}
	// Within its scope, the call runs: not connected.
	if r := call(t, send, "SendChatMessage", map[string]any{"To": "bob@remote.example", "Message": "hi"}); r["Success"] != false || !strings.Contains(r["Message"].(string), "not connected") {
		t.Errorf("SendChatMessage offline: %v", r)
	}
}

func TestHTTPMessagesOffline(t *testing.T) {
	o := startOffline(t)
	ctx := context.Background()
	cs := connect(t, o.url, fullToken)
	res, err := cs.ListResources(ctx, nil)
	if err != nil || len(res.Resources) != 2 {
		t.Fatalf("resources %v %v", res, err)
	}
	// WaitForMessage returns the oldest without popping it.
	r := call(t, cs, "WaitForMessage", map[string]any{"TimeoutSeconds": 1})
	if r["Success"] != true || r["Body"] != "first" || r["MessageId"] != o.ids[0] || r["Type"] != "Chat" {
		t.Fatalf("WaitForMessage: %v", r)
	}
	r = call(t, cs, "GetMessage", map[string]any{"MessageId": "mid:" + o.ids[1]})
	if r["Success"] != true || r["Body"] != "second" {
		t.Fatalf("GetMessage by URI: %v", r)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: account.MessageURI(o.ids[0])})
	if err != nil || !strings.Contains(rr.Contents[0].Text, `"Body":"first"`) {
		t.Fatalf("read: %v %v", rr, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: account.MessageURI(o.ids[0])}); err == nil {
		t.Fatal("a read message can be read again")
	}
	r = call(t, cs, "PopMessage", nil)
	if r["Success"] != true || r["Body"] != "second" || r["FromBareJid"] != "bob@remote.example" {
		t.Fatalf("PopMessage: %v", r)
	}
	if r := call(t, cs, "PopMessage", nil); r["Success"] != false {
		t.Fatalf("PopMessage on empty: %v", r)
	}
	if r := call(t, cs, "WaitForMessage", map[string]any{"TimeoutSeconds": 1}); r["Success"] != false || !strings.Contains(r["Message"].(string), "within 1 seconds") {
		t.Fatalf("WaitForMessage timeout: %v", r)
	}
	if res, _ := cs.ListResources(ctx, nil); len(res.Resources) != 0 {
		t.Fatalf("resources left: %v", res.Resources)
	}
}

// Every argument of every tool, given badly, gets Success false and a
// Message naming it.
func TestBadInput(t *testing.T) {
	o := startOffline(t)
	cs := connect(t, o.url, fullToken)
	long := strings.Repeat("x", account.MaxMessageBytes+1)
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"AcceptPresenceSubscription", nil, "From is required"},
		{"AcceptPresenceSubscription", map[string]any{"From": 7}, "From must be a string"},
		{"AcceptPresenceSubscription", map[string]any{"From": "bob@remote.example/res"}, "full JID"},
		{"AcceptPresenceSubscription", map[string]any{"From": "bob@remote.example"}, "no pending presence subscription request"},
		{"DeclinePresenceSubscription", map[string]any{"From": "not a jid@"}, "not a valid JID"},
		{"DeclinePresenceSubscription", map[string]any{"From": alice}, "this account itself"},
		{"AddToRoster", map[string]any{"BareJid": "remote.example"}, "a domain"},
		{"AddToRoster", map[string]any{"BareJid": "bob@remote.example", "NickName": true}, "NickName must be a string"},
		{"AddToRoster", map[string]any{"BareJid": "bob@remote.example", "Groups": "g"}, "Groups must be an array of strings"},
		{"AddToRoster", map[string]any{"BareJid": "bob@remote.example", "Groups": []string{""}}, "group 0 of Groups"},
		{"AddToRoster", map[string]any{"BareJid": "bob@remote.example", "Nick": "x"}, `unknown argument "Nick"`},
		{"UpdateRosterItem", map[string]any{"BareJid": "bob@remote.example"}, "not in the roster"},
		{"UpdateRosterItem", map[string]any{"BareJid": "bob@remote.example", "NickName": "a\nb"}, "NickName must be one line"},
		{"RemoveFromRoster", map[string]any{"BareJid": ""}, "BareJid is empty"},
		{"RemoveFromRoster", map[string]any{"BareJid": "bob@remote.example"}, "not in the roster"},
		{"RequestPresenceSubscription", map[string]any{}, "To is required"},
		{"RequestPresenceSubscription", map[string]any{"To": "bob@remote.example"}, "not connected"},
		{"RequestPresenceUnsubscription", map[string]any{"To": "@x"}, "not a valid JID"},
		{"SendChatMessage", map[string]any{"To": "bob@remote.example"}, "Message is required"},
		{"SendChatMessage", map[string]any{"To": "", "Message": "m"}, "To is empty"},
		{"SendChatMessage", map[string]any{"To": "bob@remote.example", "Message": ""}, "Message is empty"},
		{"SendChatMessage", map[string]any{"To": "bob@remote.example", "Message": long}, "at most"},
		{"SendChatMessage", map[string]any{"To": "bob@remote.example", "Message": "a\x01b"}, "characters XML cannot carry"},
		{"SendChatMessage", map[string]any{"To": "bob@remote.example", "Message": "m", "IsMarkdown": "yes"}, "IsMarkdown must be a boolean"},
		{"SendChatMessage", map[string]any{"To": "bob@remote.example", "Message": "m", "Language": "en_US!"}, "Language"},
		{"GetMessage", map[string]any{"MessageId": "nope"}, "not a message identifier"},
		{"GetMessage", map[string]any{"MessageId": strings.Repeat("a", 32)}, "no received message"},
		{"GetMessage", map[string]any{"MessageId": o.ids[0], "Remove": "no"}, "Remove must be a boolean"},
		{"PopMessage", map[string]any{"Extra": 1}, `unknown argument "Extra"`},
		{"WaitForMessage", map[string]any{"TimeoutSeconds": 301}, "between 1 and 300"},
		{"WaitForMessage", map[string]any{"TimeoutSeconds": 0}, "between 1 and 300"},
		{"WaitForMessage", map[string]any{"TimeoutSeconds": 1.5}, "TimeoutSeconds must be an integer"},
	}
	for _, c := range cases {
		r := call(t, cs, c.tool, c.args)
		if r["Success"] != false || !strings.Contains(r["Message"].(string), c.want) {
			t.Errorf("%s(%v) = %v, want a failure with %q", c.tool, c.args, r, c.want)
		}
	}
	if l, _ := o.store.List(context.Background(), alice); len(l) != 2 {
		t.Fatalf("bad input changed the queue: %d messages", len(l))
	}
}

// An older client gets the revision it asks for.
func TestHTTPOlderProtocol(t *testing.T) {
	o := startOffline(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: o.url, HTTPClient: &http.Client{Transport: mcpcall.Bearer{Token: fullToken}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-06-18" {
		t.Fatalf("negotiated %s", v)
	}
	if r := call(t, cs, "PopMessage", nil); r["Body"] != "first" {
		t.Fatalf("PopMessage: %v", r)
	}
}

// Each token reaches its own account's server and queue.
func TestHTTPTokenPicksAccount(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db")))
	servers := map[string]*mcpface.Server{}
	var tokens []mcpface.Token
	for i, who := range []string{"alice@example.org", "bob@example.org"} {
		if _, _, err := store.Push(ctx, who, account.MessageResponse{Body: "for " + who}, 10); err != nil {
			t.Fatal(err)
		}
		acct := account.New(account.Options{JID: jid.MustParse(who), Store: store.Store, Queue: account.Queue{QueueMax: 10}})
		srv, err := mcpface.New(ctx, acct, store, mcpface.Options{CheckScopes: true})
		if err != nil {
			t.Fatal(err)
		}
		servers[who] = srv
		tokens = append(tokens, mcpface.Token{Value: []byte(strings.Repeat(string(rune('a'+i)), 20)), Account: who, Scopes: []string{"*"}})
	}
	hs := httptest.NewServer(mcpface.HTTPHandler(servers, tokens, nil))
	t.Cleanup(hs.Close) // after the sessions' cleanups

	for i, who := range []string{"alice@example.org", "bob@example.org"} {
		cs := connect(t, hs.URL+mcpface.Path, string(tokens[i].Value))
		if r := call(t, cs, "PopMessage", nil); r["Body"] != "for "+who {
			t.Errorf("token %d: %v", i, r)
		}
	}
}

// TestHTTPTaskOwnerIsTheToken: an HTTP token owns its MCP tasks by its
// value and account, not by its place in [[mcp.token]]: after a restart
// with the tokens reordered (or filtered by -account) another token sees
// nothing, and stdio's tasks are never reachable over HTTP.
func TestHTTPTaskOwnerIsTheToken(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db")))
	now := time.Now()
	for id, owner := range map[string]string{
		"mcptask-full":  mcpface.TokenOwner([]byte(fullToken), alice),
		"mcptask-stdio": "account:" + alice,
	} {
		if err := store.CreateTask(ctx, mcpface.TaskRecord{ID: id, Owner: owner, Account: alice,
			Endpoint: "demo@agents.example", XMPPTaskID: "x-" + id, RequestID: "r-" + id, Tool: "count",
			Status: "working", XMPPState: "accepted", Created: now, Updated: now, RetainUntil: now.Add(time.Hour), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	acct := account.New(account.Options{JID: jid.MustParse(alice), Store: store.Store, Queue: account.Queue{QueueMax: 10}})
	srv, err := mcpface.New(ctx, acct, store, mcpface.Options{CheckScopes: true})
	if err != nil {
		t.Fatal(err)
	}
	// The full token was first when it made its task; now another is.
	other := "other-token-0123456789"
	hs := httptest.NewServer(mcpface.HTTPHandler(map[string]*mcpface.Server{alice: srv}, []mcpface.Token{
		{Value: []byte(other), Account: alice, Scopes: []string{scope.Wildcard}},
		{Value: []byte(fullToken), Account: alice, Scopes: []string{scope.Wildcard}},
	}, nil))
	t.Cleanup(hs.Close)
	list := func(token string) []string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, hs.URL+mcpface.Path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Result struct {
				Tasks []struct {
					TaskID string `json:"taskId"`
				} `json:"tasks"`
			} `json:"result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, tk := range out.Result.Tasks {
			ids = append(ids, tk.TaskID)
		}
		return ids
	}
	if got := list(other); len(got) != 0 {
		t.Errorf("another token sees %v", got)
	}
	if got := list(fullToken); !slices.Equal(got, []string{"mcptask-full"}) {
		t.Errorf("the owning token sees %v", got)
	}
	if o := mcpface.TokenOwner([]byte(fullToken), alice); strings.Contains(o, fullToken) || !strings.HasPrefix(o, "token:") {
		t.Errorf("owner %q", o)
	}
}
