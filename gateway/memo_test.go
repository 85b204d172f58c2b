package gateway_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/config"
	"agentgw/db"
	"agentgw/gateway"
	"agentgw/policy"
	"agentgw/wire"
)

// memoRead sends one IQ and reports the answer and whether the memo gave it.
func memoRead(e *env, from, to, payload string) (wire.Element, bool) {
	e.t.Helper()
	before := gateway.MemoAnswers()
	el := e.srv.iq(from, to, "get", payload)
	return el, gateway.MemoAnswers() == before+1
}

// withoutAttrs is el's XML with the IQ's own attributes left out, so that
// answers to different ids compare.
func withoutAttrs(t *testing.T, el wire.Element) string {
	t.Helper()
	el.Start.Attr = nil
	return marshal(t, el)
}

// TestMemoRepeats: a repeated payload-less read is answered from the
// memo, with the bytes the fast path wrote the first time, and a hidden
// endpoint and a nonexistent one alike: both are kept and both answer
// <item-not-found/> the same way. The answer is kept at the second read
// (hotpath.Memo.Begin: most reads are asked once), so the memo gives it from the
// third on.
func TestMemoRepeats(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	register(t, e.store, "hidden-no", "Hidden", true)
	e.srv.iq(alice, "a001@"+domain, "get", discoInfo) // checks the store after the writes
	var notFound string
	// kept: the answer is bytes already (a result of frozen bytes, an
	// error of ours); the others are written as before, every time.
	for _, r := range []struct {
		name, from, to, payload string
		kept                    bool
	}{
		{"visible endpoint", carol, "a001@" + domain, discoInfo, true},
		{"hidden endpoint", mall, "hidden-no@" + domain, discoInfo, true},
		{"nonexistent endpoint", mall, "nobody@" + domain, discoInfo, true},
		{"gateway items", alice, domain, `<query xmlns='http://jabber.org/protocol/disco#items'/>`, false},
		{"ping", carol, "a001@" + domain, `<ping xmlns='urn:xmpp:ping'/>`, false},
	} {
		first, hit := memoRead(e, r.from, r.to, r.payload)
		if hit {
			t.Errorf("%s: the first read was answered from the memo", r.name)
		}
		want := withoutAttrs(t, first)
		for i := range 4 {
			el, hit := memoRead(e, r.from, r.to, r.payload)
			if got := withoutAttrs(t, el); got != want {
				t.Errorf("%s, read %d: %s\nwant %s", r.name, i+2, got, want)
			}
			for _, a := range []string{"type", "from", "to"} {
				if v, w := attr(el, a), attr(first, a); v != w {
					t.Errorf("%s, read %d: %s=%q, first %q", r.name, i+2, a, v, w)
				}
			}
			if want := r.kept && i > 0; hit != want {
				t.Errorf("%s, read %d: answered from the memo %v, want %v", r.name, i+2, hit, want)
			}
		}
		switch r.name {
		case "visible endpoint":
			if !strings.Contains(want, "agent-endpoint-info") {
				t.Errorf("visible endpoint: %s", want)
			}
		case "hidden endpoint":
			notFound = want
			if !strings.Contains(want, "item-not-found") {
				t.Errorf("hidden endpoint: %s", want)
			}
		case "nonexistent endpoint":
			if want != notFound {
				t.Errorf("nonexistent and hidden differ:\n%s\n%s", want, notFound)
			}
		}
	}
}

func attr(el wire.Element, name string) string {
	v, _ := el.AttrValue(name)
	return v
}

