package integration

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/internal/harness"
	"agentgw/manifest"
)

// bigManifestJID is an endpoint whose manifest, 24 tools with schemas,
// is a manifest answer of about 30 KB: large enough for Prosody to write
// it to the client in more than one part.
const bigManifestJID = "bigtools@" + harness.ComponentDomain

// bigToolsManifest is bigManifestJID's manifest.
func bigToolsManifest() string {
	var tools []string
	for i := range 24 {
		tools = append(tools, fmt.Sprintf(`{"name":"tool.%02d","title":"Tool %02d","description":"Does thing %02d for a city, with the options given.",
"inputSchema":{"type":"object","properties":{"city":{"type":"string","description":"The city, as its common name."},"days":{"type":"integer","minimum":1,"maximum":14},"units":{"type":"string","enum":["metric","imperial"]}},"required":["city"],"additionalProperties":false},
"outputSchema":{"type":"object","properties":{"summary":{"type":"string"},"high":{"type":"number"},"low":{"type":"number"}},"required":["summary"]},
"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":true}}`, i, i, i))
	}
	return `{"manifestSpecVersion":"0","agent":{"jid":"` + bigManifestJID + `","name":"bigtools","title":"Big Tool Box","version":"1.0.0"},"tools":[` + strings.Join(tools, ",") + `]}`
}

// BenchmarkNagle measures three large answers end to end through Prosody,
// from alice's client, with Nagle's algorithm on Prosody's sockets on
// (Prosody's default) and off (network_settings = { nagle = false }):
// a 100-row search page (about 27 KB), a 50-item directory page and a
// manifest of about 30 KB. Each sub-benchmark restarts Prosody in its
// setting if needed; run it with -count 2 or more, so the two alternate:
//
//	go test ./integration -run XXX -bench Nagle -benchtime 200x -count 2
//
// Prosody is left with Nagle on, as the rest of the suite expects.
func BenchmarkNagle(b *testing.B) {
	need(b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := b.TempDir()
	file := filepath.Join(dir, "bigtools.json")
	if err := os.WriteFile(file, []byte(bigToolsManifest()), 0o600); err != nil {
		b.Fatal(err)
	}
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", file); err != nil {
		b.Fatalf("register: %v %s", err, out)
	}
	defer func() {
		setNagle(b, true)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := agentgw(ctx, "endpoint", "deactivate", "-config", suite.config, bigManifestJID); err != nil {
			b.Errorf("deactivate: %v %s", err, out)
		}
	}()
	search := `<query xmlns='jabber:iq:search'><x xmlns='jabber:x:data' type='submit'>` +
		`<field type='hidden' var='FORM_TYPE'><value>jabber:iq:search</value></field>` +
		`<field var='nick'><value>agent</value></field></x>` +
		`<set xmlns='http://jabber.org/protocol/rsm'><max>100</max></set></query>`
	page := `<query xmlns='http://jabber.org/protocol/disco#items'><set xmlns='http://jabber.org/protocol/rsm'><max>50</max></set></query>`
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("nagle=%v", on), func(b *testing.B) {
			setNagle(b, on)
			largeAnswers(b, login(b, "alice", harness.HomeDomain), harness.ComponentDomain, bigManifestJID, "agent-099@", search, page)
		})
	}
	// ejabberd listens with TCP_NODELAY on every listener (c2s and
	// components) and has no such setting: the same answers from the
	// gateway as ejabberd's component, to bob, for comparison.
	b.Run("ejabberd", func(b *testing.B) {
		const name = "ejgw-nagle"
		path := filepath.Join(suite.dir, name, "agentgw.db")
		seedBenchDB(b, path, harness.RemoteComponentDomain, 1000)
		bigRemote := strings.Replace(bigManifestJID, harness.ComponentDomain, harness.RemoteComponentDomain, 1)
		registerManifest(b, path, strings.ReplaceAll(bigToolsManifest(), bigManifestJID, bigRemote), harness.RemoteComponentDomain)
		startEjabberdGateway(b, name, "")
		largeAnswers(b, login(b, "bob", harness.RemoteDomain), harness.RemoteComponentDomain, bigRemote, "bench-000099@", search, page)
	})
}

