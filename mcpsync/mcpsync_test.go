package mcpsync_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"agentgw/db"
	"agentgw/internal/testwait"
	"agentgw/mcpsync"
	"agentgw/runtime/mcpclient"
)

const endpoint = "tools@agents.example"

// server is an MCP server whose tool list a test changes: every change
// sends notifications/tools/list_changed to the connected sessions.
type server struct {
	srv   *sdk.Server
	fails atomic.Int32 // connection attempts still to refuse

	mu       sync.Mutex
	sessions []*sdk.ServerSession
}

func newServer() *server {
	s := &server{srv: sdk.NewServer(&sdk.Implementation{Name: "fixture", Version: "1.0.0"}, nil)}
	s.add("echo", `{"type":"object","properties":{"text":{"type":"string"}}}`)
	// An RE2-incompatible pattern breaks the version-0 rules.
	s.add("lookbehind", `{"type":"object","properties":{"x":{"type":"string","pattern":"(?<=a)b"}}}`)
	return s
}

func (s *server) add(name, schema string) {
	s.srv.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(schema)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name}}}, nil
		})
}

// dial fits mcpclient.Options.Dial.
func (s *server) dial(ctx context.Context) (sdk.Transport, error) {
	if s.fails.Add(-1) >= 0 {
		return nil, errors.New("connection refused")
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sessions = append(s.sessions, ss)
	s.mu.Unlock()
	return ct, nil
}

// drop ends every session, as a crash of the server would.
func (s *server) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		ss.Close()
	}
	s.sessions = nil
}

