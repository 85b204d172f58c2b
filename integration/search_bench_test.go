package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
)

// vjudJID is ejabberd's XEP-0055 service (mod_vcard with search enabled).
const vjudJID = "vjud." + harness.RemoteDomain

// benchVjud tracks the vjud population, which only grows: 1k entries, then
// 9k more for 10k.
var benchVjud struct {
	sync.Mutex
	users int
}

// benchEntry is entry i on both sides: ejabberd account bench-NNNNNN with
// vCard NICKNAME "Agent NNNNNN", and endpoint bench-NNNNNN@agents.example
// titled "Agent NNNNNN".
func benchEntry(i int) (local, nick string) {
	return fmt.Sprintf("bench-%06d", i), fmt.Sprintf("Agent %06d", i)
}

// populateVjud grows ejabberd's vCard population to n accounts through
// mod_http_api (register, then set_vcard), 16 requests at a time.
func populateVjud(b *testing.B, n int) {
	b.Helper()
	benchVjud.Lock()
	defer benchVjud.Unlock()
	if benchVjud.users >= n {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				local, nick := benchEntry(i)
				if err := suite.env.Register(ctx, local, harness.RemoteDomain, password); err != nil {
					errs <- err
					return
				}
				if err := suite.env.SetVCard(ctx, local, "NICKNAME", nick); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := benchVjud.users; i < n; i++ {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	if err != nil {
		b.Fatalf("populate vjud: %v", err)
	}
	b.Logf("vjud: %d accounts with vCards added in %v", n-benchVjud.users, time.Since(start).Round(time.Millisecond))
	benchVjud.users = n
}

// seedBenchDB creates, unless it exists, a database at path of n endpoints
// benchEntry(i)@domain.
func seedBenchDB(b *testing.B, path, domain string, n int) {
	b.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	manifests := make([]string, n)
	for i := range manifests {
		local, nick := benchEntry(i)
		manifests[i] = fmt.Sprintf(`{"manifestSpecVersion":"0","agent":{"jid":"%s@%s","name":%q,"title":%q,"version":"1.0.0"},"tools":[]}`,
			local, domain, local, nick)
	}
	start := time.Now()
	if err := importManifests(ctx, path, domain, manifests); err != nil {
		b.Fatal(err)
	}
	b.Logf("agentgw: %d endpoints of %s imported and indexed in %v", n, domain, time.Since(start).Round(time.Millisecond))
}

// benchGateway stops the suite's gateway and starts one on a database of n
// endpoints, with the suite's configuration otherwise. restore brings the
// suite's gateway back.
func benchGateway(b *testing.B, n int) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dbFile := fmt.Sprintf("bench-%d.db", n)
	seedBenchDB(b, filepath.Join(suite.dir, dbFile), harness.ComponentDomain, n)
	body, err := os.ReadFile(suite.config)
	if err != nil {
		b.Fatal(err)
	}
	config := filepath.Join(suite.dir, fmt.Sprintf("bench-%d.toml", n))
	if err := os.WriteFile(config, []byte(withStore(b, string(body), fmt.Sprintf("path = %q", dbFile))), 0o600); err != nil {
		b.Fatal(err)
	}

	// One component connection per domain: the suite's gateway yields.
	suite.gateway.stop()
	g, err := startGatewayWith(ctx, config)
	if err != nil {
		b.Fatalf("bench gateway: %v", err)
	}
	return func() {
		g.stop()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if suite.gateway, err = startGateway(ctx); err != nil {
			b.Fatalf("restart the suite gateway: %v", err)
		}
	}
}

// searchForm is the search both services get: a submitted data form.
func searchForm(nick string) string {
	return `<query xmlns='jabber:iq:search'><x xmlns='jabber:x:data' type='submit'>` +
		`<field type='hidden' var='FORM_TYPE'><value>jabber:iq:search</value></field>` +
		`<field var='nick'><value>` + nick + `</value></field></x></query>`
}

// BenchmarkSearchVsVjud compares agentgw's search with ejabberd's vjud
// (mod_vcard search, Mnesia) on the same number of entries, 1k and 10k,
// through the same client package, in one run: each round sends, in turn
// (rotating which goes first), a disco#info and then the same search to
//
//   - "ours": agentgw as Prosody's component, as alice on Prosody;
//   - "ejgw": the same binary as ejabberd's own component
//     (harness.RemoteComponentDomain), as bob on ejabberd;
//   - "vjud": vjud.remote.example, as bob on ejabberd.
//
// The disco#info is each service's routing floor; "above floor" is the
// per-round search minus floor, medians reported. ejgw and vjud share a
// server and a client connection, so their floors differ only by the
// component hop: the fairest comparison of the two searches.
//
//   - exact: nick "Agent 000123", which one entry has on every side (and,
//     to "ours" only, the same search with the legacy <nick/>);
//   - empty: an empty nick. agentgw answers a capped RSM page (50 of n),
//     vjud every entry.
//
// Run it as
//
//	go test ./integration -run XXX -bench SearchVsVjud -benchtime 300x
func BenchmarkSearchVsVjud(b *testing.B) {
	need(b)
	alice := login(b, "alice", harness.HomeDomain)
	bob := login(b, "bob", harness.RemoteDomain)
	raw, err := bob.IQ(context.Background(), "get", vjudJID, discoInfo)
	if err != nil || !strings.Contains(raw, "jabber:iq:search") {
		b.Fatalf("%s is not a search service: %v %s", vjudJID, err, raw)
	}
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			populateVjud(b, n)
			restore := benchGateway(b, n)
			defer restore()
			ejName := fmt.Sprintf("ejgw-%d", n)
			seedBenchDB(b, filepath.Join(suite.dir, ejName, "agentgw.db"), harness.RemoteComponentDomain, n)
			startEjabberdGateway(b, ejName, "")
			local, nick := benchEntry(123)
			sides := func() (ours, ejgw, vjud *side) {
				return &side{name: "ours", c: alice, to: harness.ComponentDomain},
					&side{name: "ejgw", c: bob, to: harness.RemoteComponentDomain},
					&side{name: "vjud", c: bob, to: vjudJID}
			}
			b.Run("exact", func(b *testing.B) {
				ours, ejgw, vjud := sides()
				found := func(domain string) func(string) error {
					return func(raw string) error {
						if !strings.Contains(raw, local+"@"+domain) || strings.Count(raw, "<item") != 1 {
							return fmt.Errorf("did not find exactly %s@%s: %.500s", local, domain, raw)
						}
						return nil
					}
				}
				ours.check, ejgw.check, vjud.check = found(harness.ComponentDomain), found(harness.RemoteComponentDomain), found(harness.RemoteDomain)
				legacy := `<query xmlns='jabber:iq:search'><nick>` + nick + `</nick></query>`
				sideBySide(b, searchForm(nick), legacy, ours, ejgw, vjud)
			})
			b.Run("empty", func(b *testing.B) {
				ours, ejgw, vjud := sides()
				page := func(raw string) error {
					if got := strings.Count(raw, "<item"); got != 50 || !strings.Contains(raw, fmt.Sprintf("<count>%d</count>", n)) && !strings.Contains(raw, fmt.Sprintf("<count>%d</count>", n+1)) {
						return fmt.Errorf("%d items: %.500s", got, raw)
					}
					return nil
				}
				ours.check, ejgw.check = page, page
				vjud.check = func(raw string) error {
					if got := strings.Count(raw, "<item"); got != n {
						return fmt.Errorf("vjud: %d items of %d: %.500s", got, n, raw)
					}
					return nil
				}
				sideBySide(b, searchForm(""), "", ours, ejgw, vjud)
			})
		})
	}
}

