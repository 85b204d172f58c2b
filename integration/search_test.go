package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/search"
	"agentgw/wire"
)

const (
	// meteoJID is registered by the search tests (and deactivated after
	// each), so the other tests keep the seeded directory.
	meteoJID      = "meteo@" + harness.ComponentDomain
	meteoManifest = `{"manifestSpecVersion":"0","agent":{"jid":"meteo@agents.example","name":"meteo","title":"Météo Agent","version":"1.0.0"},"tools":[]}`
	weatherJID    = "weather@" + harness.ComponentDomain
)

// withMeteo registers and activates meteo@ ("Météo Agent") through the CLI
// for the duration of the test.
func withMeteo(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	file := filepath.Join(suite.dir, "meteo.json")
	if err := os.WriteFile(file, []byte(meteoManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", file); err != nil {
		t.Fatalf("register meteo: %v %s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := agentgw(ctx, "endpoint", "deactivate", "-config", suite.config, meteoJID); err != nil {
			t.Errorf("deactivate meteo: %v %s", err, out)
		}
	})
}

// formSearch is a search set with the data form; set is the inside of the
// RSM <set/>, if any.
func formSearch(nick, set string) string {
	rsm := ""
	if set != "" {
		rsm = `<set xmlns='http://jabber.org/protocol/rsm'>` + set + `</set>`
	}
	return `<query xmlns='jabber:iq:search'>` + rsm + `<x xmlns='jabber:x:data' type='submit'>` +
		`<field type='hidden' var='FORM_TYPE'><value>jabber:iq:search</value></field>` +
		`<field var='nick'><value>` + nick + `</value></field></x></query>`
}

// legacySearch is a search set with the legacy <nick/> field.
func legacySearch(nick, set string) string {
	rsm := ""
	if set != "" {
		rsm = `<set xmlns='http://jabber.org/protocol/rsm'>` + set + `</set>`
	}
	return `<query xmlns='jabber:iq:search'><nick>` + nick + `</nick>` + rsm + `</query>`
}

// doSearch sends a search set and parses the answer, which must be a
// result in the request's mode (form or legacy).
func doSearch(t *testing.T, c *c2s.Client, payload string) search.Result {
	t.Helper()
	el, raw := iq(t, c, "set", harness.ComponentDomain, payload)
	if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Fatalf("search answered %s", raw)
	}
	q, ok := el.Child(search.Name)
	if !ok {
		t.Fatalf("no search query in %s", raw)
	}
	res, err := search.ParseResult(q)
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if res.Set == nil {
		t.Fatalf("no RSM set in %s", raw)
	}
	if legacy := strings.Contains(payload, "<nick>"); res.Legacy != legacy {
		t.Fatalf("legacy request %v answered legacy %v: %s", legacy, res.Legacy, raw)
	}
	return res
}

// searchAll pages through every result with max per page and returns the
// JIDs, checking count, first/last and order on every page.
func searchAll(t *testing.T, c *c2s.Client, build func(nick, set string) string, nick string, max int) ([]string, int) {
	t.Helper()
	var all []string
	count := -1
	after := ""
	for page := 0; page < 100; page++ {
		set := fmt.Sprintf("<max>%d</max>", max)
		if after != "" {
			set += "<after>" + after + "</after>"
		}
		res := doSearch(t, c, build(nick, set))
		if count >= 0 && res.Set.Count != count {
			t.Fatalf("page %d: count changed from %d to %d", page, count, res.Set.Count)
		}
		count = res.Set.Count
		if len(res.Items) == 0 {
			break
		}
		if len(res.Items) > max {
			t.Fatalf("page %d: %d items for max %d", page, len(res.Items), max)
		}
		if res.Set.First != res.Items[0].JID || res.Set.Last != res.Items[len(res.Items)-1].JID {
			t.Fatalf("page %d: first/last %s/%s do not match the items", page, res.Set.First, res.Set.Last)
		}
		for _, it := range res.Items {
			all = append(all, it.JID)
		}
		after = res.Set.Last
	}
	if !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("%q: results are not in strictly ascending octet order", nick)
	}
	return all, count
}

func agentJIDs(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("agent-%03d@%s", i, harness.ComponentDomain))
	}
	return out
}

