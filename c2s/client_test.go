package c2s

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"agentgw/internal/harness"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startEnv starts Prosody with the given users (password = user + "pw").
func startEnv(t *testing.T, users ...string) *harness.Env {
	t.Helper()
	e := harness.StartT(t, harness.Options{})
	ctx := testCtx(t, 15*time.Second)
	for _, u := range users {
		if err := e.Register(ctx, u, e.HomeDomain, u+"pw"); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// text writes a stanza delivered on Incoming as XML text, for the checks
// that read it as text.
func text(t *testing.T, el wire.Element) string {
	t.Helper()
	b, err := wire.AppendXML(nil, el.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func login(ctx context.Context, t *testing.T, e *harness.Env, user string, opts ...Option) *Client {
	t.Helper()
	c, err := Dial(ctx, e.ProsodyC2S, jid.MustParse(user+"@"+e.HomeDomain), user+"pw", opts...)
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPlaintextAllowed(t *testing.T) {
	for _, tc := range []struct {
		addr string
		cfg  config
		want bool
	}{
		{"127.0.0.1:5222", config{}, true},
		{"127.0.0.11:5222", config{}, true},
		{"[::1]:5222", config{}, true},
		{"localhost:5222", config{}, false},
		{"10.0.0.1:5222", config{}, false},
		{"example.org:5222", config{}, false},
		{"127.0.0.1:5222", config{tls: &tls.Config{}}, false},
		{"127.0.0.1:5223", config{directTLS: true}, false},
	} {
		got, err := plaintextAllowed(tc.addr, tc.cfg)
		if err != nil || got != tc.want {
			t.Errorf("plaintextAllowed(%q, %+v) = %v, %v; want %v", tc.addr, tc.cfg, got, err, tc.want)
		}
	}
	if _, err := plaintextAllowed("no-port", config{}); err == nil {
		t.Error("address without port accepted")
	}
}

func TestDialTimeout(t *testing.T) {
	// A server that accepts and never says anything.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := Dial(ctx, l.Addr().String(), jid.MustParse("a@home.example"), "pw")
	if err == nil {
		c.Close()
		t.Fatal("login to a mute server succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Dial took %v after a 300ms context", d)
	}
}

func TestIQ(t *testing.T) {
	e := startEnv(t, "alice")
	ctx := testCtx(t, 20*time.Second)
	alice := login(ctx, t, e, "alice")
	if j := alice.JID(); j.Bare().String() != "alice@home.example" || j.Resourcepart() == "" {
		t.Fatalf("JID = %s", j)
	}

	resp, err := alice.IQ(ctx, "get", e.HomeDomain, `<ping xmlns="urn:xmpp:ping"/>`)
	if err != nil || !strings.HasPrefix(resp, `<iq xmlns='jabber:client'`) || !strings.Contains(resp, `type='result'`) {
		t.Fatalf("ping: %s, %v", resp, err)
	}

	// An error IQ comes back whole, <error/> included, as a string.
	resp, err = alice.IQ(ctx, "get", e.HomeDomain, `<nothing xmlns="urn:example:nothing"/>`)
	if err != nil {
		t.Fatal(err)
	}
	want := `<error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>`
	if !strings.Contains(resp, `type='error'`) || !strings.Contains(resp, want) {
		t.Fatalf("error IQ = %s; want it to contain %s", resp, want)
	}

	// Empty "to": the user's own account (roster get).
	resp, err = alice.IQ(ctx, "get", "", `<query xmlns="jabber:iq:roster"/>`)
	if err != nil || !strings.Contains(resp, `<query xmlns='jabber:iq:roster'`) {
		t.Fatalf("roster: %s, %v", resp, err)
	}

	if _, err := alice.IQ(ctx, "result", e.HomeDomain, ""); err == nil {
		t.Error("IQ of type result accepted")
	}
	if _, err := alice.IQ(ctx, "get", e.HomeDomain, "<unclosed>"); err == nil {
		t.Error("malformed payload accepted")
	}

	// The wait for the response ends with ctx.
	expired, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := alice.IQ(expired, "get", e.HomeDomain, `<ping xmlns="urn:xmpp:ping"/>`); err == nil {
		t.Error("IQ with a cancelled context succeeded")
	}
}

func TestMessagesAndIncoming(t *testing.T) {
	e := startEnv(t, "alice", "carol")
	ctx := testCtx(t, 20*time.Second)
	alice := login(ctx, t, e, "alice", WithBuffer(2))
	carol := login(ctx, t, e, "carol")

	for i := range 4 {
		msg := `<message to="` + alice.JID().String() + `" type="chat"><body>m` + string(rune('0'+i)) + `</body></message>`
		if err := carol.SendRaw(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	// The first two fill the buffer; the others are dropped. A round trip
	// makes sure all four went through the session.
	if _, err := alice.IQ(ctx, "get", e.HomeDomain, `<ping xmlns="urn:xmpp:ping"/>`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alice.Dropped() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if d := alice.Dropped(); d != 2 {
		t.Fatalf("dropped = %d, want 2", d)
	}
	got := text(t, <-alice.Incoming())
	if !strings.HasPrefix(got, `<message xmlns='jabber:client'`) || !strings.Contains(got, `<body>m0</body>`) ||
		!strings.Contains(got, `from='`+carol.JID().String()+`'`) {
		t.Fatalf("first message = %s", got)
	}
	if got := text(t, <-alice.Incoming()); !strings.Contains(got, `<body>m1</body>`) {
		t.Fatalf("second message = %s", got)
	}

	// Presence is delivered too.
	if err := alice.SendRaw(ctx, `<presence/>`); err != nil {
		t.Fatal(err)
	}
	select {
	case el := <-alice.Incoming():
		if got := text(t, el); !strings.HasPrefix(got, `<presence xmlns='jabber:client'`) {
			t.Fatalf("presence = %s", got)
		}
	case <-ctx.Done():
		t.Fatal("own presence not echoed")
	}

	for _, bad := range []string{"", "<a/><b/>", "<a>"} {
		if err := carol.SendRaw(ctx, bad); err == nil {
			t.Errorf("SendRaw(%q) succeeded", bad)
		}
	}

	// Close ends the session and closes Incoming.
	if err := alice.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case <-alice.Done():
	case <-ctx.Done():
		t.Fatal("Done not closed after Close")
	}
	if _, ok := <-alice.Incoming(); ok {
		t.Error("Incoming not closed after Close")
	}
}

func TestStartTLS(t *testing.T) {
	e := startEnv(t, "alice")
	ctx := testCtx(t, 20*time.Second)
	pem, err := os.ReadFile(e.CACertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	alice := login(ctx, t, e, "alice", WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	if _, err := alice.IQ(ctx, "get", e.HomeDomain, `<ping xmlns="urn:xmpp:ping"/>`); err != nil {
		t.Fatal(err)
	}

	// Without the test CA the certificate does not verify: no login.
	c, err := Dial(ctx, e.ProsodyC2S, jid.MustParse("alice@home.example"), "alicepw",
		WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
	if err == nil {
		c.Close()
		t.Fatal("login over TLS with an untrusted certificate succeeded")
	}
	t.Logf("untrusted: %v", err)
}
