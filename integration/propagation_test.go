package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/internal/pgtest"
)

// Change propagation between gateways (issue 34): a write by one gateway
// is seen by every other within 250 ms, in the directory, search, disco,
// the answer memo and ad-hoc. Both gateways share one PostgreSQL database
// and are both ejabberd's component for one domain, so ejabberd hands
// each stanza to either one at random; the writer sees its own write at
// once (db: a Store's own commit marks its index dirty), the other one
// at its next check of the store's search generation (db.memRecheck).

const (
	// propagationRounds is the number of writes measured.
	propagationRounds = 10
	// propagationBar is the bar of issue 34.
	propagationBar = 250 * time.Millisecond
	// propagationWatch is how long the readers go on after a write's
	// answer: well past the bar, so that a late stale answer is seen.
	propagationWatch = 900 * time.Millisecond
	// propagationTitle is the title of the second version of the ledger,
	// and propagationWord a word of it that no other endpoint has.
	propagationTitle = "Ledger Quokka"
	propagationWord  = "quokka"
	// propagationTool is the tool only the second version has: a command
	// of its own.
	propagationTool = "ledger.audit"
)

// ledgerTitle is the title of the ledger's first version
// (examples/tools/ledger-tool.manifest.json).
const ledgerTitle = "Ledger (example)"

// propagationReading is one read of one surface: when it was sent, and
// whether its answer showed the second version (else the first).
type propagationReading struct {
	surface string
	sent    time.Time
	second  bool
}

// TestGatewaysSeeEachOthersWrites: two gateways on one PostgreSQL database,
// both connected to ejabberd. carol, an admin, switches the ledger
// endpoint between two versions over the provisioning API (the activation
// reaches whichever gateway ejabberd picks), ten times; meanwhile bob
// reads, without pause and over several connections, the four surfaces the
// versions differ on: the directory (the item's name), a search for a word
// of the second version's title, the endpoint's disco#info (memo'd: the
// same read was answered many times before the write) and its ad-hoc
// command list (the second version has one command more). No read sent
// 250 ms or more after the activation's answer (which comes after its
// commit) may show the version before it; the propagation of each round is
// when every read sent from then on showed the new one.
func TestGatewaysSeeEachOthersWrites(t *testing.T) {
	onePass(t)
	need(t)
	if testing.Short() {
		t.Skip("skipped with -short")
	}
	res := measurePropagation(t, pgtest.URL(t), propagationRounds)
	if len(res) == 0 {
		return
	}
	slices.Sort(res)
	t.Logf("PostgreSQL: change propagation between two gateways over %d writes: p50 %v, max %v",
		len(res), res[len(res)/2].Round(time.Millisecond), res[len(res)-1].Round(time.Millisecond))
}

// TestGatewaysSeeEachOthersWritesSQLite is TestGatewaysSeeEachOthersWrites
// with the two gateways on one SQLite file, on one machine.
func TestGatewaysSeeEachOthersWritesSQLite(t *testing.T) {
	onePass(t)
	need(t)
	if testing.Short() {
		t.Skip("skipped with -short")
	}
	res := measurePropagation(t, "", propagationRounds)
	if len(res) == 0 {
		return
	}
	slices.Sort(res)
	t.Logf("SQLite: change propagation between two gateways over %d writes: p50 %v, max %v",
		len(res), res[len(res)/2].Round(time.Millisecond), res[len(res)-1].Round(time.Millisecond))
}

