package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"agentgw/api"
	"agentgw/db"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/wire"
)

// provisioned is a virtual endpoint's manifest at a version, with title to
// vary the content.
func provisioned(version, title string) string {
	return `{"manifestSpecVersion":"0","agent":{"jid":"prov@agents.example","name":"prov","title":"` + title + `","version":"` + version + `"},"tools":[]}`
}

func TestProvisioning(t *testing.T) {
	e := startAPI(t)
	ctx := context.Background()
	const prov = "prov@" + domain
	m1, err := manifest.Parse([]byte(provisioned("1", "Prov")), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := manifest.Parse([]byte(provisioned("2", "Prov")), manifest.Options{})
	activate := func(from, version, hash string) wire.Element {
		return e.apiIQ(from, domain, "set", `<activate xmlns='urn:xmpp:agent-api:0' jid='`+prov+`' version='`+version+`'>`+hashXML(hash)+`</activate>`)
	}
	op := func(from, typ, name, attrs string) wire.Element {
		return e.apiIQ(from, domain, typ, `<`+name+` xmlns='urn:xmpp:agent-api:0' `+attrs+`/>`)
	}
	status := func() api.Registration {
		t.Helper()
		r, err := api.ParseRegistration(payload(t, op(admin, "get", "registration-status", "jid='"+prov+"'")))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// Everyone but an admin is forbidden, before the payload matters. (A
	// local account may self-register, so it gets to the payload of a
	// <register/>: see TestSelfRegistration.)
	if c := condition(e.apiIQ(carol, domain, "set", `<register xmlns='urn:xmpp:agent-api:0'>not json</register>`)); c != "forbidden" {
		t.Errorf("garbage from a federated sender: %s", c)
	}
	for _, from := range []string{alice, carol, bot} {
		for name, el := range map[string]wire.Element{
			"register":   e.apiIQ(from, domain, "set", registerXML(provisioned("1", "Prov"))),
			"activate":   activate(from, "1", b64(m1.Hash)),
			"deactivate": op(from, "set", "deactivate", "jid='"+prov+"'"),
			"status":     op(from, "get", "registration-status", "jid='"+prov+"'"),
			"remove v":   op(from, "set", "remove-version", "jid='"+prov+"' version='1'"),
			"remove e":   op(from, "set", "remove-endpoint", "jid='"+prov+"'"),
		} {
			if c := condition(el); c != "forbidden" {
				t.Errorf("%s from %s: %s", name, from, c)
			}
		}
	}

	// Register: the result comes from the gateway; identical content is
	// idempotent; other content under the version conflicts.
	el := e.apiIQ(admin, domain, "set", registerXML(provisioned("1", "Prov")))
	golden(t, "api-registered", marshalEl(t, el))
	if from, _ := el.AttrValue("from"); from != domain {
		t.Errorf("registered from %q", from)
	}
	again := e.apiIQ(admin, domain, "set", registerXML(provisioned("1", "Prov")))
	if norm(t, again) != norm(t, el) {
		t.Errorf("re-register: %s", marshalEl(t, again))
	}
	if c := condition(e.apiIQ(admin, domain, "set", registerXML(provisioned("1", "Changed")))); c != "conflict" {
		t.Errorf("conflicting register: %s", c)
	}
	for name, tc := range map[string]struct{ payload, want string }{
		"not json":         {registerXML(`{"manifestSpecVersion":`), "bad-request"},
		"duplicate names":  {registerXML(`{"manifestSpecVersion":"0","manifestSpecVersion":"0"}`), "bad-request"},
		"schema violation": {registerXML(`{"manifestSpecVersion":"1","agent":{"jid":"x@agents.example","name":"x","version":"1"},"tools":[]}`), "not-acceptable"},
		"account jid":      {registerXML(strings.ReplaceAll(provisioned("1", "P"), "prov@agents.example", "someone@home.example")), "not-acceptable"},
		"no manifest":      {`<register xmlns='urn:xmpp:agent-api:0'/>`, "bad-request"},
		"wrong media type": {`<register xmlns='urn:xmpp:agent-api:0'><manifest media-type='text/plain'>{}</manifest></register>`, "bad-request"},
	} {
		if c := condition(e.apiIQ(admin, domain, "set", tc.payload)); c != tc.want {
			t.Errorf("%s: %s, want %s", name, c, tc.want)
		}
	}
	if c := condition(e.apiIQ(admin, domain, "set", registerXML(provisioned("2", "Prov")))); c != "" {
		t.Fatalf("register 2: %s", c)
	}

	// Activate checks the hash child.
	for name, tc := range map[string]struct {
		el   wire.Element
		want string
	}{
		"wrong hash":      {activate(admin, "1", b64(m2.Hash)), "conflict"},
		"unknown version": {activate(admin, "9", b64(m1.Hash)), "item-not-found"},
		"no hash":         {op(admin, "set", "activate", "jid='"+prov+"' version='1'"), "bad-request"},
		"bad jid":         {op(admin, "set", "deactivate", "jid='not a jid@'"), "bad-request"},
		"unknown jid":     {op(admin, "set", "deactivate", "jid='nobody@agents.example'"), "item-not-found"},
	} {
		if c := condition(tc.el); c != tc.want {
			t.Errorf("%s: %s, want %s", name, c, tc.want)
		}
	}
	golden(t, "api-active", marshalEl(t, activate(admin, "1", b64(m1.Hash))))
	if c := condition(e.srv.iq(alice, prov, "get", `<manifest-request xmlns='urn:xmpp:agent-api:0'/>`)); c != "" {
		t.Errorf("activated endpoint not visible: %s", c)
	}

	// Status, removal and its refusals.
	if err := e.store.RetainVersion(ctx, prov, "2", "task:t1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	golden(t, "api-registration", marshalEl(t, op(admin, "get", "registration-status", "jid='"+prov+"'")))
	if c := condition(op(admin, "set", "remove-version", "jid='"+prov+"' version='1'")); c != "conflict" {
		t.Errorf("remove the active version: %s", c)
	}
	if c := condition(op(admin, "set", "remove-version", "jid='"+prov+"' version='2'")); c != "conflict" {
		t.Errorf("remove a retained version: %s", c)
	}
	if c := condition(op(admin, "set", "remove-endpoint", "jid='"+prov+"'")); c != "conflict" {
		t.Errorf("remove an endpoint with a retained version: %s", c)
	}
	if err := e.store.ReleaseVersion(ctx, prov, "2", "task:t1"); err != nil {
		t.Fatal(err)
	}
	if r := status(); len(r.Versions) != 2 || !r.Versions[0].Active || r.Versions[0].Removable || !r.Versions[1].Removable {
		t.Errorf("status after release: %+v", r)
	}
	golden(t, "api-removed-version", marshalEl(t, op(admin, "set", "remove-version", "jid='"+prov+"' version='2'")))
	if c := condition(op(admin, "set", "remove-version", "jid='"+prov+"' version='2'")); c != "item-not-found" {
		t.Errorf("remove twice: %s", c)
	}
	// The tombstone: other content conflicts, identical content restores.
	if c := condition(e.apiIQ(admin, domain, "set", registerXML(provisioned("2", "Other")))); c != "conflict" {
		t.Errorf("other content under a removed version: %s", c)
	}
	r, err := api.ParseRegistered(payload(t, e.apiIQ(admin, domain, "set", registerXML(provisioned("2", "Prov")))))
	if err != nil || r.Hash.Base64() != b64(m2.Hash) {
		t.Errorf("restore: %+v, %v", r, err)
	}

	// Deactivate hides it; remove-endpoint removes everything but the
	// tombstones.
	golden(t, "api-deactivated", marshalEl(t, op(admin, "set", "deactivate", "jid='"+prov+"'")))
	if c := condition(e.srv.iq(alice, prov, "get", `<manifest-request xmlns='urn:xmpp:agent-api:0' version='1'/>`)); c != "item-not-found" {
		t.Errorf("deactivated endpoint: %s", c)
	}
	golden(t, "api-removed-endpoint", marshalEl(t, op(admin, "set", "remove-endpoint", "jid='"+prov+"'")))
	if c := condition(op(admin, "get", "registration-status", "jid='"+prov+"'")); c != "item-not-found" {
		t.Errorf("status after remove-endpoint: %s", c)
	}
	if c := condition(e.apiIQ(admin, domain, "set", registerXML(provisioned("1", "Other")))); c != "conflict" {
		t.Errorf("other content after remove-endpoint: %s", c)
	}
	// registration-status is a get, the others sets.
	if c := condition(op(admin, "set", "registration-status", "jid='"+prov+"'")); c != "service-unavailable" {
		t.Errorf("registration-status set: %s", c)
	}
	if c := condition(op(admin, "get", "deactivate", "jid='"+prov+"'")); c != "service-unavailable" {
		t.Errorf("deactivate get: %s", c)
	}
}

func selfManifest(jid, version string) string {
	return `{"manifestSpecVersion":"0","agent":{"jid":"` + jid + `","name":"bot","title":"Bot","version":"` + version + `"},"tools":[]}`
}

func TestSelfRegistration(t *testing.T) {
	e := startAPI(t)
	const botJID = "bot@home.example"
	m, _ := manifest.Parse([]byte(selfManifest(botJID, "1")), manifest.Options{})

	// The sender's own bare JID: accepted, answered from the gateway.
	el := e.apiIQ(bot, domain, "set", registerXML(selfManifest(botJID, "1")))
	r, err := api.ParseRegistered(payload(t, el))
	if err != nil || r.JID != botJID || r.Hash.Base64() != b64(m.Hash) {
		t.Fatalf("self-registration: %+v, %v", r, err)
	}
	if from, _ := el.AttrValue("from"); from != domain {
		t.Errorf("answered from %q, want the gateway", from)
	}
	if st, _ := e.store.Status(context.Background(), botJID); st.Origin != db.OriginSelf {
		t.Errorf("origin = %q", st.Origin)
	}

	// Anyone else's JID, a virtual endpoint, or a federated sender:
	// forbidden.
	for name, tc := range map[string]struct{ from, manifest string }{
		"another account":  {bot, selfManifest("alice@home.example", "1")},
		"virtual endpoint": {bot, selfManifest("weather2@agents.example", "1")},
		"federated":        {carol, selfManifest("carol@remote.example", "1")},
		"federated as bot": {carol, selfManifest(botJID, "2")},
	} {
		if c := condition(e.apiIQ(tc.from, domain, "set", registerXML(tc.manifest))); c != "forbidden" {
			t.Errorf("%s: %s", name, c)
		}
	}

	// The owner activates, inspects and deactivates its own endpoint, and
	// nothing else; removal is for admins.
	act := `<activate xmlns='urn:xmpp:agent-api:0' jid='` + botJID + `' version='1'>` + hashXML(b64(m.Hash)) + `</activate>`
	if a, err := api.ParseActive(payload(t, e.apiIQ(bot, domain, "set", act))); err != nil || a.JID != botJID {
		t.Errorf("owner activation: %+v, %v", a, err)
	}
	if c := condition(e.apiIQ(bot, domain, "get", `<registration-status xmlns='urn:xmpp:agent-api:0' jid='`+botJID+`'/>`)); c != "" {
		t.Errorf("owner status: %s", c)
	}
	register(t, e.store, "a001", "Agent One", true)
	for name, p := range map[string]string{
		"someone else's":  `<deactivate xmlns='urn:xmpp:agent-api:0' jid='a001@agents.example'/>`,
		"remove version":  `<remove-version xmlns='urn:xmpp:agent-api:0' jid='` + botJID + `' version='1'/>`,
		"remove endpoint": `<remove-endpoint xmlns='urn:xmpp:agent-api:0' jid='` + botJID + `'/>`,
	} {
		if c := condition(e.apiIQ(bot, domain, "set", p)); c != "forbidden" {
			t.Errorf("owner %s: %s", name, c)
		}
	}
	// alice, also local, owns no endpoint: forbidden on bot's.
	if c := condition(e.apiIQ(alice, domain, "set", `<deactivate xmlns='urn:xmpp:agent-api:0' jid='`+botJID+`'/>`)); c != "forbidden" {
		t.Errorf("alice on bot's endpoint: %s", c)
	}

	// It appears in the directory (home.example sees everything).
	got := marshalEl(t, e.srv.iq(alice, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#items'/>`))
	if !strings.Contains(got, "<item jid='"+botJID+"' name='Bot'/>") {
		t.Errorf("directory: %s", got)
	}

	// With self_register off, the account is refused and the feature gone.
	e.gw.SetPolicy(apiPolicy(e, func(p *policy.Policy) { p.SelfRegister = false }))
	if c := condition(e.apiIQ(bot, domain, "set", registerXML(selfManifest(botJID, "2")))); c != "forbidden" {
		t.Errorf("self_register off: %s", c)
	}
	if c := condition(e.apiIQ(bot, domain, "set", act)); c != "forbidden" {
		t.Errorf("owner activation with self_register off: %s", c)
	}
}

// TestJSONLimits: every limit is <resource-constraint/>, and only after
// authorization; nothing of the rejected JSON comes back.
func TestJSONLimits(t *testing.T) {
	e := startAPI(t)
	big := provisioned("1", "Big") + strings.Repeat(" ", manifest.DefaultMaxManifestBytes)
	deep := `{"manifestSpecVersion":"0","agent":{"jid":"deep@agents.example","name":"d","version":"1"},"tools":[{"name":"t","inputSchema":{"type":"object","default":` +
		strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}]}`
	var tools []string
	for i := 0; i <= manifest.DefaultMaxTools; i++ {
		tools = append(tools, fmt.Sprintf(`{"name":"t%d","inputSchema":{"type":"object"}}`, i))
	}
	many := `{"manifestSpecVersion":"0","agent":{"jid":"many@agents.example","name":"m","version":"1"},"tools":[` + strings.Join(tools, ",") + `]}`
	// Canonical bytes over the served cap: 40 descriptions of 8000 bytes.
	tools = tools[:0]
	for i := 0; i < 40; i++ {
		tools = append(tools, fmt.Sprintf(`{"name":"t%d","description":"%s","inputSchema":{"type":"object"}}`, i, strings.Repeat("x", 8000)))
	}
	wide := `{"manifestSpecVersion":"0","agent":{"jid":"wide@agents.example","name":"w","version":"1"},"tools":[` + strings.Join(tools, ",") + `]}`

	for name, doc := range map[string]string{"size": big, "depth": deep, "tools": many, "served": wide} {
		el := e.apiIQ(admin, domain, "set", registerXML(doc))
		if c := condition(el); c != "resource-constraint" {
			t.Errorf("%s: %s", name, c)
		}
		if got := marshalEl(t, el); len(got) > 512 || strings.Contains(got, "manifestSpecVersion") {
			t.Errorf("%s: the answer reflects the request: %.200s", name, got)
		}
		if c := condition(e.apiIQ(carol, domain, "set", registerXML(doc))); c != "forbidden" {
			t.Errorf("%s from a federated sender: %s", name, c)
		}
	}
}
