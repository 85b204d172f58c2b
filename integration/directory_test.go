package integration

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentgw/internal/harness"
	"agentgw/wire"
)

const (
	discoInfo  = `<query xmlns='http://jabber.org/protocol/disco#info'/>`
	discoItems = `<query xmlns='http://jabber.org/protocol/disco#items'/>`
)

var (
	nameQueryItems = xml.Name{Space: wire.NSDiscoItems, Local: "query"}
	nameSet        = xml.Name{Space: wire.NSRSM, Local: "set"}
)

// page is a parsed directory page.
type page struct {
	jids        []string
	first, last string
	count       int
}

func parsePage(t *testing.T, el wire.Element) page {
	t.Helper()
	if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Fatalf("directory page is not a result: %v", el.Start.Attr)
	}
	q, ok := el.Child(nameQueryItems)
	if !ok {
		t.Fatal("no disco#items query in the result")
	}
	var p page
	for _, c := range q.Children() {
		switch c.Start.Name.Local {
		case "item":
			j, _ := c.AttrValue("jid")
			if _, hasNode := c.AttrValue("node"); hasNode {
				t.Errorf("directory item %s has a node", j)
			}
			p.jids = append(p.jids, j)
		case "set":
			for _, f := range c.Children() {
				switch f.Start.Name.Local {
				case "first":
					p.first = f.Text()
				case "last":
					p.last = f.Text()
				case "count":
					p.count, _ = strconv.Atoi(f.Text())
				}
			}
		}
	}
	if _, ok := q.Child(nameSet); !ok {
		t.Error("no RSM set in the directory result")
	}
	return p
}

func rsmItems(node, set string) string {
	attr := ""
	if node != "" {
		attr = " node='" + node + "'"
	}
	return `<query xmlns='http://jabber.org/protocol/disco#items'` + attr + `><set xmlns='http://jabber.org/protocol/rsm'>` + set + `</set></query>`
}

// TestFindGateway: a local user finds the gateway through its server's
// disco#items and verifies the directory feature on it.
func TestFindGateway(t *testing.T) {
	need(t)
	alice := login(t, "alice", harness.HomeDomain)
	el, raw := iq(t, alice, "get", harness.HomeDomain, discoItems)
	found := false
	for _, it := range el.Children()[0].Children() {
		if j, _ := it.AttrValue("jid"); j == harness.ComponentDomain {
			found = true
		}
	}
	if !found {
		t.Fatalf("server items do not list %s: %s", harness.ComponentDomain, raw)
	}
	_, raw = iq(t, alice, "get", harness.ComponentDomain, discoInfo)
	for _, want := range []string{"urn:xmpp:agent-directory:0", `type="agent-gateway"`, `category="automation"`} {
		if !strings.Contains(strings.ReplaceAll(raw, "'", `"`), want) {
			t.Errorf("gateway info lacks %s: %s", want, raw)
		}
	}
}