// measurePropagation runs the rounds of TestGatewaysSeeEachOthersWrites on
// the PostgreSQL database at pgURL (SQLite if "") and returns each round's propagation:
// from the activation's answer to the first read after which every read
// showed the new version.
func measurePropagation(t *testing.T, pgURL string, rounds int) []time.Duration {
	t.Helper()
	name := "propagation-sqlite"
	if pgURL != "" {
		name = "propagation-pg"
	}
	config, _ := multiEjabberdConfigOn(t, name, pgURL)
	admin := "carol@" + harness.RemoteDomain
	raw, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(strings.Replace(string(raw), "[policy]\n", fmt.Sprintf("[policy]\nadmins = [%q]\n", admin), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The second version: another title, one tool more.
	dir := filepath.Dir(config)
	first, err := os.ReadFile(filepath.Join(dir, "ledger.manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(first, &doc); err != nil {
		t.Fatal(err)
	}
	agent := doc["agent"].(map[string]any)
	agent["title"], agent["version"] = propagationTitle, "2.0.0"
	tools := doc["tools"].([]any)
	audit := map[string]any{}
	for k, v := range tools[0].(map[string]any) {
		audit[k] = v
	}
	audit["name"], audit["title"] = propagationTool, "Audit the ledger"
	doc["tools"] = append(tools, audit)
	second, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	secondFile := filepath.Join(dir, "ledger-2.manifest.json")
	if err := os.WriteFile(secondFile, second, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := agentgw(ctx, "endpoint", "register", "-config", config, secondFile); err != nil {
		t.Fatalf("register the second version: %v %s", err, out)
	}
	versions := []struct{ version, hash string }{
		{ledgerVersion, mustManifest(t, string(first)).HashBase64()},
		{"2.0.0", mustManifest(t, string(second)).HashBase64()},
	}

	a, err := startGatewayWith(ctx, config)
	if err != nil {
		t.Fatalf("gateway A: %v", err)
	}
	t.Cleanup(a.stop)
	b, err := startGatewayWith(ctx, config)
	if err != nil {
		t.Fatalf("gateway B: %v", err)
	}
	t.Cleanup(b.stop)
	writer := login(t, "carol", harness.RemoteDomain)
	readers := make([]*c2s.Client, 3)
	for i := range readers {
		readers[i] = login(t, "bob", harness.RemoteDomain)
	}

	// read asks one surface and reports whether its answer shows the
	// second version (true) or the first (false).
	commands := `<query xmlns='http://jabber.org/protocol/disco#items' node='http://jabber.org/protocol/commands'/>`
	type surfaceRead struct {
		name, to, typ, payload string
		second                 func(raw string) (bool, error)
	}
	either := func(raw string, second, first string) (bool, error) {
		switch {
		case !strings.Contains(raw, "type='result'") && !strings.Contains(raw, `type="result"`):
			return false, fmt.Errorf("not a result: %s", raw)
		case strings.Contains(raw, second):
			return true, nil
		case first == "" || strings.Contains(raw, first):
			return false, nil
		}
		return false, fmt.Errorf("neither version: %s", raw)
	}
	surfaces := []surfaceRead{
		{"directory", harness.RemoteComponentDomain, "get", discoItems, func(raw string) (bool, error) {
			return either(raw, propagationTitle, wireText(ledgerTitle))
		}},
		{"search", harness.RemoteComponentDomain, "set", formSearch(propagationWord, ""), func(raw string) (bool, error) {
			return either(raw, multiLedger, "")
		}},
		{"disco#info", multiLedger, "get", discoInfo, func(raw string) (bool, error) {
			return either(raw, propagationTitle, wireText(ledgerTitle))
		}},
		{"ad-hoc", multiLedger, "get", commands, func(raw string) (bool, error) {
			return either(raw, propagationTool, ledgerTool)
		}},
	}

	var (
		mu       sync.Mutex
		readings []propagationReading
		failures []string
		// unanswered counts reads with no answer in 10 s: on a loaded
		// machine an IQ can wait that long, and a read that never came
		// back says nothing of staleness. Only a run where most reads
		// go unanswered fails for it.
		unanswered int
		stop       = make(chan struct{})
		wg         sync.WaitGroup
	)
	for _, c := range readers {
		for _, s := range surfaces {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					sent := time.Now()
					ictx, icancel := context.WithTimeout(ctx, 10*time.Second)
					raw, err := c.IQ(ictx, s.typ, s.to, s.payload)
					icancel()
					var second bool
					if err == nil {
						second, err = s.second(raw)
					}
					mu.Lock()
					if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
						unanswered++
					} else if err != nil {
						if len(failures) < 10 {
							failures = append(failures, s.name+": "+err.Error())
						}
					} else {
						readings = append(readings, propagationReading{s.name, sent, second})
					}
					mu.Unlock()
					if err != nil {
						time.Sleep(50 * time.Millisecond)
					}
				}
			}()
		}
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	// since returns the readings sent at or after from, in order.
	since := func(from time.Time) []propagationReading {
		mu.Lock()
		defer mu.Unlock()
		var out []propagationReading
		for _, r := range readings {
			if !r.sent.Before(from) {
				out = append(out, r)
			}
		}
		slices.SortFunc(out, func(x, y propagationReading) int { return x.sent.Compare(y.sent) })
		return out
	}
	// settled waits until every surface has answered want at least 8
	// times in a row since from (so both gateways hold it, memo'd).
	settled := func(from time.Time, want bool) {
		for {
			runs := map[string]int{}
			for _, r := range since(from) {
				if r.second == want {
					runs[r.surface]++
				} else {
					runs[r.surface] = 0
				}
			}
			ok := true
			for _, s := range surfaces {
				ok = ok && runs[s.name] >= 8
			}
			if ok {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("the surfaces never all showed version %v: %v", want, runs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settled(time.Now(), false)

	var out []time.Duration
	var worstStale time.Duration
	writes := map[string]int{}
	for round := range rounds {
		want := round%2 == 0 // even rounds activate the second version
		v := versions[0]
		if want {
			v = versions[1]
		}
		aBefore, bBefore := strings.Count(a.logText(), "msg=provisioning"), strings.Count(b.logText(), "msg=provisioning")
		w := time.Now()
		el, raw := iq(t, writer, "set", harness.RemoteComponentDomain,
			`<activate xmlns='urn:xmpp:agent-api:0' jid='`+multiLedger+`' version='`+v.version+`'><hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>`+v.hash+`</hash></activate>`)
		answered := time.Now()
		if typ, _ := el.AttrValue("type"); typ != "result" {
			t.Fatalf("round %d: activate %s: %s", round, v.version, raw)
		}
		time.Sleep(propagationWatch)
		rs := since(answered)
		var lastStale, allFresh time.Duration = -1, 0
		perSurface := map[string]int{}
		staleOn := map[string]time.Duration{}
		for i, r := range rs {
			perSurface[r.surface]++
			if r.second != want {
				lastStale = r.sent.Sub(answered)
				staleOn[r.surface] = lastStale.Round(time.Millisecond)
				if i+1 < len(rs) {
					allFresh = rs[i+1].sent.Sub(answered)
				} else {
					allFresh = propagationWatch
				}
			}
		}
		for _, s := range surfaces {
			if perSurface[s.name] < 4 {
				t.Errorf("round %d: only %d reads of %s after the write", round, perSurface[s.name], s.name)
			}
		}
		if lastStale >= propagationBar {
			t.Errorf("round %d: a read sent %v after the activation's answer showed the version before it (last stale read of each surface: %v)",
				round, lastStale.Round(time.Millisecond), staleOn)
		}
		worstStale = max(worstStale, lastStale)
		who := "?"
		switch {
		case strings.Count(a.logText(), "msg=provisioning") > aBefore:
			who = "A"
		case strings.Count(b.logText(), "msg=provisioning") > bBefore:
			who = "B"
		}
		writes[who]++
		stale := "none"
		if lastStale >= 0 {
			stale = lastStale.Round(time.Millisecond).String() + " after the answer"
		}
		t.Logf("round %d (written by %s, answered in %v): %d reads in %v; last stale read sent: %s; all fresh from %v",
			round, who, answered.Sub(w).Round(time.Millisecond), len(rs), propagationWatch, stale, allFresh.Round(time.Millisecond))
		out = append(out, allFresh)
		settled(answered, want)
		t.Logf("round %d: every surface answered the new version 8 times in a row %v after the answer", round, time.Since(answered).Round(time.Millisecond))
	}
	mu.Lock()
	for _, f := range failures {
		t.Errorf("read: %s", f)
	}
	if unanswered > 0 {
		t.Logf("%d reads had no answer within 10 s, of %d", unanswered, unanswered+len(readings))
		if unanswered > len(readings) {
			t.Errorf("most reads had no answer within 10 s: %d of %d", unanswered, unanswered+len(readings))
		}
	}
	mu.Unlock()
	t.Logf("writes by gateway: %v; the latest stale read of all rounds was sent %v after its write's answer", writes, worstStale.Round(time.Millisecond))
	return out
}

// wireText is s as the gateway's XML writer escapes it in an attribute
// or text: none of the ledger's titles needs more than this.
func wireText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
