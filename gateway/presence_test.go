package gateway_test

// Tests of the legacy surfaces at the gateway: RFC 6121 presence for
// virtual endpoints and the vCard IQ routes (route_legacy.go).

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/legacy"
	"agentgw/policy"
	"agentgw/wire"
)

const aliceBare = "alice@home.example"

// sendPresence writes a presence stanza as the server would route it.
func (f *fakeServer) sendPresence(from, to, typ, id string) {
	f.t.Helper()
	attrs := fmt.Sprintf(`from='%s' to='%s'`, from, to)
	if typ != "" {
		attrs += fmt.Sprintf(` type='%s'`, typ)
	}
	if id != "" {
		attrs += fmt.Sprintf(` id='%s'`, id)
	}
	f.write(`<presence ` + attrs + `/>`)
}

// nextPresence reads the next stanza, which must be a presence.
func (f *fakeServer) nextPresence() wire.Element {
	f.t.Helper()
	el := f.next()
	if el.Start.Name.Local != "presence" {
		f.t.Fatalf("want a presence, got %s", marshalTB(f.t, el))
	}
	return el
}

func marshalTB(t testing.TB, el wire.Element) string {
	t.Helper()
	s, err := wire.Marshal(el.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// randomID matches the id mellium gives a stanza sent without one.
var randomID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// presenceSeq reads n presence stanzas and returns them one per line, for a
// golden file: an id mellium made up reads "random"; an id that answers a
// request stays as it is.
func presenceSeq(t *testing.T, srv *fakeServer, n int) string {
	t.Helper()
	lines := make([]string, n)
	for i := range lines {
		el := srv.nextPresence()
		for j, a := range el.Start.Attr {
			if a.Name.Local == "id" && randomID.MatchString(a.Value) {
				el.Start.Attr[j].Value = "random"
			}
		}
		lines[i] = marshal(t, el)
	}
	return strings.Join(lines, "\n")
}

// expectPresence reads the next presence and checks its type (empty for
// available), from and to.
func expectPresence(t *testing.T, srv *fakeServer, typ, from, to string) wire.Element {
	t.Helper()
	el := srv.nextPresence()
	gotType, _ := el.AttrValue("type")
	gotFrom, _ := el.AttrValue("from")
	gotTo, _ := el.AttrValue("to")
	if gotType != typ || gotFrom != from || gotTo != to {
		t.Fatalf("got %s, want type=%q from=%s to=%s", marshal(t, el), typ, from, to)
	}
	return el
}

func subscribed(t *testing.T, store *db.Store, ep, sub string) bool {
	t.Helper()
	ok, err := store.Subscribed(context.Background(), ep, sub)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestPresenceSubscribeProbeUnsubscribe walks one subscriber through the
// whole life of a subscription.
func TestPresenceSubscribeProbeUnsubscribe(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	ep := "a001@" + domain

	// subscribe: subscribed (with the request's id), then available, both
	// from the endpoint's bare JID to the subscriber's bare JID.
	e.srv.sendPresence(aliceBare, ep, "subscribe", "sub1")
	golden(t, "presence-subscribe", presenceSeq(t, e.srv, 2))
	if !subscribed(t, e.store, ep, aliceBare) {
		t.Fatal("subscription not stored")
	}

	// probe, from a full JID as Prosody sends them at login: the current
	// presence, to that full JID.
	e.srv.sendPresence(alice, ep+"/ignored", "probe", "pr1")
	golden(t, "presence-probe", presenceSeq(t, e.srv, 1))

	// subscribe again: approved again, nothing stored twice.
	e.srv.sendPresence(aliceBare, ep, "subscribe", "")
	expectPresence(t, e.srv, "subscribed", ep, aliceBare)
	expectPresence(t, e.srv, "", ep, aliceBare)

	// unsubscribe: unsubscribed, then unavailable, since alice was shown
	// the endpoint available.
	e.srv.sendPresence(aliceBare, ep, "unsubscribe", "un1")
	golden(t, "presence-unsubscribe", presenceSeq(t, e.srv, 2))
	if subscribed(t, e.store, ep, aliceBare) {
		t.Fatal("subscription not removed")
	}

	// A probe from a non-subscriber is answered unsubscribed, to the bare
	// JID, as for an endpoint that does not exist.
	e.srv.sendPresence(alice, ep, "probe", "pr2")
	expectPresence(t, e.srv, "unsubscribed", ep, aliceBare)
}

// TestPresenceIgnored: approvals and cancellations sent to an endpoint,
// directed presence and presence errors are never answered. A probe sent
// after them goes through the same endpoint queue, so its answer is the
// first thing out only if they produced nothing.
func TestPresenceIgnored(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	ep := "a001@" + domain
	for _, typ := range []string{"subscribed", "unsubscribed", "", "unavailable", "error", "bogus"} {
		e.srv.sendPresence(alice, ep, typ, "x")
	}
	// From our own domain (a loop) nothing is answered either.
	e.srv.sendPresence(domain, ep, "subscribe", "loop")
	e.srv.sendPresence(alice, ep, "probe", "last")
	el := expectPresence(t, e.srv, "unsubscribed", ep, aliceBare)
	if id, _ := el.AttrValue("id"); id != "last" {
		t.Fatalf("first answer is %s", marshal(t, el))
	}
	if subscribed(t, e.store, ep, aliceBare) {
		t.Error("an ignored presence created a subscription")
	}
}

// TestPresenceHiddenLikeNonexistent: subscribe, probe and unsubscribe give
// the same bytes (up to addresses) for a hidden endpoint and a nonexistent
// one, and store nothing.
func TestPresenceHiddenLikeNonexistent(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a005", "Agent Five", true) // active, not granted to carol
	register(t, e.store, "a003", "Agent Three", false)
	// Addresses aside (id included: mellium makes one up), the bytes.
	norm := func(el wire.Element) string {
		var kept []xml.Attr
		for _, a := range el.Start.Attr {
			if a.Name.Local != "from" && a.Name.Local != "to" && a.Name.Local != "id" {
				kept = append(kept, a)
			}
		}
		el.Start.Attr = kept
		return marshal(t, el)
	}
	carolBare := "carol@remote.example"
	for _, typ := range []string{"subscribe", "probe", "unsubscribe"} {
		var answers []string
		// a005 is hidden; a003 is granted to carol but inactive (and she
		// never subscribed); nobody does not exist.
		for _, ep := range []string{"a005@" + domain, "a003@" + domain, "nobody@" + domain} {
			e.srv.sendPresence(carol, ep, typ, "h1")
			el := expectPresence(t, e.srv, "unsubscribed", ep, carolBare)
			answers = append(answers, norm(el))
		}
		if answers[0] != answers[1] || answers[0] != answers[2] {
			t.Errorf("%s: answers differ:\n%s", typ, strings.Join(answers, "\n"))
		}
		golden(t, "presence-unsubscribed", answers[0])
	}
	for _, ep := range []string{"a005@" + domain, "a003@" + domain} {
		if subscribed(t, e.store, ep, carolBare) {
			t.Errorf("a subscription to %s was stored", ep)
		}
	}
}

// TestPresenceFollowsState: deactivation (as by the CLI, through the
// store), reactivation, the runtime availability hook and a policy change
// each make presence follow; availability never reaches disco#info.
func TestPresenceFollowsState(t *testing.T) {
	e := start(t, "")
	ctx := context.Background()
	register(t, e.store, "a001", "Agent One", true)
	ep := "a001@" + domain
	carolBare := "carol@remote.example"
	e.srv.sendPresence(carolBare, ep, "subscribe", "")
	expectPresence(t, e.srv, "subscribed", ep, carolBare)
	expectPresence(t, e.srv, "", ep, carolBare)

	// No bound on how soon: on a loaded machine the watcher's 500 ms
	// poll is only a wish; that it follows at all is what is tested.
	if err := e.store.Deactivate(ctx, ep); err != nil {
		t.Fatal(err)
	}
	expectPresence(t, e.srv, "unavailable", ep, carolBare)
	// While inactive, the subscriber's probe gets unavailable, not
	// unsubscribed: the subscription survives deactivation.
	e.srv.sendPresence(carol, ep, "probe", "")
	expectPresence(t, e.srv, "unavailable", ep, carol)
	if err := e.store.Activate(ctx, ep, "1.0", nil); err != nil {
		t.Fatal(err)
	}
	expectPresence(t, e.srv, "", ep, carolBare)

	info := `<query xmlns='http://jabber.org/protocol/disco#info'/>`
	norm := func(el wire.Element) string {
		el.Start.Attr = nil
		return marshal(t, el)
	}
	up := norm(e.srv.iq(alice, ep, "get", info))
	e.gw.Availability().MarkDown(ep)
	expectPresence(t, e.srv, "unavailable", ep, carolBare)
	e.srv.sendPresence(carol, ep, "probe", "")
	expectPresence(t, e.srv, "unavailable", ep, carol)
	// Availability is volatile: the cacheable disco#info does not change.
	down := norm(e.srv.iq(alice, ep, "get", info))
	if up != down {
		t.Errorf("disco#info changed with availability:\n%s\n%s", up, down)
	}
	// A subscribe while the runtime is down is approved, with no available.
	e.srv.sendPresence(carolBare, ep, "subscribe", "")
	expectPresence(t, e.srv, "subscribed", ep, carolBare)
	e.gw.Availability().MarkUp(ep)
	expectPresence(t, e.srv, "", ep, carolBare)

	// Presence never widens visibility: when the policy stops letting
	// carol see the endpoint, she is shown it unavailable, and her next
	// probe ends the subscription.
	e.gw.SetPolicy(&policy.Policy{})
	expectPresence(t, e.srv, "unavailable", ep, carolBare)
	e.srv.sendPresence(carol, ep, "probe", "")
	expectPresence(t, e.srv, "unsubscribed", ep, carolBare)
	if subscribed(t, e.store, ep, carolBare) {
		t.Error("subscription kept after the policy hid the endpoint")
	}
}

// TestPresenceRemoval: removing an endpoint deletes its subscriptions with
// it; its subscribers are still sent unavailable, and a probe afterwards is
// answered as for an endpoint that never existed.
func TestPresenceRemoval(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	ep := "a001@" + domain
	e.srv.sendPresence(aliceBare, ep, "subscribe", "")
	expectPresence(t, e.srv, "subscribed", ep, aliceBare)
	expectPresence(t, e.srv, "", ep, aliceBare)
	if err := e.store.RemoveEndpoint(context.Background(), ep); err != nil {
		t.Fatal(err)
	}
	expectPresence(t, e.srv, "unavailable", ep, aliceBare)
	e.srv.sendPresence(alice, ep, "probe", "")
	expectPresence(t, e.srv, "unsubscribed", ep, aliceBare)
}

// TestPresenceStreamRestart: on a new stream, every subscriber of an
// available endpoint is sent available again (the store kept the
// subscription); subscribers of inactive endpoints are not.
func TestPresenceStreamRestart(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	register(t, e.store, "a003", "Agent Three", true)
	for _, ep := range []string{"a001@" + domain, "a003@" + domain} {
		e.srv.sendPresence(aliceBare, ep, "subscribe", "")
		expectPresence(t, e.srv, "subscribed", ep, aliceBare)
		expectPresence(t, e.srv, "", ep, aliceBare)
	}
	if err := e.store.Deactivate(context.Background(), "a003@"+domain); err != nil {
		t.Fatal(err)
	}
	expectPresence(t, e.srv, "unavailable", "a003@"+domain, aliceBare)

	e.srv.conn.Close()
	e.srv.accept()
	golden(t, "presence-start", presenceSeq(t, e.srv, 1))
	// And the new stream answers presence as before.
	e.srv.sendPresence(alice, "a001@"+domain, "probe", "")
	expectPresence(t, e.srv, "", "a001@"+domain, alice)
}

// TestPresenceShutdown: when the gateway stops, subscribers shown an
// endpoint available are sent unavailable before the stream closes.
func TestPresenceShutdown(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t, srv.ln.Addr().String(), "")
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	register(t, store, "a001", "Agent One", true)
	register(t, store, "a002", "Agent Two", true)
	ctx := context.Background()
	for _, sub := range []string{aliceBare, "carol@remote.example"} {
		if _, err := store.Subscribe(ctx, "a001@"+domain, sub); err != nil {
			t.Fatal(err)
		}
	}
	gw := newGateway(cfg, store)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- gw.Run(rctx) }()
	srv.accept()
	// The subscriptions were stored before the gateway started: the first
	// stream announces them.
	seen := map[string]bool{}
	for range 2 {
		el := srv.nextPresence()
		to, _ := el.AttrValue("to")
		if typ, _ := el.AttrValue("type"); typ != "" {
			t.Fatalf("at start: %s", marshal(t, el))
		}
		seen[to] = true
	}
	cancel()
	for range 2 {
		el := srv.nextPresence()
		to, _ := el.AttrValue("to")
		if typ, _ := el.AttrValue("type"); typ != "unavailable" || !seen[to] {
			t.Fatalf("at shutdown: %s", marshal(t, el))
		}
		delete(seen, to)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

// profileManifest is a canonical manifest with every profile member.
func profileManifest(j, homepage, avatar string) string {
	b, _ := json.Marshal(map[string]any{
		"agent": map[string]string{
			"jid": j, "name": "profiled", "title": "Profiled Agent", "version": "2.0",
			"description": "Shows its profile.", "homepage": homepage, "avatarUrl": avatar, "vendor": "Example",
		},
		"manifestSpecVersion": "0",
		"tools":               []any{},
	})
	return string(b)
}

// TestVCardRoutes: both vCards of a visible endpoint, the same error for a
// hidden and a nonexistent one, features on endpoints only, and the URLs
// never fetched.
func TestVCardRoutes(t *testing.T) {
	e := start(t, "")
	var hits atomic.Int64
	web := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer web.Close()
	ctx := context.Background()
	ep := "a001@" + domain
	canon := profileManifest(ep, web.URL+"/home", web.URL+"/avatar.png")
	v := db.Version{JID: ep, Version: "2.0", Hash: sha256.Sum256([]byte(canon)), Canonical: []byte(canon),
		Name: "profiled", Title: "Profiled Agent", Description: "Shows its profile."}
	if _, err := e.store.RegisterVersion(ctx, v, db.OriginAdmin); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Activate(ctx, ep, "2.0", nil); err != nil {
		t.Fatal(err)
	}
	register(t, e.store, "a005", "Agent Five", true) // hidden from carol

	temp := `<vCard xmlns='vcard-temp'/>`
	v4 := `<vcard xmlns='urn:ietf:params:xml:ns:vcard-4.0'/>`
	for _, tc := range []struct{ name, payload string }{{"vcard-temp-iq", temp}, {"vcard4-iq", v4}} {
		got := strings.ReplaceAll(marshal(t, e.srv.iq(alice, ep, "get", tc.payload)), web.URL, "https://web.example")
		golden(t, tc.name, got)
	}
	// The payloads are exactly the legacy wire types of the profile.
	el := e.srv.iq(carol, ep, "get", temp)
	card, err := legacy.ParseVCardTemp(el.Children()[0])
	if want := (legacy.VCardTemp{FN: "Profiled Agent", Nickname: "profiled", PhotoExtval: web.URL + "/avatar.png", URL: web.URL + "/home", Desc: "Shows its profile."}); err != nil || card != want {
		t.Errorf("vcard-temp = %+v, %v", card, err)
	}

	norm := func(el wire.Element) string {
		el.Start.Attr = nil
		return marshal(t, el)
	}
	for _, payload := range []string{temp, v4} {
		hidden := norm(e.srv.iq(carol, "a005@"+domain, "get", payload))
		missing := norm(e.srv.iq(carol, "nobody@"+domain, "get", payload))
		if hidden != missing || !strings.Contains(missing, "item-not-found") {
			t.Errorf("hidden and nonexistent differ:\n%s\n%s", hidden, missing)
		}
		// A set is not routed, whatever the endpoint.
		if got := norm(e.srv.iq(alice, ep, "set", payload)); !strings.Contains(got, "service-unavailable") {
			t.Errorf("set: %s", got)
		}
		// The gateway JID has no profile.
		if got := norm(e.srv.iq(alice, domain, "get", payload)); !strings.Contains(got, "service-unavailable") {
			t.Errorf("at the gateway: %s", got)
		}
	}

	features := func(to string) map[string]bool {
		out := map[string]bool{}
		q := e.srv.iq(alice, to, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`).Children()[0]
		for _, f := range q.Children() {
			if v, ok := f.AttrValue("var"); ok && f.Start.Name == (xml.Name{Space: wire.NSDiscoInfo, Local: "feature"}) {
				out[v] = true
			}
		}
		return out
	}
	if f := features(ep); !f[legacy.NSVCardTemp] || !f[legacy.NSVCard4] {
		t.Errorf("endpoint features lack the vCards: %v", f)
	}
	if f := features(domain); f[legacy.NSVCardTemp] || f[legacy.NSVCard4] {
		t.Errorf("gateway advertises a vCard: %v", f)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the profile URLs were fetched %d times", n)
	}
}