// TestMemoFollowsChanges: a kept answer is not given once what it was
// read from changes: a policy reload, a write through the gateway's own
// store, and a write by another process (the CLI), seen within the
// store's recheck (250 ms).
func TestMemoFollowsChanges(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t, srv.ln.Addr().String(), "")
	path := filepath.Join(t.TempDir(), "gw.db")
	store, err := db.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	store.SetRecheck(time.Hour) // as openStore, until another process writes
	gw := newGateway(cfg, store)
	runGateway(t, context.Background(), gw)
	srv.accept()
	waitUp(t, gw)
	e := &env{t: t, srv: srv, gw: gw, store: store, cfg: cfg}

	register(t, store, "a001", "Agent One", true)
	to := "a001@" + domain
	e.srv.iq(carol, to, "get", discoInfo)
	if el, _ := memoRead(e, carol, to, discoInfo); !strings.Contains(withoutAttrs(t, el), "agent-endpoint-info") {
		t.Fatalf("visible: %s", marshal(t, el))
	}
	if _, hit := memoRead(e, carol, to, discoInfo); !hit {
		t.Fatal("a repeated read was not answered from the memo")
	}

	// A policy that no longer lets carol see a001.
	keep := gw.Policy()
	gw.SetPolicy(&policy.Policy{})
	el, hit := memoRead(e, carol, to, discoInfo)
	if hit || !strings.Contains(withoutAttrs(t, el), "item-not-found") {
		t.Errorf("after the policy changed: memo %v, %s", hit, marshal(t, el))
	}
	gw.SetPolicy(keep)
	if el, _ := memoRead(e, carol, to, discoInfo); !strings.Contains(withoutAttrs(t, el), "agent-endpoint-info") {
		t.Errorf("after the policy came back: %s", marshal(t, el))
	}

	// A write through the gateway's store: a001 is removed.
	memoRead(e, carol, to, discoInfo)
	if err := store.Deactivate(context.Background(), to); err != nil {
		t.Fatal(err)
	}
	if el, hit := memoRead(e, carol, to, discoInfo); hit || !strings.Contains(withoutAttrs(t, el), "item-not-found") {
		t.Errorf("after its own write: memo %v, %s", hit, marshal(t, el))
	}

	// A write by another process: a001 again, under a store of its own,
	// seen within the store's own recheck.
	memoRead(e, carol, to, discoInfo)
	if _, hit := memoRead(e, carol, to, discoInfo); !hit {
		t.Fatal("the not-found was not kept")
	}
	other, err := db.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	store.SetRecheck(0)
	if err := other.Activate(context.Background(), to, "1.0", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		el, _ := memoRead(e, carol, to, discoInfo)
		if strings.Contains(withoutAttrs(t, el), "agent-endpoint-info") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("another process's write not seen after 3 s: %s", marshal(t, el))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMemoOnlyPayloadless: a read whose payload has content or another
// attribute, or whose node is longer than the memo keeps, is never
// answered from the memo, and an id that needs
// escaping comes back as it was sent.
func TestMemoOnlyPayloadless(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	to := "a001@" + domain
	e.srv.iq(carol, to, "get", discoInfo)
	for _, p := range []string{
		`<query xmlns='http://jabber.org/protocol/disco#info'><x/></query>`,
		`<query xmlns='http://jabber.org/protocol/disco#info'> </query>`,
		`<query xmlns='http://jabber.org/protocol/disco#info' other='1'/>`,
		// A node past maxMemoKey.
		`<query xmlns='http://jabber.org/protocol/disco#info' node='` + strings.Repeat("n", 600) + `'/>`,
	} {
		for i := range 2 {
			if _, hit := memoRead(e, carol, to, p); hit {
				t.Errorf("%s, read %d: answered from the memo", p, i+1)
			}
		}
	}
	memoRead(e, carol, to, discoInfo)
	id := `a"b<c>&d'e`
	before := gateway.MemoAnswers()
	e.srv.write(`<iq xmlns='jabber:component:accept' type='get' id='a&quot;b&lt;c&gt;&amp;d&apos;e' from='` + carol + `' to='` + to + `'>` + discoInfo + `</iq>`)
	for {
		el := e.srv.next()
		if attr(el, "type") == "result" && attr(el, "from") == to {
			if got := attr(el, "id"); got != id {
				t.Errorf("id %q, sent %q", got, id)
			}
			break
		}
	}
	if gateway.MemoAnswers() != before+1 {
		t.Error("the escaped id's read was not answered from the memo")
	}
}

// TestMemoRateLimited: a sender past its rate limit is refused
// <resource-constraint/> when its read is kept as when it is not, and
// the refusal takes no token of another sender.
func TestMemoRateLimited(t *testing.T) {
	const burst = 4
	e := startWith(t, func(cfg *config.Config) { cfg.RateLimit, cfg.RateBurst = 0.01, burst })
	register(t, e.store, "a001", "Agent One", true)
	to := "a001@" + domain
	e.srv.iq(alice, to, "get", discoInfo) // checks the store after the write
	answered, kept, limited := 0, 0, 0
	for range 3 * burst {
		el, hit := memoRead(e, carol, to, discoInfo)
		switch condition(el) {
		case "":
			answered++
			if hit {
				kept++
			}
		case "resource-constraint":
			limited++
		default:
			t.Fatalf("unexpected answer %s", marshal(t, el))
		}
	}
	// The first two reads are answered by the fast path (hotpath.Memo.Begin).
	if answered != burst || limited != 2*burst || kept != burst-2 {
		t.Errorf("%d answered (%d from the memo), %d limited; want %d, %d and %d", answered, kept, limited, burst, burst-2, 2*burst)
	}
	if c := condition(e.srv.iq(alice, to, "get", discoInfo)); c != "" {
		t.Errorf("another sender: %s", c)
	}
}

// TestIdleReleaseDropsCaches: once the stream has been quiet for the
// idle release (a second), the built endpoint answers, the parsed
// addresses and the kept answers are gone, and the next reads answer the
// same bytes as before it, building them again.
func TestIdleReleaseDropsCaches(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	to := "a001@" + domain
	var before []string
	for range 3 {
		el, _ := memoRead(e, carol, to, discoInfo)
		before = append(before, withoutAttrs(t, el))
	}
	if infos, jids, memo := e.gw.Kept(); infos == 0 || jids == 0 || memo == 0 {
		t.Fatalf("after the reads: %d infos, %d addresses, %d kept answers", infos, jids, memo)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		infos, jids, memo := e.gw.Kept()
		if infos == 0 && jids == 0 && memo == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle: %d infos, %d addresses, %d kept answers", infos, jids, memo)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range 3 {
		el, _ := memoRead(e, carol, to, discoInfo)
		if got := withoutAttrs(t, el); got != before[i] {
			t.Errorf("read %d after the release: %s\nbefore: %s", i+1, got, before[i])
		}
	}
	if infos, jids, _ := e.gw.Kept(); infos != 1 || jids == 0 {
		t.Errorf("after the release and a read: %d infos, %d addresses", infos, jids)
	}
}
