package gateway_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"agentgw/db"
	"agentgw/gateway"
	"agentgw/manifest"
	"agentgw/wire"
)

// TestHotReadsOnReadLoop: once the in-memory index is current, the hot
// reads are answered on the read loop, and a hidden endpoint, a granted
// but nonexistent one and an ungranted nonexistent one take that same
// path and answer the same bytes. After a write the next read goes to a
// worker (the index must be checked against the store), and answers the
// same; reads that need the database (a vCard) always do.
func TestHotReadsOnReadLoop(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	register(t, e.store, "a005", "Agent Five", true)
	info := `<query xmlns='http://jabber.org/protocol/disco#info'/>`
	norm := func(el wire.Element) string {
		el.Start.Attr = nil
		return marshal(t, el)
	}
	// fast sends one request and reports whether the read loop answered it.
	fast := func(from, to, typ, payload string) (wire.Element, bool) {
		t.Helper()
		before := gateway.FastAnswers()
		el := e.srv.iq(from, to, typ, payload)
		return el, gateway.FastAnswers() == before+1
	}

	// The first read after the registrations checks the store: a worker.
	if _, ok := fast(alice, "a001@"+domain, "get", info); ok {
		t.Error("the first read after a write was answered on the read loop")
	}
	var want string
	for i, to := range []string{"a005", "hidden-no", "nobody"} {
		el, ok := fast(carol, to+"@"+domain, "get", info)
		if !ok {
			t.Errorf("%s: not answered on the read loop", to)
		}
		if i == 0 {
			want = norm(el)
			golden(t, "endpoint-not-found", want)
		} else if norm(el) != want {
			t.Errorf("%s answers differently:\n%s\n%s", to, marshal(t, el), want)
		}
	}
	for _, r := range []struct{ name, to, typ, payload string }{
		{"visible endpoint", "a001@" + domain, "get", info},
		{"gateway", domain, "get", info},
		{"directory page", domain, "get", `<query xmlns='http://jabber.org/protocol/disco#items' node='urn:xmpp:agent-directory:0'/>`},
		{"search", domain, "set", fmt.Sprintf(searchForm, "", nickField("agent"))},
		{"empty search", domain, "set", fmt.Sprintf(searchForm, "", nickField(""))},
		{"ping", "a001@" + domain, "get", `<ping xmlns='urn:xmpp:ping'/>`},
	} {
		el, ok := fast(carol, r.to, r.typ, r.payload)
		if typ, _ := el.AttrValue("type"); typ != "result" {
			t.Errorf("%s: %s", r.name, marshal(t, el))
		}
		if !ok {
			t.Errorf("%s: not answered on the read loop", r.name)
		}
	}
	if el, ok := fast(alice, "a001@"+domain, "get", `<vCard xmlns='vcard-temp'/>`); ok {
		t.Error("a vCard, which reads the manifest, was answered on the read loop")
	} else if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Errorf("vCard: %s", marshal(t, el))
	}

	// A write through the store: the next read checks, on a worker, and
	// sees the change; the one after is back on the read loop.
	register(t, e.store, "a006", "Agent Six", true)
	if el, ok := fast(alice, "a006@"+domain, "get", info); ok {
		t.Error("the first read after a write was answered on the read loop")
	} else if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Errorf("new endpoint: %s", marshal(t, el))
	}
	if _, ok := fast(alice, "a006@"+domain, "get", info); !ok {
		t.Error("the second read after a write was not answered on the read loop")
	}
}

// TestToolNodeOnReadLoop: a tool node's disco#info needs the parsed
// manifest; once the cache of parsed manifests holds it, the tool node is
// answered on the read loop, with the same bytes as from a worker.
func TestToolNodeOnReadLoop(t *testing.T) {
	e := startAPI(t)
	provision(t, e.store, toolsV2, true)
	req := `<query xmlns='http://jabber.org/protocol/disco#info' node='` + escape(manifest.ToolNode("2.0", "a")) + `'/>`
	var first string
	for i := range 3 {
		before := gateway.FastAnswers()
		el := e.srv.iq(alice, "tools@"+domain, "get", req)
		onLoop := gateway.FastAnswers() == before+1
		el.Start.Attr = nil
		got := marshal(t, el)
		switch i {
		case 0:
			first = got
			if onLoop {
				t.Error("the first tool node read was answered on the read loop")
			}
		default:
			if got != first {
				t.Errorf("read %d:\n%s\nwant %s", i, got, first)
			}
			if !onLoop {
				t.Errorf("read %d of a parsed manifest's tool node went to a worker", i)
			}
		}
	}
}

// TestEndpointInfoFollowsVersion: the built disco#info of an endpoint is
// kept per version; activating another version answers with it at once.
func TestEndpointInfoFollowsVersion(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	info := `<query xmlns='http://jabber.org/protocol/disco#info'/>`
	for range 2 {
		if got := marshal(t, e.srv.iq(alice, "a001@"+domain, "get", info)); !strings.Contains(got, "Agent One") {
			t.Fatalf("version 1.0: %s", got)
		}
	}
	j := "a001@" + domain
	canon := fmt.Sprintf(`{"agent":{"jid":%q,"name":"a001","title":"Agent Uno","version":"2.0"},"manifestSpecVersion":"0","tools":[]}`, j)
	v := db.Version{JID: j, Version: "2.0", Hash: sha256.Sum256([]byte(canon)), Canonical: []byte(canon), Name: "a001", Title: "Agent Uno"}
	ctx := context.Background()
	if _, err := e.store.RegisterVersion(ctx, v, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Activate(ctx, j, "2.0", nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got := marshal(t, e.srv.iq(alice, j, "get", info))
		if !strings.Contains(got, "Agent Uno") || strings.Contains(got, "Agent One") || !strings.Contains(got, "<value>2.0</value>") {
			t.Fatalf("version 2.0: %s", got)
		}
	}
}