// side is one service of BenchmarkSearchVsVjud and what it measured.
type side struct {
	name              string
	c                 *c2s.Client
	to                string
	check             func(raw string) error // the first search answer
	floor, srch, over []time.Duration
	bytes             int
}

// sideBySide runs the interleaved rounds over ours, ejgw and vjud and
// reports the medians. If legacy is set, each round also sends it to ours
// alone (vjud refuses legacy fields), to show what the form's shape costs on
// the way through Prosody.
func sideBySide(b *testing.B, search, legacy string, ours, ejgw, vjud *side) {
	ctx := context.Background()
	round := func(s *side, first bool) {
		t0 := time.Now()
		if raw, err := s.c.IQ(ctx, "get", s.to, discoInfo); err != nil || !strings.Contains(raw, `type="result"`) && !strings.Contains(raw, `type='result'`) {
			b.Fatalf("disco#info to %s: %v %.300s", s.to, err, raw)
		}
		t1 := time.Now()
		raw, err := s.c.IQ(ctx, "set", s.to, search)
		if err != nil {
			b.Fatalf("search at %s: %v", s.to, err)
		}
		t2 := time.Now()
		s.floor = append(s.floor, t1.Sub(t0))
		s.srch = append(s.srch, t2.Sub(t1))
		s.over = append(s.over, t2.Sub(t1)-t1.Sub(t0))
		s.bytes = len(raw)
		if first {
			if err := s.check(raw); err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
		}
	}
	order := []*side{ours, ejgw, vjud}
	var legacyRTT []time.Duration
	i := 0
	for b.Loop() {
		if legacy != "" {
			t0 := time.Now()
			if raw, err := ours.c.IQ(ctx, "set", ours.to, legacy); err != nil || !strings.Contains(raw, "<item") {
				b.Fatalf("legacy search: %v %.300s", err, raw)
			}
			legacyRTT = append(legacyRTT, time.Since(t0))
		}
		for k := range order {
			round(order[(i+k)%len(order)], i == 0)
		}
		i++
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	for _, s := range order {
		floor, srch := p50(s.floor), p50(s.srch)
		b.ReportMetric(us(floor), s.name+"-disco-µs")
		b.ReportMetric(us(srch), s.name+"-search-µs")
		b.ReportMetric(us(p50(s.over)), s.name+"-above-floor-µs")
		b.ReportMetric(float64(s.bytes), s.name+"-bytes")
		if s != vjud {
			b.ReportMetric(float64(srch)/float64(floor), s.name+"-search/disco")
			if v := p50(vjud.over); v > 0 {
				b.ReportMetric(float64(p50(s.over))/float64(v), "above-floor-"+s.name+"/vjud")
			}
		}
	}
	if len(legacyRTT) > 0 {
		b.ReportMetric(us(p50(legacyRTT)), "ours-legacy-search-µs")
		b.ReportMetric(float64(p50(legacyRTT))/float64(p50(ours.floor)), "ours-legacy/disco")
	}
}