// TestSearchFormAndFeatures: the gateway advertises search, and its form is
// the spec's.
func TestSearchFormAndFeatures(t *testing.T) {
	need(t)
	alice := login(t, "alice", harness.HomeDomain)
	_, raw := iq(t, alice, "get", harness.ComponentDomain, discoInfo)
	for _, f := range search.Features {
		if !strings.Contains(raw, f) {
			t.Errorf("gateway info lacks %s: %s", f, raw)
		}
	}
	el, raw := iq(t, alice, "get", harness.ComponentDomain, `<query xmlns='jabber:iq:search'/>`)
	q, ok := el.Child(search.Name)
	if !ok {
		t.Fatalf("no search form: %s", raw)
	}
	fields, err := search.ParseFields(q)
	if err != nil {
		t.Fatal(err)
	}
	if fields.Form == nil || fields.Form.FormType != search.NS || len(fields.Form.Fields) != 1 || fields.Form.Fields[0].Var != "nick" ||
		!slices.Equal(fields.Legacy, []string{"nick"}) || fields.Instructions == "" {
		t.Errorf("search form: %+v", fields)
	}
}

// TestSearchPaging pages with the form and with legacy fields through more
// than 250 matches, and checks non-ASCII and mixed-case matching.
func TestSearchPaging(t *testing.T) {
	need(t)
	withMeteo(t)
	alice := login(t, "alice", harness.HomeDomain)

	// "agent" is in every generated title and localpart, and in "Météo
	// Agent": numAgents+1 matches, paged by 50 with the form.
	want := append(agentJIDs(0, numAgents), meteoJID)
	got, count := searchAll(t, alice, formSearch, "agent", 50)
	if count != numAgents+1 || !slices.Equal(got, want) {
		t.Errorf("form search for agent: %d results (count %d), want %d", len(got), count, len(want))
	}
	// The same with legacy fields, mixed case, by 37.
	got, count = searchAll(t, alice, legacySearch, "aGeNt", 37)
	if count != numAgents+1 || !slices.Equal(got, want) {
		t.Errorf("legacy search for aGeNt: %d results (count %d), want %d", len(got), count, len(want))
	}
	// "Agent 1" is in agent-100…199's titles: 100 of them.
	got, count = searchAll(t, alice, legacySearch, "AGENT 1", 30)
	if count != 100 || !slices.Equal(got, agentJIDs(100, 200)) {
		t.Errorf("legacy search for AGENT 1: %d results (count %d)", len(got), count)
	}

	for _, tc := range []struct {
		payload string
		want    []string
	}{
		{formSearch("MÉTÉO", ""), []string{meteoJID}},
		{formSearch("météo", ""), []string{meteoJID}},
		{legacySearch("me\u0301te\u0301o", ""), []string{meteoJID}}, // decomposed
		{formSearch("WEATH", ""), []string{weatherJID}},
		{legacySearch("wEaThEr", ""), []string{weatherJID}},
		{formSearch("agent-042", ""), []string{"agent-042@" + harness.ComponentDomain}},
		{formSearch("no such agent", ""), nil},
	} {
		res := doSearch(t, alice, tc.payload)
		var jids []string
		for _, it := range res.Items {
			jids = append(jids, it.JID)
		}
		if !slices.Equal(jids, tc.want) || res.Set.Count != len(tc.want) {
			t.Errorf("%s: %q count %d, want %q", tc.payload, jids, res.Set.Count, tc.want)
		}
		if len(tc.want) == 1 && tc.want[0] == meteoJID && res.Items[0].Nick != "Météo Agent" {
			t.Errorf("meteo's nick is %q", res.Items[0].Nick)
		}
	}

	// The empty query lists every visible endpoint, capped like the
	// directory (100), in the directory's order.
	all, count := searchAll(t, alice, formSearch, "", 1000)
	if count != numAgents+2 || len(all) != numAgents+2 {
		t.Fatalf("empty query: %d results, count %d", len(all), count)
	}
	first := doSearch(t, alice, formSearch("", "<max>1000</max>"))
	if len(first.Items) != 100 {
		t.Errorf("empty query page: %d items, want the cap of 100", len(first.Items))
	}
	el, _ := iq(t, alice, "get", harness.ComponentDomain, rsmItems("", "<max>100</max>"))
	if dir := parsePage(t, el); !slices.Equal(dir.jids, all[:100]) {
		t.Errorf("empty search and directory differ")
	}

	// Malformed requests.
	for _, tc := range []struct{ payload, want string }{
		{formSearch("x", "<max>lots</max>"), "bad-request"},
		{`<query xmlns='jabber:iq:search'><x xmlns='jabber:x:data' type='submit'><field type='hidden' var='FORM_TYPE'><value>urn:other</value></field></x></query>`, "not-acceptable"},
		{`<query xmlns='jabber:iq:search'><nick>a</nick><email>b</email></query>`, "not-acceptable"},
	} {
		if _, raw := iq(t, alice, "set", harness.ComponentDomain, tc.payload); !strings.Contains(raw, tc.want) {
			t.Errorf("%s: %s, want %s", tc.payload, raw, tc.want)
		}
	}
}