func newStore(t *testing.T) *db.Store {
	t.Helper()
	s, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "agentgw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newRuntime(t *testing.T, srv *server) *mcpclient.Runtime {
	t.Helper()
	rt, err := mcpclient.New(mcpclient.Options{Dial: srv.dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func TestSync(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	srv := newServer()
	rt := newRuntime(t, srv)

	res, err := mcpsync.Sync(ctx, store, rt, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Registered || !res.Changed || !res.Activated || res.Active != res.Version || res.Tools != 1 ||
		!strings.HasPrefix(res.Version, mcpclient.VersionPrefix+"-") {
		t.Errorf("first sync %+v", res)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Tool != "lookbehind" || !strings.Contains(res.Skipped[0].Reason, "pattern") {
		t.Errorf("skipped %+v", res.Skipped)
	}
	st, err := store.Status(ctx, endpoint)
	if err != nil || st.Origin != db.OriginMCP || st.Active != res.Version {
		t.Errorf("status %+v, %v", st, err)
	}
	v, err := store.ActiveVersion(ctx, endpoint)
	if err != nil || v.Hash != res.Hash || v.Name != "fixture" {
		t.Errorf("active version %+v, %v", v, err)
	}
	imports, err := store.Imports(ctx, endpoint)
	if err != nil || len(imports) != 1 || !imports[0].Latest || len(imports[0].Skipped) != 1 ||
		imports[0].Skipped[0] != (db.SkippedTool{Tool: res.Skipped[0].Tool, Reason: res.Skipped[0].Reason}) {
		t.Errorf("imports %+v, %v", imports, err)
	}

	// The same tools: the same version and hash, and nothing changes.
	again, err := mcpsync.Sync(ctx, store, rt, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if again.Version != res.Version || again.Hash != res.Hash || again.Registered || again.Changed || again.Activated {
		t.Errorf("unchanged sync %+v", again)
	}

	// Another tool: a new version, activated.
	srv.add("reverse", `{"type":"object"}`)
	changed, err := mcpsync.Sync(ctx, store, rt, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if changed.Version == res.Version || !changed.Registered || !changed.Activated || changed.Tools != 2 {
		t.Errorf("changed sync %+v", changed)
	}

	// The JID is checked against the manifest the runtime built.
	if _, err := mcpsync.Sync(ctx, store, importer{rt, "other@agents.example"}, endpoint); err == nil {
		t.Error("a manifest for another JID was accepted")
	}
}

// importer imports for a fixed JID, whatever it is asked.
type importer struct {
	rt  *mcpclient.Runtime
	jid string
}

func (i importer) Import(ctx context.Context, _ string) (*mcpclient.Imported, error) {
	return i.rt.Import(ctx, i.jid)
}

func TestSyncUnreachableChangesNothing(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	srv := newServer()
	srv.fails.Store(100)
	rt, err := mcpclient.New(mcpclient.Options{Dial: srv.dial, ColdStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := mcpsync.Sync(ctx, store, rt, endpoint); err == nil {
		t.Fatal("sync of an unreachable server succeeded")
	}
	if _, err := store.Status(ctx, endpoint); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("status after a failed import: %v", err)
	}
}

// availability records what an Endpoint reports.
type availability struct {
	mu      sync.Mutex
	reports []string
	changed chan struct{}
}

func newAvailability() *availability { return &availability{changed: make(chan struct{}, 100)} }

func (a *availability) MarkDown(ep string) { a.add("down:" + ep) }
func (a *availability) MarkUp(ep string)   { a.add("up:" + ep) }

func (a *availability) add(r string) {
	a.mu.Lock()
	a.reports = append(a.reports, r)
	a.mu.Unlock()
	a.changed <- struct{}{}
}

func (a *availability) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.reports) == 0 {
		return ""
	}
	return a.reports[len(a.reports)-1]
}

// waitFor waits until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, 10*time.Second, what, cond)
}

// newEndpoint hosts the fixture server as an mcp endpoint kept warm.
func newEndpoint(t *testing.T, store *db.Store, srv *server, avail *availability) *mcpsync.Endpoint {
	t.Helper()
	e, err := mcpsync.NewEndpoint(store, endpoint, mcpclient.Options{}, mcpsync.EndpointOptions{
		Availability: avail,
		Adjust: func(o *mcpclient.Options) {
			o.Dial = srv.dial
			o.BackoffMin, o.BackoffMax = 20*time.Millisecond, 50*time.Millisecond
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func activeVersion(t *testing.T, store *db.Store) string {
	t.Helper()
	st, err := store.Status(context.Background(), endpoint)
	if errors.Is(err, db.ErrNotFound) {
		return ""
	} else if err != nil {
		t.Fatal(err)
	}
	return st.Active
}

// TestEndpoint: presence follows the server, and a tools/list_changed
// imports the new list.
func TestEndpoint(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	srv := newServer()
	avail := newAvailability()
	e := newEndpoint(t, store, srv, avail)
	waitFor(t, "the server up", func() bool { return avail.last() == "up:"+endpoint })
	first, err := e.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}

	srv.add("reverse", `{"type":"object"}`)
	waitFor(t, "the changed list imported", func() bool {
		v := activeVersion(t, store)
		return v != "" && v != first.Version
	})
	if imports, _ := store.Imports(ctx, endpoint); len(imports) != 2 {
		t.Errorf("imports %+v", imports)
	}

	// The server goes away: down, then up again after the backoff.
	srv.drop()
	waitFor(t, "the server down", func() bool { return avail.last() == "down:"+endpoint })
	waitFor(t, "the server up again", func() bool { return avail.last() == "up:"+endpoint })
}

// TestEndpointImportsOnceUp: an import that fails while the server is
// unreachable is retried when it comes up; meanwhile the active version
// stays.
func TestEndpointImportsOnceUp(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	srv := newServer()
	// An earlier run's import.
	rt := newRuntime(t, srv)
	old, err := mcpsync.Sync(ctx, store, rt, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()

	srv.add("reverse", `{"type":"object"}`)
	srv.fails.Store(5)
	avail := newAvailability()
	e := newEndpoint(t, store, srv, avail)
	if _, err := e.Sync(ctx); err == nil {
		t.Fatal("the first import succeeded against a server that refuses")
	}
	if v := activeVersion(t, store); v != old.Version {
		t.Errorf("active %s after a failed import, want %s", v, old.Version)
	}
	waitFor(t, "the import once the server is up", func() bool {
		v := activeVersion(t, store)
		return v != old.Version
	})
}