// TestDirectoryPaging pages through the whole directory (numAgents + 1
// endpoints) and checks order, first/last, count, the cap and a before page.
func TestDirectoryPaging(t *testing.T) {
	need(t)
	alice := login(t, "alice", harness.HomeDomain)
	total := numAgents + 1
	var all []string
	after := ""
	for i := 0; ; i++ {
		set := "<max>50</max>"
		if after != "" {
			set += "<after>" + after + "</after>"
		}
		el, _ := iq(t, alice, "get", harness.ComponentDomain, rsmItems("urn:xmpp:agent-directory:0", set))
		p := parsePage(t, el)
		if p.count != total {
			t.Fatalf("page %d: count %d, want %d", i, p.count, total)
		}
		if len(p.jids) == 0 {
			break
		}
		if p.first != p.jids[0] || p.last != p.jids[len(p.jids)-1] {
			t.Fatalf("page %d: first/last %s/%s do not match items", i, p.first, p.last)
		}
		all = append(all, p.jids...)
		after = p.last
		if len(p.jids) < 50 {
			break
		}
	}
	if len(all) != total {
		t.Fatalf("paged %d endpoints, want %d", len(all), total)
	}
	if !slices.IsSorted(all) {
		t.Error("directory is not in octetwise order")
	}
	if all[len(all)-1] != "weather@"+harness.ComponentDomain {
		t.Errorf("last endpoint is %s", all[len(all)-1])
	}

	// The cap: max=1000 is clamped to 100; node omitted works the same.
	el, _ := iq(t, alice, "get", harness.ComponentDomain, rsmItems("", "<max>1000</max>"))
	if p := parsePage(t, el); len(p.jids) != 100 || p.jids[0] != all[0] {
		t.Errorf("capped page: %d items from %s", len(p.jids), p.first)
	}
	// A before page: the 10 endpoints before the 200th.
	el, _ = iq(t, alice, "get", harness.ComponentDomain, rsmItems("urn:xmpp:agent-directory:0", "<max>10</max><before>"+all[200]+"</before>"))
	if p := parsePage(t, el); !slices.Equal(p.jids, all[190:200]) {
		t.Errorf("before page = %v, want %v", p.jids, all[190:200])
	}
	// The last page.
	el, _ = iq(t, alice, "get", harness.ComponentDomain, rsmItems("", "<max>3</max><before/>"))
	if p := parsePage(t, el); !slices.Equal(p.jids, all[total-3:]) {
		t.Errorf("last page = %v", p.jids)
	}
	// Malformed RSM is a bad request.
	_, raw := iq(t, alice, "get", harness.ComponentDomain, rsmItems("", "<max>lots</max>"))
	if !strings.Contains(raw, "bad-request") {
		t.Errorf("malformed RSM: %s", raw)
	}
}

// TestEndpointInfoHash: the hash in the endpoint info form equals what
// `agentgw manifest hash` prints for the registered file.
func TestEndpointInfoHash(t *testing.T) {
	need(t)
	alice := login(t, "alice", harness.HomeDomain)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := agentgw(ctx, "manifest", "hash", "-config", suite.config, "../testdata/manifest/weather.json")
	if err != nil {
		t.Fatalf("manifest hash: %v %s", err, out)
	}
	fields := strings.Fields(out)
	if len(fields) != 4 || fields[2] != "sha-256" {
		t.Fatalf("manifest hash output %q", out)
	}
	el, raw := iq(t, alice, "get", fields[0], discoInfo)
	form := formValues(t, el)
	if form["manifest_hash_value"] != fields[3] || form["version"] != fields[1] || form["manifest_hash_algo"] != "sha-256" {
		t.Fatalf("form %v does not match %q", form, out)
	}
	if n := strings.Count(raw, "<field "); n != 9 {
		t.Errorf("endpoint info form has %d fields, want FORM_TYPE and all 8: %s", n, raw)
	}
	if form["FORM_TYPE"] != "urn:xmpp:agent-endpoint-info:0" {
		t.Errorf("FORM_TYPE = %q", form["FORM_TYPE"])
	}
}

// formValues reads the single-valued fields of the first data form in a
// disco#info result.
func formValues(t *testing.T, el wire.Element) map[string]string {
	t.Helper()
	out := map[string]string{}
	q := el.Children()[0]
	x, ok := q.Child(xml.Name{Space: wire.NSData, Local: "x"})
	if !ok {
		t.Fatalf("no form in %v", q.Start)
	}
	for _, f := range x.Children() {
		v, _ := f.AttrValue("var")
		if val, ok := f.Child(xml.Name{Space: wire.NSData, Local: "value"}); ok {
			out[v] = val.Text()
		}
	}
	return out
}

// TestRemoteDeniedByDefault: a user on ejabberd, over s2s, sees an empty
// directory with count 0, and gets the same error bytes for a hidden
// endpoint and a nonexistent one.
func TestRemoteDeniedByDefault(t *testing.T) {
	need(t)
	bob := login(t, "bob", harness.RemoteDomain)
	el, raw := iq(t, bob, "get", harness.ComponentDomain, rsmItems("urn:xmpp:agent-directory:0", "<max>50</max>"))
	if p := parsePage(t, el); p.count != 0 || len(p.jids) != 0 {
		t.Fatalf("remote user sees %d of %d: %s", len(p.jids), p.count, raw)
	}
	_, hidden := iq(t, bob, "get", "weather@"+harness.ComponentDomain, discoInfo)
	_, missing := iq(t, bob, "get", "nobody-here@"+harness.ComponentDomain, discoInfo)
	if !strings.Contains(hidden, "item-not-found") {
		t.Fatalf("hidden endpoint answered %s", hidden)
	}
	if stripAddrs(hidden) != stripAddrs(missing) {
		t.Fatalf("hidden and nonexistent differ:\n%s\n%s", hidden, missing)
	}
	// The gateway itself is public: anyone may find it.
	_, raw = iq(t, bob, "get", harness.ComponentDomain, discoInfo)
	if !strings.Contains(raw, "urn:xmpp:agent-directory:0") {
		t.Errorf("remote gateway info: %s", raw)
	}
}

