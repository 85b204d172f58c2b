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

	"agentgw/client"
	"agentgw/db"
	"agentgw/internal/harness"
	"agentgw/manifest"
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

// benchGateway stops the suite's gateway and starts one on a database of n
// endpoints, with the suite's configuration otherwise. restore brings the
// suite's gateway back.
func benchGateway(b *testing.B, n int) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dbFile := fmt.Sprintf("bench-%d.db", n)
	if _, err := os.Stat(filepath.Join(suite.dir, dbFile)); os.IsNotExist(err) {
		store, err := db.Open(ctx, filepath.Join(suite.dir, dbFile))
		if err != nil {
			b.Fatal(err)
		}
		vs := make([]db.Version, n)
		for i := range vs {
			local, nick := benchEntry(i)
			body := fmt.Sprintf(`{"manifestSpecVersion":"0","agent":{"jid":"%s@%s","name":%q,"title":%q,"version":"1.0.0"},"tools":[]}`,
				local, harness.ComponentDomain, local, nick)
			m, err := manifest.Parse([]byte(body), manifest.Options{Domain: harness.ComponentDomain})
			if err != nil {
				b.Fatal(err)
			}
			vs[i] = db.Version{JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical, Name: m.Name, Title: m.Title}
		}
		start := time.Now()
		err = store.ImportVersions(ctx, vs, true)
		store.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("agentgw: %d endpoints imported and indexed in %v", n, time.Since(start).Round(time.Millisecond))
	}
	body, err := os.ReadFile(suite.config)
	if err != nil {
		b.Fatal(err)
	}
	const dbLine = `path = "agentgw.db"`
	if !strings.Contains(string(body), dbLine) {
		b.Fatalf("suite config has no %s", dbLine)
	}
	config := filepath.Join(suite.dir, fmt.Sprintf("bench-%d.toml", n))
	if err := os.WriteFile(config, []byte(strings.Replace(string(body), dbLine, fmt.Sprintf("path = %q", dbFile), 1)), 0o600); err != nil {
		b.Fatal(err)
	}

	// One component connection per domain: the suite's gateway yields.
	suite.gateway.stop()
	saved := suite.config
	suite.config = config
	g, err := startGateway(ctx)
	suite.config = saved
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
// (alternating which server goes first), a disco#info to agentgw's gateway
// JID and a search to it, as alice on Prosody; and a disco#info to vjud and
// the same search to it, as bob on ejabberd. The disco#info is each
// server's routing floor; "above floor" is the per-round search minus
// floor, medians reported.
//
//   - exact: nick "Agent 000123", which one entry has on both sides (and,
//     to agentgw only, the same search with the legacy <nick/>);
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
			local, nick := benchEntry(123)
			b.Run("exact", func(b *testing.B) {
				legacy := `<query xmlns='jabber:iq:search'><nick>` + nick + `</nick></query>`
				sideBySide(b, alice, bob, searchForm(nick), legacy, func(ours, vjud string) error {
					if !strings.Contains(ours, local+"@"+harness.ComponentDomain) || !strings.Contains(ours, "<count>1</count>") {
						return fmt.Errorf("agentgw did not find exactly %s: %.500s", local, ours)
					}
					if !strings.Contains(vjud, local+"@"+harness.RemoteDomain) || strings.Count(vjud, "<item") != 1 {
						return fmt.Errorf("vjud did not find exactly %s: %.500s", local, vjud)
					}
					return nil
				})
			})
			b.Run("empty", func(b *testing.B) {
				sideBySide(b, alice, bob, searchForm(""), "", func(ours, vjud string) error {
					if got := strings.Count(ours, "<item"); got != 50 || !strings.Contains(ours, fmt.Sprintf("<count>%d</count>", n)) {
						return fmt.Errorf("agentgw: %d items: %.500s", got, ours)
					}
					if got := strings.Count(vjud, "<item"); got != n {
						return fmt.Errorf("vjud: %d items of %d: %.500s", got, n, vjud)
					}
					return nil
				})
			})
		})
	}
}

// sideBySide runs the interleaved rounds, checking the first round's answers
// with check, and reports the medians. If legacy is set, each round also
// sends it to agentgw alone (vjud refuses legacy fields), to show what the
// form's shape costs on the way through Prosody.
func sideBySide(b *testing.B, alice, bob *client.Client, search, legacy string, check func(ours, vjud string) error) {
	ctx := context.Background()
	type side struct {
		c                 *client.Client
		to                string
		floor, srch, over []time.Duration
		bytes             int
		last              string
	}
	ours := &side{c: alice, to: harness.ComponentDomain}
	vjud := &side{c: bob, to: vjudJID}
	round := func(s *side) {
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
		s.bytes, s.last = len(raw), raw
	}
	var legacyRTT []time.Duration
	i := 0
	for b.Loop() {
		if legacy != "" {
			t0 := time.Now()
			if raw, err := alice.IQ(ctx, "set", harness.ComponentDomain, legacy); err != nil || !strings.Contains(raw, "<item") {
				b.Fatalf("legacy search: %v %.300s", err, raw)
			}
			legacyRTT = append(legacyRTT, time.Since(t0))
		}
		if i%2 == 0 {
			round(ours)
			round(vjud)
		} else {
			round(vjud)
			round(ours)
		}
		if i == 0 {
			if err := check(ours.last, vjud.last); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	oFloor, oSearch, oOver := p50(ours.floor), p50(ours.srch), p50(ours.over)
	vFloor, vSearch, vOver := p50(vjud.floor), p50(vjud.srch), p50(vjud.over)
	b.ReportMetric(us(oFloor), "ours-disco-µs")
	b.ReportMetric(us(oSearch), "ours-search-µs")
	b.ReportMetric(us(vFloor), "vjud-disco-µs")
	b.ReportMetric(us(vSearch), "vjud-search-µs")
	b.ReportMetric(float64(oSearch)/float64(oFloor), "ours-search/disco")
	b.ReportMetric(us(oOver), "ours-above-floor-µs")
	b.ReportMetric(us(vOver), "vjud-above-floor-µs")
	if vOver > 0 {
		b.ReportMetric(float64(oOver)/float64(vOver), "above-floor-ours/vjud")
	}
	if len(legacyRTT) > 0 {
		b.ReportMetric(us(p50(legacyRTT)), "ours-legacy-search-µs")
		b.ReportMetric(float64(p50(legacyRTT))/float64(oFloor), "ours-legacy/disco")
	}
	b.ReportMetric(float64(ours.bytes), "ours-bytes")
	b.ReportMetric(float64(vjud.bytes), "vjud-bytes")
}