// TestSearchRemote: over s2s, bob (no grant) finds nothing and counts 0;
// carol, once granted two endpoints and a nonexistent one, finds exactly
// the two.
func TestSearchRemote(t *testing.T) {
	need(t)
	withMeteo(t)
	bob := login(t, "bob", harness.RemoteDomain)
	for _, payload := range []string{formSearch("", "<max>50</max>"), formSearch("agent", ""), legacySearch("WEATHER", ""), legacySearch("", "")} {
		res := doSearch(t, bob, payload)
		if len(res.Items) != 0 || res.Set.Count != 0 {
			t.Errorf("bob, %s: %d items, count %d", payload, len(res.Items), res.Set.Count)
		}
	}

	carol := login(t, "carol", harness.RemoteDomain)
	granted := []string{"agent-007@" + harness.ComponentDomain, weatherJID}
	grant := fmt.Sprintf("\n[[policy.visibility]]\nprincipals = [\"carol@%s\"]\nendpoints = [%q, %q, \"nonexistent@%s\"]\n",
		harness.RemoteDomain, granted[1], granted[0], harness.ComponentDomain)
	if err := writeConfig(grant); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		writeConfig("")
		suite.gateway.signal(syscall.SIGHUP)
	})
	if err := suite.gateway.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() (wire.Element, bool) {
		el, _ := iq(t, carol, "set", harness.ComponentDomain, formSearch("", ""))
		res, _ := search.ParseResult(el.Children()[0])
		return el, res.Set != nil && res.Set.Count > 0
	})
	for _, tc := range []struct {
		payload string
		want    []string
	}{
		{formSearch("", ""), granted},
		{legacySearch("", "<max>10</max>"), granted},
		{formSearch("agent", ""), granted[:1]},
		{legacySearch("WEATH", ""), granted[1:]},
		{formSearch("météo", ""), nil},
		{formSearch("agent-008", ""), nil},
	} {
		res := doSearch(t, carol, tc.payload)
		var jids []string
		for _, it := range res.Items {
			jids = append(jids, it.JID)
		}
		if !slices.Equal(jids, tc.want) || res.Set.Count != len(tc.want) {
			t.Errorf("carol, %s: %q count %d, want %q", tc.payload, jids, res.Set.Count, tc.want)
		}
	}
	// bob still sees nothing.
	if res := doSearch(t, bob, formSearch("", "")); res.Set.Count != 0 {
		t.Errorf("bob counts %d after carol's grant", res.Set.Count)
	}
}

// slixmppScript searches with slixmpp's XEP-0055 and XEP-0059 plugins: an
// independent client. It logs in (plaintext: loopback only), fetches the
// gateway's features and search form, then pages through a form search for
// each query given, and prints what it saw as JSON.
const slixmppScript = `
import asyncio, json, logging, sys
import slixmpp
from slixmpp.xmlstream import register_stanza_plugin
from slixmpp.plugins.xep_0059 import stanza as rsm_stanza

host, port, jid, password, gateway = sys.argv[1:6]
queries = sys.argv[6:]
logging.basicConfig(level=logging.ERROR)

class Client(slixmpp.ClientXMPP):
    def __init__(self):
        super().__init__(jid, password)
        for p in ('xep_0030', 'xep_0004', 'xep_0059'):
            self.register_plugin(p)
        self.register_plugin('xep_0055', {'provide_search': False})
        register_stanza_plugin(self['xep_0055'].stanza.Search, rsm_stanza.Set)
        self['feature_mechanisms'].unencrypted_plain = True
        self.out = {'error': 'no session'}
        self.add_event_handler('session_start', self.start)
        self.add_event_handler('failed_auth', lambda e: self.finish({'error': 'auth failed'}))

    def finish(self, out):
        self.out = out
        self.disconnect()

    async def start(self, event):
        try:
            out = {'queries': {}}
            info = await self['xep_0030'].get_info(jid=gateway)
            out['features'] = sorted(info['disco_info']['features'])
            get = self.make_iq_get(ito=gateway)
            get.enable('search')
            form = (await get.send())['search']['form']
            out['form'] = {'type': form['type'], 'title': form['title'],
                           'fields': {v: f['type'] for v, f in form.get_fields().items()}}
            for q in queries:
                items, counts, after = [], [], None
                for _ in range(50):
                    iq = self['xep_0055'].make_search_iq(ito=gateway)
                    iq['search']['form'].add_field(var='nick', value=q)
                    iq['search']['rsm']['max'] = '100'
                    if after:
                        iq['search']['rsm']['after'] = after
                    res = await iq.send()
                    rform = res['search']['form']
                    rsm = res['search']['rsm']
                    counts.append(int(rsm['count']))
                    page = rform.get_items()
                    if not page:
                        break
                    items += page
                    after = rsm['last']
                    if rsm['first'] != page[0]['jid'] or after != page[-1]['jid']:
                        raise Exception('first/last do not match the items')
                out['queries'][q] = {'items': items, 'counts': counts,
                                     'reported': list(rform.get_reported().keys())}
            self.finish(out)
        except Exception as e:
            self.finish({'error': repr(e)})

c = Client()
c.connect(address=(host, int(port)), disable_starttls=True, force_starttls=False)
asyncio.get_event_loop().run_until_complete(asyncio.wait_for(c.disconnected, 60))
print(json.dumps(c.out))
`