// largeAnswers is BenchmarkNagle's loop: a 100-row search page, a 50-item
// directory page and a manifest from c, p50s and sizes reported.
func largeAnswers(b *testing.B, c interface {
	IQ(context.Context, string, string, string) (string, error)
}, gatewayJID, manifestJID, lastRow, search, page string) {
	ctx := context.Background()
	reqs := []struct {
		name, typ, to, payload, want string
		rtt                          []time.Duration
		bytes                        int
	}{
		{name: "search100", typ: "set", to: gatewayJID, payload: search, want: lastRow},
		{name: "dir50", typ: "get", to: gatewayJID, payload: page, want: "<count>"},
		{name: "manifest", typ: "get", to: manifestJID, payload: `<manifest-request xmlns='urn:xmpp:agent-api:0'/>`, want: "tool.23"},
	}
	for b.Loop() {
		for i := range reqs {
			r := &reqs[i]
			t0 := time.Now()
			raw, err := c.IQ(ctx, r.typ, r.to, r.payload)
			if err != nil || !strings.Contains(raw, r.want) {
				b.Fatalf("%s: %v %.300s", r.name, err, raw)
			}
			r.rtt = append(r.rtt, time.Since(t0))
			r.bytes = len(raw)
		}
	}
	for _, r := range reqs {
		b.ReportMetric(float64(p50(r.rtt).Microseconds()), r.name+"-p50-µs")
		b.ReportMetric(float64(r.bytes), r.name+"-bytes")
	}
}

// registerManifest registers and activates raw in the database at path,
// unless it is there already.
func registerManifest(b *testing.B, path, raw, domain string) {
	b.Helper()
	ctx := context.Background()
	if os.Getenv(binaryEnv) != "" {
		// The binary's store, which db.Open would migrate (importManifests).
		if err := registerWithBinary(ctx, path, domain, []string{raw}); err != nil {
			b.Fatal(err)
		}
		return
	}
	store, err := db.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	m, err := manifest.Parse([]byte(raw), manifest.Options{Domain: domain})
	if err != nil {
		b.Fatal(err)
	}
	v := db.Version{JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical, Name: m.Name, Title: m.Title}
	if _, err := store.RegisterVersion(ctx, v, db.OriginAdmin); err != nil {
		b.Fatal(err)
	}
	if err := store.Activate(ctx, m.JID, m.Version, nil); err != nil {
		b.Fatal(err)
	}
}