// TestCLIWhileServing: a version registered and activated with the CLI
// while serve runs shows up at once, and deactivation hides it again.
func TestCLIWhileServing(t *testing.T) {
	need(t)
	alice := login(t, "alice", harness.HomeDomain)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	file := suite.dir + "/late.json"
	body := `{"manifestSpecVersion":"0","agent":{"jid":"late@agents.example","name":"late","title":"Late Agent","description":"Registered while serving.","version":"2"},"tools":[]}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", file); err != nil {
		t.Fatalf("register: %v %s", err, out)
	}
	el := waitFor(t, func() (wire.Element, bool) {
		el, _ := iq(t, alice, "get", "late@"+harness.ComponentDomain, discoInfo)
		typ, _ := el.AttrValue("type")
		return el, typ == "result"
	})
	if f := formValues(t, el); f["description"] != "Registered while serving." || f["server_title"] != "Late Agent" {
		t.Errorf("late endpoint form: %v", f)
	}
	if out, err := agentgw(ctx, "endpoint", "deactivate", "-config", suite.config, "late@agents.example"); err != nil {
		t.Fatalf("deactivate: %v %s", err, out)
	}
	waitFor(t, func() (wire.Element, bool) {
		el, raw := iq(t, alice, "get", "late@"+harness.ComponentDomain, discoInfo)
		return el, strings.Contains(raw, "item-not-found")
	})
}

// waitFor polls f for up to two seconds ("within about a second").
func waitFor(t *testing.T, f func() (wire.Element, bool)) wire.Element {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		el, ok := f()
		if ok {
			return el
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within 2s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestGrantAndReload: after a visibility grant and SIGHUP, carol on the
// remote server sees exactly the granted endpoints; a broken config keeps
// the old policy.
func TestGrantAndReload(t *testing.T) {
	need(t)
	carol := login(t, "carol", harness.RemoteDomain)
	granted := []string{"agent-007@" + harness.ComponentDomain, "weather@" + harness.ComponentDomain}
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
	el := waitFor(t, func() (wire.Element, bool) {
		el, _ := iq(t, carol, "get", harness.ComponentDomain, rsmItems("", "<max>50</max>"))
		return el, parsePage(t, el).count > 0
	})
	p := parsePage(t, el)
	if p.count != 2 || !slices.Equal(p.jids, granted) {
		t.Fatalf("carol sees %v (count %d), want %v", p.jids, p.count, granted)
	}
	bob := login(t, "bob", harness.RemoteDomain)
	el, _ = iq(t, bob, "get", harness.ComponentDomain, discoItems)
	if p := parsePage(t, el); p.count != 0 {
		t.Errorf("bob sees %d after carol's grant", p.count)
	}

	// A broken file is refused and the running policy stays.
	if err := os.WriteFile(suite.config, []byte("[component]\nbogus = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	suite.gateway.signal(syscall.SIGHUP)
	waitLog(t, "component.bogus: unknown key")
	el, _ = iq(t, carol, "get", harness.ComponentDomain, discoItems)
	if p := parsePage(t, el); p.count != 2 {
		t.Errorf("after a bad reload carol sees %d, want 2", p.count)
	}
}

// waitLog waits for a line in the gateway's log.
func waitLog(t *testing.T, substr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(suite.gateway.logText(), substr) {
		if time.Now().After(deadline) {
			t.Fatalf("gateway never logged %q:\n%s", substr, tail(suite.gateway.logText(), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
