package harness

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/wire"

	"mellium.im/xmlstream"
	"mellium.im/xmpp"
	"mellium.im/xmpp/component"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/mux"
	"mellium.im/xmpp/stanza"
)

const nsDiscoInfo = "http://jabber.org/protocol/disco#info"

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// testComponent is a raw XEP-0114 component answering disco#info for every
// JID of its domain with an identity named after the JID asked.
type testComponent struct {
	session *xmpp.Session
	done    chan error
}

func connectComponent(ctx context.Context, t *testing.T, e *Env) *testComponent {
	t.Helper()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.ComponentAddr)
	if err != nil {
		t.Fatalf("dial component port: %v", err)
	}
	s, err := component.NewSession(ctx, jid.MustParse(e.ComponentDomain), []byte(e.ComponentSecret), conn)
	if err != nil {
		conn.Close()
		t.Fatalf("component handshake: %v", err)
	}
	h := mux.New(component.NSAccept,
		mux.IQFunc(stanza.GetIQ, xml.Name{Space: nsDiscoInfo, Local: "query"},
			func(iq stanza.IQ, w xmlstream.TokenReadEncoder, _ *xml.StartElement) error {
				// Reply from the JID asked (iq.Result swaps to and from).
				payload := xmlstream.Wrap(
					xmlstream.Wrap(nil, xml.StartElement{
						Name: xml.Name{Space: nsDiscoInfo, Local: "identity"},
						Attr: []xml.Attr{
							{Name: xml.Name{Local: "category"}, Value: "automation"},
							{Name: xml.Name{Local: "type"}, Value: "agent"},
							{Name: xml.Name{Local: "name"}, Value: "test " + iq.To.String()},
						},
					}),
					xml.StartElement{Name: xml.Name{Space: nsDiscoInfo, Local: "query"}},
				)
				_, err := xmlstream.Copy(w, iq.Result(payload))
				return err
			}))
	c := &testComponent{session: s, done: make(chan error, 1)}
	go func() {
		c.done <- s.Serve(h)
		conn.Close()
	}()
	t.Cleanup(func() {
		s.Close()
		conn.Close()
	})
	return c
}