// setNagle puts Prosody in the given Nagle setting, waiting for the
// gateway to reconnect if Prosody had to restart.
func setNagle(b *testing.B, on bool) {
	b.Helper()
	if suite.env.ProsodyNagle() == on {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := suite.env.SetProsodyNagle(ctx, on); err != nil {
		b.Fatal(err)
	}
	if err := suite.gateway.waitUp(ctx); err != nil {
		b.Fatalf("gateway did not reconnect: %v", err)
	}
}

// BenchmarkCeiling measures, in one run and alternating, two ceilings of
// disco#info to an endpoint with 64 requests in flight:
//
//   - prosody: through Prosody, from 8 client connections of alice with 8
//     requests in flight each, to the suite's gateway: Prosody's routing
//     ceiling (client → Prosody → component → Prosody → client);
//   - gateway: a second agentgw serve process on a database of 1,000
//     endpoints, connected to a fake server in this process that floods it
//     from 64 senders, each sending its next request as its answer arrives.
//     The fake server only counts answers, so the gateway is what it
//     measures (and the two share the machine's two cores).
//
// Each iteration is one round of both. Run it as
//
//	go test ./integration -run XXX -bench Ceiling -benchtime 5x -count 2
func BenchmarkCeiling(b *testing.B) {
	need(b)
	const (
		prosodyIQs = 4000
		gatewayIQs = 40000
		inFlight   = 64
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	flood := startFlooder(b, 1000)

	var clients []interface {
		IQ(context.Context, string, string, string) (string, error)
	}
	for range 8 {
		clients = append(clients, login(b, "alice", harness.HomeDomain))
	}
	endpoint := "weather@" + harness.ComponentDomain
	var prosodyTime, gatewayTime time.Duration
	var prosodyN, gatewayN int
	for b.Loop() {
		// Prosody's routing ceiling.
		var left atomic.Int64
		left.Store(prosodyIQs)
		var wg sync.WaitGroup
		errs := make(chan error, inFlight)
		t0 := time.Now()
		for i := range inFlight {
			c := clients[i%len(clients)]
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					raw, err := c.IQ(ctx, "get", endpoint, discoInfo)
					if err != nil || !strings.Contains(raw, "agent-endpoint-info") {
						errs <- fmt.Errorf("%v %.300s", err, raw)
						return
					}
				}
			})
		}
		wg.Wait()
		prosodyTime += time.Since(t0)
		prosodyN += prosodyIQs
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
		// The gateway's own ceiling.
		d, err := flood.run(gatewayIQs, inFlight)
		if err != nil {
			b.Fatal(err)
		}
		gatewayTime += d
		gatewayN += gatewayIQs
	}
	pr := float64(prosodyN) / prosodyTime.Seconds()
	gr := float64(gatewayN) / gatewayTime.Seconds()
	b.ReportMetric(pr, "prosody-IQ/s")
	b.ReportMetric(gr, "gateway-IQ/s")
	b.ReportMetric(gr/pr, "gateway/prosody")
	b.ReportMetric(float64(flood.errors), "gateway-errors")
}

// flooder is a fake XEP-0114 server with one agentgw serve connected to
// it, which it floods with disco#info.
type flooder struct {
	b    *testing.B
	conn net.Conn
	reqs [][]byte // one disco#info of each sender, ids to be appended
	seq  int
	// errors counts answers that were not endpoint info results (at most
	// 1% of a run; a gateway refusing work answers resource-constraint).
	errors int
}

// startFlooder starts agentgw serve on a database of n endpoints against a
// fake server and returns that server once the stream is up.
func startFlooder(b *testing.B, n int) *flooder {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dbFile := filepath.Join(suite.dir, fmt.Sprintf("bench-%d.db", n))
	seedBenchDB(b, dbFile, harness.ComponentDomain, n)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	const secret = "flood-secret"
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte(secret+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	config := filepath.Join(dir, "flood.toml")
	body := fmt.Sprintf(`
[component]
domain = %q
server = %q
secret_file = "secret"
ping_interval = "1h"

[gateway]
rate_limit = 0
# The 64 senders share one domain.
domain_rate_limit = 0

[database]
path = %q

[log]
level = "info"

[policy]
local_domains = [%q]
[[policy.visibility]]
principals = [%q]
endpoints = ["*"]
`, harness.ComponentDomain, ln.Addr().String(), dbFile, harness.HomeDomain, harness.HomeDomain)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	f := &flooder{b: b}
	accepted := make(chan error, 1)
	go func() { accepted <- f.accept(ln, secret) }()
	g, err := startGatewayWith(ctx, config)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(g.stop)
	if err := <-accepted; err != nil {
		b.Fatal(err)
	}
	local, _ := benchEntry(123)
	for i := range 64 {
		f.reqs = append(f.reqs, fmt.Appendf(nil, `<iq type='get' from='sender-%02d@%s/r' to='%s@%s' id='`, i, harness.HomeDomain, local, harness.ComponentDomain))
	}
	return f
}

// accept takes the gateway's connection and completes the handshake.
func (f *flooder) accept(ln net.Listener, secret string) error {
	conn, err := ln.Accept()
	if err != nil {
		return err
	}
	f.b.Cleanup(func() { conn.Close() })
	dec := xml.NewDecoder(conn)
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "stream" {
			break
		}
	}
	const id = "flood-stream"
	io.WriteString(conn, `<?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams' from='`+harness.ComponentDomain+`' id='`+id+`'>`)
	var hs struct {
		Digest string `xml:",chardata"`
	}
	if err := dec.Decode(&hs); err != nil {
		return err
	}
	if sum := sha1.Sum([]byte(id + secret)); hs.Digest != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("bad handshake")
	}
	io.WriteString(conn, `<handshake/>`)
	f.conn = conn
	return nil
}

