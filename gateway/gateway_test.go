package gateway_test

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/config"
	"agentgw/db"
	"agentgw/gateway"
	"agentgw/policy"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	domain = "agents.example"
	secret = "test-secret"
)

// fakeServer is the server end of an XEP-0114 stream: enough of Prosody to
// hand the gateway stanzas and read what it answers.
type fakeServer struct {
	t      testing.TB
	ln     net.Listener
	conn   net.Conn
	dec    *xml.Decoder
	reject bool
	// conflict refuses that many handshakes with <conflict/>, as Prosody
	// does while another connection holds the domain.
	conflict int
	seq      int
	// early is written with the handshake's answer, in the same write.
	early string
}

func newFakeServer(t testing.TB) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &fakeServer{t: t, ln: ln}
}

// accept takes the next component connection and runs the handshake.
func (f *fakeServer) accept() {
	f.t.Helper()
	if tl, ok := f.ln.(*net.TCPListener); ok {
		tl.SetDeadline(time.Now().Add(10 * time.Second))
	}
	conn, err := f.ln.Accept()
	if err != nil {
		f.t.Fatalf("accept: %v", err)
	}
	f.t.Cleanup(func() { conn.Close() })
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	f.conn, f.dec = conn, xml.NewDecoder(conn)
	for {
		tok, err := f.dec.Token()
		if err != nil {
			f.t.Fatalf("read stream header: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "stream" {
			break
		}
	}
	const id = "stream-id-1"
	f.write(`<?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams' from='` + domain + `' id='` + id + `'>`)
	var hs struct {
		XMLName xml.Name `xml:"handshake"`
		Digest  string   `xml:",chardata"`
	}
	if err := f.dec.Decode(&hs); err != nil {
		f.t.Fatalf("read handshake: %v", err)
	}
	sum := sha1.Sum([]byte(id + secret))
	if f.conflict > 0 {
		f.conflict--
		f.write(`<stream:error><conflict xmlns='urn:ietf:params:xml:ns:xmpp-streams'/><text xmlns='urn:ietf:params:xml:ns:xmpp-streams'>Component already connected</text></stream:error></stream:stream>`)
		f.conn.Close()
		return
	}
	if f.reject || hs.Digest != hex.EncodeToString(sum[:]) {
		f.write(`<stream:error><not-authorized xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error></stream:stream>`)
		return
	}
	f.write(`<handshake/>` + f.early)
}

func (f *fakeServer) write(s string) {
	f.t.Helper()
	f.conn.SetWriteDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(f.conn, s); err != nil {
		f.t.Fatalf("write: %v", err)
	}
}

// next reads the next top-level stanza the gateway sent.
func (f *fakeServer) next() wire.Element {
	f.t.Helper()
	f.conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		tok, err := f.dec.Token()
		if err != nil {
			f.t.Fatalf("read stanza: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			el, err := wire.ReadElement(f.dec, se.Copy(), 1<<20, 1<<24)
			if err != nil {
				f.t.Fatalf("read stanza: %v", err)
			}
			return el
		}
	}
}

// iq sends an IQ from 'from' and returns the answer, skipping keepalive
// pings, which it answers.
func (f *fakeServer) iq(from, to, typ, payload string) wire.Element {
	f.t.Helper()
	f.seq++
	id := fmt.Sprintf("q%d", f.seq)
	f.write(fmt.Sprintf(`<iq xmlns='jabber:component:accept' type='%s' id='%s' from='%s' to='%s'>%s</iq>`, typ, id, from, to, payload))
	for {
		el := f.next()
		if v, _ := el.AttrValue("id"); v == id {
			return el
		}
	}
}

func marshal(t *testing.T, el wire.Element) string {
	t.Helper()
	s, err := wire.Marshal(el.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// golden compares got with testdata/NAME.xml, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "testdata", "golden", name+".xml")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update)", name, err)
	}
	if strings.TrimSpace(string(want)) != got {
		t.Errorf("%s:\n got %s\nwant %s", name, got, strings.TrimSpace(string(want)))
	}
}

type env struct {
	t     testing.TB
	srv   *fakeServer
	gw    *gateway.Gateway
	store *db.Store
	cfg   *config.Config
	done  chan error
}

func testConfig(t testing.TB, server string, extra string) *config.Config {
	t.Helper()
	body := fmt.Sprintf(`
[component]
domain = %q
server = %q
secret = %q
ping_interval = "1h"
reconnect_max = "200ms"
[gateway]
name = "Test Gateway"
page_max = 10
[policy]
local_domains = ["home.example"]
[[policy.visibility]]
principals = ["home.example"]
endpoints = ["*"]
[[policy.visibility]]
principals = ["carol@remote.example"]
endpoints = ["a001@agents.example", "a003@agents.example", "hidden-no@agents.example"]
%s
`, domain, server, secret, extra)
	p := filepath.Join(t.TempDir(), "agentgw.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newGateway builds the gateway from cfg as agentgw serve does.
func newGateway(cfg *config.Config, store *db.Store) *gateway.Gateway {
	return gateway.New(app.GatewayOptions(cfg), store, nil)
}

func register(t testing.TB, store *db.Store, local, title string, activate bool) {
	t.Helper()
	j := local + "@" + domain
	canon := fmt.Sprintf(`{"agent":{"jid":%q,"name":%q,"title":%q,"version":"1.0"},"manifestSpecVersion":"0","tools":[]}`, j, local, title)
	v := db.Version{JID: j, Version: "1.0", Hash: sha256.Sum256([]byte(canon)), Canonical: []byte(canon), Name: local, Title: title}
	ctx := context.Background()
	if _, err := store.RegisterVersion(ctx, v, "admin"); err != nil {
		t.Fatal(err)
	}
	if activate {
		if err := store.Activate(ctx, j, "1.0", nil); err != nil {
			t.Fatal(err)
		}
	}
}

func start(t testing.TB, extra string) *env {
	t.Helper()
	srv := newFakeServer(t)
	e := launch(t, srv, testConfig(t, srv.ln.Addr().String(), extra))
	waitUp(t, e.gw)
	return e
}

// launch runs a gateway with cfg and a store of its own against srv until
// the test ends, and accepts its stream; it does not wait for the
// handshake.
func launch(t testing.TB, srv *fakeServer, cfg *config.Config) *env {
	t.Helper()
	store := openStore(t)
	gw := newGateway(cfg, store)
	done := runGateway(t, context.Background(), gw)
	srv.accept()
	return &env{t: t, srv: srv, gw: gw, store: store, cfg: cfg, done: done}
}

// runGateway runs gw until the test ends, and then waits (5 s at most)
// for Run to return; the channel carries what Run returned.
func runGateway(t testing.TB, ctx context.Context, gw *gateway.Gateway) chan error {
	t.Helper()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- gw.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return done
}

const (
	alice = "alice@home.example/phone"
	carol = "carol@remote.example/laptop"
	mall  = "mallory@remote.example/x"
)

func TestGatewayInfo(t *testing.T) {
	e := start(t, "")
	got := marshal(t, e.srv.iq(alice, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`))
	golden(t, "gateway-info", got)
	got = marshal(t, e.srv.iq(alice, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='urn:xmpp:agent-directory:0'/>`))
	golden(t, "directory-info", got)
	got = marshal(t, e.srv.iq(alice, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='urn:xmpp:agent-endpoint:0'/>`))
	golden(t, "gateway-node-not-found", got)
}

func TestDirectoryPaging(t *testing.T) {
	e := start(t, "")
	for i := 1; i <= 25; i++ {
		register(t, e.store, fmt.Sprintf("a%03d", i), fmt.Sprintf("Agent %d", i), i != 2)
	}
	items := `<query xmlns='http://jabber.org/protocol/disco#items' node='urn:xmpp:agent-directory:0'>%s</query>`
	got := marshal(t, e.srv.iq(alice, domain, "get", fmt.Sprintf(items, `<set xmlns='http://jabber.org/protocol/rsm'><max>3</max></set>`)))
	golden(t, "directory-page", got)

	// max is clamped to page_max (10); count excludes the inactive a002.
	el := e.srv.iq(alice, domain, "get", fmt.Sprintf(items, `<set xmlns='http://jabber.org/protocol/rsm'><max>500</max></set>`))
	q := el.Children()[0]
	if n := len(q.Children()) - 1; n != 10 {
		t.Errorf("clamped page has %d items, want 10", n)
	}
	set, _ := q.Child(xml.Name{Space: wire.NSRSM, Local: "set"})
	if c, _ := set.Child(xml.Name{Space: wire.NSRSM, Local: "count"}); c.Text() != "24" {
		t.Errorf("count = %s, want 24", c.Text())
	}
	got = marshal(t, e.srv.iq(alice, domain, "get", fmt.Sprintf(items, `<set xmlns='http://jabber.org/protocol/rsm'><max>2</max><before/></set>`)))
	golden(t, "directory-last-page", got)

	// A remote user sees only what is granted and active: a001 and a003.
	got = marshal(t, e.srv.iq(carol, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#items'/>`))
	golden(t, "directory-granted", got)
	got = marshal(t, e.srv.iq(mall, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#items'/>`))
	golden(t, "directory-empty", got)

	got = marshal(t, e.srv.iq(alice, domain, "get", fmt.Sprintf(items, `<set xmlns='http://jabber.org/protocol/rsm'><max>x</max></set>`)))
	golden(t, "bad-request", got)
}

func TestEndpointInfoAndHiding(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	register(t, e.store, "a005", "Agent Five", true)
	info := `<query xmlns='http://jabber.org/protocol/disco#info'/>`
	golden(t, "endpoint-info", marshal(t, e.srv.iq(alice, "a001@"+domain, "get", info)))

	// Hidden (a005 to carol) and nonexistent answer the same bytes, up to id.
	hidden := e.srv.iq(carol, "a005@"+domain, "get", info)
	missing := e.srv.iq(carol, "nobody@"+domain, "get", info)
	norm := func(el wire.Element) string {
		el.Start.Attr = nil
		return marshal(t, el)
	}
	if norm(hidden) != norm(missing) {
		t.Errorf("hidden and nonexistent differ:\n%s\n%s", marshal(t, hidden), marshal(t, missing))
	}
	golden(t, "endpoint-not-found", norm(missing))
	for _, node := range []string{"urn:xmpp:agent-endpoint:0", "whatever"} {
		el := e.srv.iq(alice, "a001@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='`+node+`'/>`)
		if norm(el) != norm(missing) {
			t.Errorf("node %s: got %s", node, marshal(t, el))
		}
	}
	// The answer comes from the JID that was asked.
	if from, _ := hidden.AttrValue("from"); from != "a005@"+domain {
		t.Errorf("from = %q", from)
	}
}

func TestUnhandledAndAnswers(t *testing.T) {
	e := start(t, "")
	got := marshal(t, e.srv.iq(alice, domain, "set", `<query xmlns='jabber:iq:version'/>`))
	golden(t, "service-unavailable", got)
	// Results and errors are never answered, and neither is anything
	// addressed to a JID we do not host (any answer would come from it): the
	// next stanza out is the answer to the ping that follows them.
	e.srv.write(`<iq type='result' id='r1' from='` + alice + `' to='` + domain + `'/>`)
	e.srv.write(`<iq type='error' id='r2' from='` + alice + `' to='` + domain + `'><error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>`)
	e.srv.write(`<iq type='get' id='r3' from='` + alice + `' to='other.example'><ping xmlns='urn:xmpp:ping'/></iq>`)
	e.srv.write(`<iq type='get' id='r4' from='` + alice + `' to='x@other.example'><query xmlns='jabber:iq:version'/></iq>`)
	e.srv.write(`<message type='chat' id='r5' from='` + alice + `' to='x@other.example'><body>hi</body></message>`)
	e.srv.write(`<message type='headline' id='r6' from='` + alice + `' to='a@` + domain + `'><body>hi</body></message>`)
	e.srv.write(`<iq type='get' id='ping-1' from='` + alice + `' to='` + domain + `'><ping xmlns='urn:xmpp:ping'/></iq>`)
	el := e.srv.next()
	if id, _ := el.AttrValue("id"); id != "ping-1" {
		t.Fatalf("first stanza out answers something that must not be answered: %s", marshal(t, el))
	}
	if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Fatalf("ping answer: %s", marshal(t, el))
	}
	// A chat message to an endpoint bounces, from the endpoint.
	e.srv.write(`<message type='chat' id='m1' from='` + alice + `' to='a@` + domain + `'><body>hi</body></message>`)
	el = e.srv.next()
	if from, _ := el.AttrValue("from"); from != "a@"+domain || !strings.Contains(marshal(t, el), "service-unavailable") {
		t.Fatalf("bounce: %s", marshal(t, el))
	}
	// Two payloads is a bad request.
	el = e.srv.iq(alice, domain, "get", `<ping xmlns='urn:xmpp:ping'/><ping xmlns='urn:xmpp:ping'/>`)
	if !strings.Contains(marshal(t, el), "bad-request") {
		t.Errorf("two payloads: %s", marshal(t, el))
	}
}

func TestNotAuthorizedIsFatal(t *testing.T) {
	srv := newFakeServer(t)
	srv.reject = true
	cfg := testConfig(t, srv.ln.Addr().String(), "")
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gw := newGateway(cfg, store)
	done := make(chan error, 1)
	go func() { done <- gw.Run(context.Background()) }()
	srv.accept()
	select {
	case err := <-done:
		if !errors.Is(err, gateway.ErrNotAuthorized) {
			t.Fatalf("Run = %v, want ErrNotAuthorized", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run kept retrying after not-authorized")
	}
}

// TestConflictWaits: a stream refused with <conflict/> (another gateway
// holds the domain) is retried every second, not with the growing
// backoff, and logged once at info, not as a fault; the gateway connects
// as soon as the domain is free.
func TestConflictWaits(t *testing.T) {
	srv := newFakeServer(t)
	srv.conflict = 3
	cfg := testConfig(t, srv.ln.Addr().String(), "")
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var logs logBuffer
	gw := gateway.New(app.GatewayOptions(cfg), store, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	var at []time.Time
	for range 4 {
		srv.accept()
		at = append(at, time.Now())
	}
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d < 900*time.Millisecond || d > 1600*time.Millisecond {
			t.Errorf("attempt %d came %v after the previous one, want about 1 s", i+1, d)
		}
	}
	waitCtx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := gw.WaitConnected(waitCtx); err != nil {
		t.Fatalf("not connected after the conflicts: %v", err)
	}
	text := logs.String()
	if n := strings.Count(text, "waiting to take over"); n != 1 {
		t.Errorf("%d waiting lines, want 1:\n%s", n, text)
	}
	if strings.Contains(text, "level=WARN") || strings.Contains(text, "level=ERROR") {
		t.Errorf("a conflict was logged as a fault:\n%s", text)
	}
}

// logBuffer is an io.Writer safe for the gateway's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestReconnectAndKeepalive(t *testing.T) {
	e := start(t, "")
	// Drop the stream: the gateway reconnects by itself.
	e.srv.conn.Close()
	e.srv.accept()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.gw.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	el := e.srv.iq(alice, domain, "get", `<ping xmlns='urn:xmpp:ping'/>`)
	if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Fatalf("after reconnect: %s", marshal(t, el))
	}
}

func TestKeepalivePing(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t, srv.ln.Addr().String(), "")
	cfg.PingInterval = 50 * time.Millisecond
	cfg.PingTimeout = 300 * time.Millisecond
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gw := newGateway(cfg, store)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go gw.Run(ctx)
	srv.accept()
	// The gateway pings its own domain when idle.
	ping := srv.next()
	if to, _ := ping.AttrValue("to"); to != domain || !strings.Contains(marshal(t, ping), "urn:xmpp:ping") {
		t.Fatalf("keepalive: %s", marshal(t, ping))
	}
	// Leave it unanswered: the gateway must drop the stream and come back.
	srv.accept()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := gw.WaitConnected(wctx); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyReload(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	info := `<query xmlns='http://jabber.org/protocol/disco#info'/>`
	if el := e.srv.iq(mall, "a001@"+domain, "get", info); !strings.Contains(marshal(t, el), "item-not-found") {
		t.Fatalf("mallory sees before the grant: %s", marshal(t, el))
	}
	p, err := policy.ParsePrincipal("mallory@remote.example")
	if err != nil {
		t.Fatal(err)
	}
	e.gw.SetPolicy(&policy.Policy{Visibility: []policy.Grant{{Principals: []policy.Principal{p}, Endpoints: []string{"a001@" + domain}}}})
	if el := e.srv.iq(mall, "a001@"+domain, "get", info); !strings.Contains(marshal(t, el), "agent-endpoint-info") {
		t.Fatalf("mallory does not see after the grant: %s", marshal(t, el))
	}
}

// TestStreamLossFailsPending: an outgoing IQ still waiting when the stream
// drops fails at once with ErrStreamLost, long before its own timeout, and
// nothing stays pending.
func TestStreamLossFailsPending(t *testing.T) {
	e := start(t, "")
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := e.gw.SendIQ(ctx, stanza.IQ{Type: stanza.GetIQ, From: jid.MustParse(domain), To: jid.MustParse(alice)}, wire.Elem(xml.Name{Space: "urn:xmpp:ping", Local: "ping"}, nil))
		errc <- err
	}()
	if el := e.srv.next(); !strings.Contains(marshal(t, el), "urn:xmpp:ping") {
		t.Fatalf("expected the outgoing ping, got %s", marshal(t, el))
	}
	if n := e.gw.PendingIQs(); n != 1 {
		t.Fatalf("%d pending, want 1", n)
	}
	e.srv.conn.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, gateway.ErrStreamLost) {
			t.Fatalf("pending IQ failed with %v, want ErrStreamLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending IQ still waiting after the stream was lost")
	}
	if n := e.gw.PendingIQs(); n != 0 {
		t.Fatalf("%d still pending", n)
	}
}

// TestRateLimit: past its burst, a sender's requests get
// <resource-constraint/> while another sender is still served.
func TestRateLimit(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t, srv.ln.Addr().String(), "")
	cfg.RateLimit, cfg.RateBurst = 0.001, 2
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gw := newGateway(cfg, store)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go gw.Run(ctx)
	srv.accept()
	ping := `<ping xmlns='urn:xmpp:ping'/>`
	for i := 0; i < 2; i++ {
		if el := srv.iq(alice, domain, "get", ping); !strings.Contains(marshal(t, el), "type='result'") {
			t.Fatalf("request %d within the burst: %s", i, marshal(t, el))
		}
	}
	if el := srv.iq(alice, domain, "get", ping); !strings.Contains(marshal(t, el), "resource-constraint") {
		t.Fatalf("request past the burst: %s", marshal(t, el))
	}
	if el := srv.iq(carol, domain, "get", ping); !strings.Contains(marshal(t, el), "type='result'") {
		t.Fatalf("another sender: %s", marshal(t, el))
	}
}

// TestOptionsHideSecret: neither the string form of Options nor a log line
// that carries them shows the component secret.
func TestOptionsHideSecret(t *testing.T) {
	const sec = "do-not-print-me"
	o := gateway.Options{Stream: gateway.Stream{Domain: jid.MustParse(domain), Server: "127.0.0.1:5347", Secret: []byte(sec)}}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("start", "gateway", o)
	slog.New(slog.NewJSONHandler(&b, nil)).Info("start", "gateway", o)
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), o.String(), b.String()} {
		if strings.Contains(s, sec) || strings.Contains(s, base64.StdEncoding.EncodeToString([]byte(sec))) ||
			!strings.Contains(s, "domain="+domain) {
			t.Errorf("options shown as %q", s)
		}
	}
}