// TestSearchSlixmpp drives the search from Python's slixmpp, as alice.
func TestSearchSlixmpp(t *testing.T) {
	need(t)
	const python = "/usr/bin/python3" // slixmpp imports only there
	if err := exec.Command(python, "-c", "import slixmpp").Run(); err != nil {
		if requireServers() {
			t.Fatalf("slixmpp: %v", err)
		}
		t.Skipf("slixmpp is not installed (python3-slixmpp): %v", err)
	}
	withMeteo(t)
	script := filepath.Join(t.TempDir(), "search.py")
	if err := os.WriteFile(script, []byte(slixmppScript), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(suite.env.ProsodyC2S, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script, host, port, "alice@"+harness.HomeDomain, password, harness.ComponentDomain,
		"agent", "MÉTÉO", "WEATH", "")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("slixmpp: %v\n%s\n%s", err, stdout, stderr.String())
	}
	var out struct {
		Error    string
		Features []string
		Form     struct {
			Type, Title string
			Fields      map[string]string
		}
		Queries map[string]struct {
			Items    []map[string]string
			Counts   []int
			Reported []string
		}
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("slixmpp output %q: %v\n%s", stdout, err, stderr.String())
	}
	if out.Error != "" {
		t.Fatalf("slixmpp: %s\n%s", out.Error, stderr.String())
	}
	if !slices.Contains(out.Features, search.NS) || !slices.Contains(out.Features, wire.NSData) {
		t.Errorf("features seen by slixmpp: %q", out.Features)
	}
	if out.Form.Type != "form" || out.Form.Title != search.FormTitle || out.Form.Fields["FORM_TYPE"] != "hidden" || out.Form.Fields["nick"] != "text-single" {
		t.Errorf("form seen by slixmpp: %+v", out.Form)
	}
	for q, want := range map[string][]string{
		"agent": append(agentJIDs(0, numAgents), meteoJID),
		"MÉTÉO": {meteoJID},
		"WEATH": {weatherJID},
		"":      nil, // every visible endpoint: checked by count below
	} {
		res, ok := out.Queries[q]
		if !ok {
			t.Errorf("slixmpp has no result for %q", q)
			continue
		}
		var jids []string
		for _, it := range res.Items {
			jids = append(jids, it["jid"])
		}
		if !slices.Equal(res.Reported, []string{"jid", "nick"}) {
			t.Errorf("%q: reported columns %q", q, res.Reported)
		}
		wantCount := len(want)
		if q == "" {
			wantCount = numAgents + 2
			want = jids
		}
		if !slices.Equal(jids, want) || len(jids) != wantCount {
			t.Errorf("%q: slixmpp got %d results, want %d", q, len(jids), wantCount)
		}
		for _, c := range res.Counts {
			if c != wantCount {
				t.Errorf("%q: slixmpp saw count %d, want %d", q, c, wantCount)
			}
		}
		if q == "MÉTÉO" && (len(res.Items) != 1 || res.Items[0]["nick"] != "Météo Agent") {
			t.Errorf("MÉTÉO: %v", res.Items)
		}
		t.Logf("slixmpp %q: %d results over %d pages", q, len(jids), len(res.Counts))
	}
}