// run sends n disco#info, at most inFlight unanswered at any time, spread
// over the 64 senders, and returns how long the answers took. At most 1%
// of the answers may be errors (f.errors counts them).
func (f *flooder) run(n, inFlight int) (time.Duration, error) {
	send := func(k int) error {
		var buf bytes.Buffer
		for range k {
			f.seq++
			buf.Write(f.reqs[f.seq%len(f.reqs)])
			fmt.Fprintf(&buf, "f%d'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", f.seq)
		}
		f.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		_, err := f.conn.Write(buf.Bytes())
		return err
	}
	start := time.Now()
	if err := send(inFlight); err != nil {
		return 0, err
	}
	sent, answered, results := inFlight, 0, 0
	end := []byte("</iq>")
	ok := []byte("agent-endpoint-info:0")
	buf := make([]byte, 256<<10)
	var carry []byte
	for answered < n {
		f.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		m, err := f.conn.Read(buf)
		if err != nil {
			return 0, fmt.Errorf("after %d answers: %w", answered, err)
		}
		// Count across reads: a pattern may straddle two. Whatever lies
		// wholly inside the previous tail was counted with it.
		prev := carry
		chunk := append(append([]byte(nil), prev...), buf[:m]...)
		got := bytes.Count(chunk, end) - bytes.Count(prev, end)
		results += bytes.Count(chunk, ok) - bytes.Count(prev, ok)
		keep := max(len(end), len(ok)) - 1
		carry = append([]byte(nil), chunk[max(len(chunk)-keep, 0):]...)
		answered += got
		if more := min(got, n-sent); more > 0 {
			if err := send(more); err != nil {
				return 0, err
			}
			sent += more
		}
	}
	d := time.Since(start)
	f.errors += n - results
	if (n-results)*100 > n {
		return 0, fmt.Errorf("only %d of %d answers were endpoint info results", results, n)
	}
	return d, nil
}

// BenchmarkAfterIdle measures what the first requests after a quiet spell
// cost, once the gateway has given memory back (gateway.idleRelease: the
// free heap, and the mapped pages of its binary), against the same
// requests right after: each iteration waits 1.6 s, then sends a
// disco#info, a directory page and a search, twice.
//
//	go test ./integration -run XXX -bench AfterIdle -benchtime 20x -count 2
func BenchmarkAfterIdle(b *testing.B) {
	need(b)
	alice := login(b, "alice", harness.HomeDomain)
	ctx := context.Background()
	page := `<query xmlns='http://jabber.org/protocol/disco#items'><set xmlns='http://jabber.org/protocol/rsm'><max>50</max></set></query>`
	reqs := [][3]string{
		{"get", "weather@" + harness.ComponentDomain, discoInfo},
		{"get", harness.ComponentDomain, page},
		{"set", harness.ComponentDomain, searchForm("weath")},
	}
	burst := func() time.Duration {
		t0 := time.Now()
		for _, q := range reqs {
			if raw, err := alice.IQ(ctx, q[0], q[1], q[2]); err != nil || !strings.Contains(raw, "result") {
				b.Fatalf("%v %.300s", err, raw)
			}
		}
		return time.Since(t0)
	}
	var first, warm []time.Duration
	for b.Loop() {
		time.Sleep(1600 * time.Millisecond)
		first = append(first, burst())
		warm = append(warm, burst())
	}
	b.ReportMetric(float64(p50(first).Microseconds()), "after-idle-p50-µs")
	b.ReportMetric(float64(p50(warm).Microseconds()), "warm-p50-µs")
	b.ReportMetric(float64(p50(first)-p50(warm))/1e3, "extra-µs")
}
