package mcpface

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/internal/pgtest"
	"agentgw/manifest"
	"agentgw/mcpface/account"
	"mellium.im/xmpp/jid"
)

func testManifest(t *testing.T, agent string, tools ...string) *manifest.Manifest {
	t.Helper()
	var b strings.Builder
	for i, n := range tools {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"` + n + `","inputSchema":{"type":"object"}}`)
	}
	m, err := manifest.Parse([]byte(`{"manifestSpecVersion":"0","agent":{"jid":"`+agent+`","name":"a","version":"1"},"tools":[`+b.String()+`]}`), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestProjectNoPrefix: with prefix "" an agent's tools keep their names;
// a name that collides with a tool of the face or of another agent is
// not projected, and the error names both.
func TestProjectNoPrefix(t *testing.T) {
	ctx := context.Background()
	store, err := OpenStore(ctx, pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var log bytes.Buffer
	acct := account.New(account.Options{JID: jid.MustParse("alice@example.org"), Store: store.Store, Queue: account.Queue{QueueMax: 10}})
	s, err := New(ctx, acct, store, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p := &s.agents.proj
	a := AgentProjection{JID: jid.MustParse("a@agents.example"), Tools: []string{"*"}}
	b := AgentProjection{JID: jid.MustParse("b@agents.example"), Tools: []string{"*"}}
	p.project(a, testManifest(t, "a@agents.example", "get_weather", "ledger.append", "PopMessage"))
	p.project(b, testManifest(t, "b@agents.example", "get_weather", "echo"))
	for _, want := range []string{"get_weather", "ledger.append", "echo"} {
		if !p.isProjected(want) {
			t.Errorf("%s not projected: %v", want, p.names)
		}
	}
	if e, _ := p.entries["get_weather"]; e.m.JID != "a@agents.example" {
		t.Errorf("get_weather is %s's", e.m.JID)
	}
	for _, want := range []string{
		`tool=PopMessage name=PopMessage collides_with="the XMPP MCP Server tool PopMessage"`,
		`agent=b@agents.example tool=get_weather name=get_weather collides_with="tool \"get_weather\" of the agent a@agents.example"`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("no %s in the log:\n%s", want, log.String())
		}
	}
	// PopMessage is still the face's own.
	if sc := s.toolScope("PopMessage"); sc == "" || p.isProjected("PopMessage") {
		t.Errorf("PopMessage: scope %q, projected %v", sc, p.isProjected("PopMessage"))
	}
}