func dialClient(ctx context.Context, t *testing.T, addr, user, password string) *c2s.Client {
	t.Helper()
	c, err := c2s.Dial(ctx, addr, jid.MustParse(user), password)
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustIQ(ctx context.Context, t *testing.T, c *c2s.Client, typ, to, payload string, want ...string) string {
	t.Helper()
	resp, err := c.IQ(ctx, typ, to, payload)
	if err != nil {
		t.Fatalf("%s: iq %s to %s: %v", c.JID(), typ, to, err)
	}
	for _, w := range want {
		if !strings.Contains(resp, w) {
			t.Fatalf("%s: iq %s to %s: response lacks %q:\n%s", c.JID(), typ, to, w, resp)
		}
	}
	return resp
}

// waitLog waits until the file at path contains want.
func waitLog(ctx context.Context, t *testing.T, path, want string) {
	t.Helper()
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: no %q", path, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

const discoInfo = `<query xmlns="http://jabber.org/protocol/disco#info"/>`

func TestProsodyAlone(t *testing.T) {
	e := StartT(t, Options{})
	ctx := testCtx(t, 20*time.Second)
	if err := e.Register(ctx, "alice", e.HomeDomain, "alicepw"); err != nil {
		t.Fatal(err)
	}
	alice := dialClient(ctx, t, e.ProsodyC2S, "alice@home.example", "alicepw")
	if alice.JID().Resourcepart() == "" || alice.JID().Bare().String() != "alice@home.example" {
		t.Fatalf("bound JID = %s", alice.JID())
	}
	mustIQ(ctx, t, alice, "get", e.HomeDomain, discoInfo,
		`type='result'`, `<identity`, `var='urn:xmpp:ping'`)
	mustIQ(ctx, t, alice, "get", e.HomeDomain, `<query xmlns="http://jabber.org/protocol/disco#items"/>`,
		`type='result'`, `jid='agents.example'`, `name='Agent Gateway'`)

	// Without a component, Prosody bounces IQs to its domain.
	resp := mustIQ(ctx, t, alice, "get", "x@agents.example", discoInfo, `type='error'`)
	t.Logf("no component: %s", resp)

	// Wrong password: login fails.
	if c, err := c2s.Dial(ctx, e.ProsodyC2S, jid.MustParse("alice@home.example"), "wrong"); err == nil {
		c.Close()
		t.Fatal("login with a wrong password succeeded")
	}
}

func TestComponentLocal(t *testing.T) {
	e := StartT(t, Options{})
	ctx := testCtx(t, 20*time.Second)
	if err := e.Register(ctx, "alice", e.HomeDomain, "alicepw"); err != nil {
		t.Fatal(err)
	}
	connectComponent(ctx, t, e)
	alice := dialClient(ctx, t, e.ProsodyC2S, "alice@home.example", "alicepw")
	mustIQ(ctx, t, alice, "get", "x@agents.example", discoInfo,
		`type='result'`, `from='x@agents.example'`, `name='test x@agents.example'`)
}

func TestFederation(t *testing.T) {
	e := StartT(t, Options{Ejabberd: true})
	ctx := testCtx(t, 40*time.Second)
	for _, u := range []struct{ user, domain string }{{"alice", e.HomeDomain}, {"bob", e.RemoteDomain}} {
		if err := e.Register(ctx, u.user, u.domain, u.user+"pw"); err != nil {
			t.Fatal(err)
		}
	}
	connectComponent(ctx, t, e)
	alice := dialClient(ctx, t, e.ProsodyC2S, "alice@home.example", "alicepw")
	bob := dialClient(ctx, t, e.EjabberdC2S, "bob@remote.example", "bobpw")

	// ejabberd -> s2s -> Prosody -> component.
	start := time.Now()
	mustIQ(ctx, t, bob, "get", "x@agents.example", discoInfo,
		`type='result'`, `from='x@agents.example'`, `name='test x@agents.example'`)
	t.Logf("bob -> x@agents.example (first, opens s2s): %v", time.Since(start))

	// Prosody -> s2s -> ejabberd.
	start = time.Now()
	mustIQ(ctx, t, alice, "get", e.RemoteDomain, discoInfo, `type='result'`, `from='remote.example'`)
	t.Logf("alice -> remote.example (first, opens s2s): %v", time.Since(start))

	// A message from bob to alice's full JID arrives on Incoming.
	msg := `<message type="chat" to="` + alice.JID().String() + `"><body>hello &amp; welcome</body></message>`
	if err := bob.SendRaw(ctx, msg); err != nil {
		t.Fatal(err)
	}
	select {
	case el := <-alice.Incoming():
		got, err := wire.Marshal(el.Reader())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, `<body>hello &amp; welcome</body>`) || !strings.Contains(got, `from='`+bob.JID().String()+`'`) {
			t.Fatalf("alice got %s", got)
		}
	case <-ctx.Done():
		t.Fatal("alice got no message from bob")
	}
	// Both directions authenticated with the test CA's certificates (SASL
	// EXTERNAL), not with the dialback fallback.
	for _, want := range []string{
		"Accepted outbound s2s EXTERNAL authentication remote.example -> agents.example",
		"Accepted inbound s2s EXTERNAL authentication home.example -> remote.example",
	} {
		waitLog(ctx, t, e.ejabberdPaths.log, want)
	}
}

func TestRestartProsody(t *testing.T) {
	e := StartT(t, Options{})
	ctx := testCtx(t, 30*time.Second)
	if err := e.Register(ctx, "alice", e.HomeDomain, "alicepw"); err != nil {
		t.Fatal(err)
	}
	comp := connectComponent(ctx, t, e)
	alice := dialClient(ctx, t, e.ProsodyC2S, "alice@home.example", "alicepw")
	mustIQ(ctx, t, alice, "get", "x@agents.example", discoInfo, `type='result'`)

	before := e.PIDs()["prosody"]
	if err := e.RestartProsody(ctx); err != nil {
		t.Fatal(err)
	}
	if after := e.PIDs()["prosody"]; after == before || processAlive(before) {
		t.Fatalf("prosody pid %d -> %d (old alive: %v)", before, after, processAlive(before))
	}
	select {
	case err := <-comp.done:
		t.Logf("component stream ended: %v", err)
	case <-ctx.Done():
		t.Fatal("component stream survived the restart")
	}
	select {
	case <-alice.Done():
	case <-ctx.Done():
		t.Fatal("client session survived the restart")
	}

	// Reconnect both; the account survived (same data directory).
	connectComponent(ctx, t, e)
	alice = dialClient(ctx, t, e.ProsodyC2S, "alice@home.example", "alicepw")
	mustIQ(ctx, t, alice, "get", "y@agents.example", discoInfo, `type='result'`, `from='y@agents.example'`)
}

func TestStopLeavesNothing(t *testing.T) {
	if _, _, err := findEjabberd(); err != nil {
		t.Skip(err)
	}
	ctx := testCtx(t, 30*time.Second)
	t0 := time.Now()
	e, err := Start(ctx, Options{Ejabberd: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started in %v", time.Since(t0))
	pids := e.PIDs()
	if len(pids) != 2 {
		e.Stop()
		t.Fatalf("pids = %v", pids)
	}
	addrs := []string{e.ProsodyC2S, e.ProsodyS2S, e.ComponentAddr, e.EjabberdC2S, e.EjabberdS2S, e.EjabberdHTTP}
	t0 = time.Now()
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(t0))
	for name, pid := range pids {
		if processAlive(pid) {
			t.Errorf("%s (pid %d) still alive", name, pid)
		}
		if m := groupMembers(pid); len(m) > 0 {
			t.Errorf("%s: processes %v of its group still alive", name, m)
		}
	}
	for _, a := range addrs {
		if !portFree("tcp", a) {
			t.Errorf("%s still bound", a)
		}
	}
	if _, err := os.Stat(e.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary dir %s not removed: %v", e.Dir, err)
	}
	if err := e.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartCancelled(t *testing.T) {
	if _, _, err := findEjabberd(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	e, err := Start(ctx, Options{Ejabberd: true, Dir: dir})
	if err == nil {
		e.Stop()
		t.Skip("started within 300ms; nothing to check")
	}
	t.Logf("start: %.200s", err)
	// No process may still run from dir (their command lines name it).
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || !processAlive(pid) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if bytes.Contains(cmdline, []byte(dir)) {
			t.Errorf("pid %d still running: %q", pid, cmdline)
		}
	}
}

func TestDNS(t *testing.T) {
	port, err := pickPort(DNSIP, true)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(DNSIP, strconv.Itoa(port))
	d, err := startDNS(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	d.setHost("home.example", ProsodyIP, 5269, 5222)
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "udp", addr)
	}}
	ctx := testCtx(t, 5*time.Second)
	// Go's resolver refuses the IP-literal SRV target: check the raw answer.
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	q = appendName(q, "_xmpp-server._tcp.HOME.example")
	q = append(q, 0, dnsTypeSRV, 0, dnsClassIN)
	resp := d.answer(q)
	wantRR := appendName([]byte{0, 0, 0, 0, 0x14, 0x95}, ProsodyIP) // prio, weight, port 5269
	if len(resp) < 12 || resp[0] != 0x12 || resp[3]&0xF != rcodeOK || resp[7] != 1 ||
		!bytes.HasSuffix(resp, wantRR) {
		t.Fatalf("SRV answer = %x", resp)
	}
	ips, err := r.LookupIP(ctx, "ip4", "home.example")
	if err != nil || len(ips) != 1 || ips[0].String() != ProsodyIP {
		t.Fatalf("A = %v, %v", ips, err)
	}
	if _, err := r.LookupIP(ctx, "ip4", "other.example"); err == nil {
		t.Fatal("unknown name resolved")
	}
	if _, srvs, err := r.LookupSRV(ctx, "xmpp-client", "tcp", "agents.example"); err == nil {
		t.Fatalf("unexpected SRV %+v", srvs)
	}
}
