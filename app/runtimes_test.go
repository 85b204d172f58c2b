package app_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/config"
	"agentgw/db"
	"agentgw/internal/privfile"
	"agentgw/runtime/mcpclient"
	"agentgw/runtime/mcpclient/mcptest"
)

// demo is the JID of a builtin endpoint.
const demo = "demo@agents.example"

// marks records availability reports.
type marks struct {
	mu   sync.Mutex
	seen []string
}

func (m *marks) MarkDown(ep string) { m.add("down " + ep) }
func (m *marks) MarkUp(ep string)   { m.add("up " + ep) }
func (m *marks) add(s string) {
	m.mu.Lock()
	m.seen = append(m.seen, s)
	m.mu.Unlock()
}

func (m *marks) last(ep string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.seen) - 1; i >= 0; i-- {
		if s := m.seen[i]; s == "up "+ep || s == "down "+ep {
			return s
		}
	}
	return ""
}

// TestRuntimesMCP: an mcp endpoint's tools are imported and activated at
// start, beside a builtin endpoint; its presence follows the MCP server,
// not the task service's reports.
func TestRuntimesMCP(t *testing.T) {
	ctx := context.Background()
	store, err := db.Open(ctx, filepath.Join(t.TempDir(), "agentgw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const tools = "tools@agents.example"
	srv := mcptest.New(mcptest.Options{})
	avail := &marks{}
	h, err := app.Runtimes(ctx, store, []config.Endpoint{
		{JID: demo, Runtime: config.RuntimeBuiltin},
		{JID: tools, Runtime: config.RuntimeMCP, MCP: &config.MCPEndpoint{}},
	}, app.RuntimeOptions{
		Availability: avail,
		MCP: func(ep string, o *mcpclient.Options) {
			if ep != tools {
				t.Errorf("options adjusted for %s", ep)
			}
			o.Dial = srv.Dial
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Runtimes[demo] == nil || h.Runtimes[tools] == nil || h.MCP[tools] == nil || h.Runtimes[tools] != h.MCP[tools].Runtime() {
		t.Fatalf("hosted %+v", h)
	}
	st, err := store.Status(ctx, tools)
	if err != nil || st.Origin != db.OriginMCP || st.Active == "" {
		t.Fatalf("status %+v, %v", st, err)
	}
	if imports, err := store.Imports(ctx, tools); err != nil || len(imports) != 1 || len(imports[0].Skipped) != 2 {
		t.Errorf("imports %+v, %v", imports, err)
	}
	if got := avail.last(tools); got != "up "+tools {
		t.Errorf("availability of %s: %q", tools, got)
	}

	// The task service's reports reach other endpoints only.
	filtered := h.Availability(avail)
	filtered.MarkDown(tools)
	filtered.MarkDown(demo)
	if avail.last(tools) != "up "+tools || avail.last(demo) != "down "+demo {
		t.Errorf("filtered reports: %v", avail.seen)
	}

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.MCP[tools].Runtime().Status().State != mcpclient.StateClosed {
		if time.Now().After(deadline) {
			t.Fatal("the MCP runtime was not closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRuntimesMCPOptionsError names the [[endpoint]] entry.
func TestRuntimesMCPOptionsError(t *testing.T) {
	ctx := context.Background()
	store, err := db.Open(ctx, filepath.Join(t.TempDir(), "agentgw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, err = app.Runtimes(ctx, store, []config.Endpoint{
		{JID: demo, Runtime: config.RuntimeBuiltin},
		{JID: "tools@agents.example", Runtime: config.RuntimeMCP, MCP: &config.MCPEndpoint{}},
	}, app.RuntimeOptions{})
	if err == nil || err.Error() != "endpoint[1]: mcp: exactly one of command and url must be set" {
		t.Errorf("error %v", err)
	}
}

// TestRuntimesPrivateWorkDir: an exec endpoint with no dir runs in a
// 0700 directory of its own under the state directory, whatever the
// umask, never in the shared temporary directory.
func TestRuntimesPrivateWorkDir(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	state := t.TempDir()
	store, err := db.Open(ctx, filepath.Join(state, "agentgw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := app.Runtimes(ctx, store, []config.Endpoint{
		{JID: "tool@agents.example", Runtime: config.RuntimeExec, Command: []string{"/bin/true"}},
	}, app.RuntimeOptions{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, d := range []string{filepath.Join(state, "run"), filepath.Join(state, "run", privfile.WorkDirName("tool@agents.example"))} {
		info, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if m := info.Mode().Perm(); !info.IsDir() || m != 0o700 {
			t.Errorf("%s: mode %04o, want a 0700 directory", d, m)
		}
	}
}
