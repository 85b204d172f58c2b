package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/api"
	"agentgw/db"
	"agentgw/internal/xsdtest"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/wire"
)

// Principals of the agent API tests, besides alice, carol and mallory.
const (
	admin = "admin@home.example/console"
	bot   = "bot@home.example/runtime"
)

// Spec vectors ("Protocol Namespaces and Identifiers", "Tool Information",
// "Retrieving Tool Schemas", "Manifest Retrieval").
const (
	specToolNode    = "urn:xmpp:agent-tool:0#1.4.0#Zm9yZWNhc3QuZ2V0"
	specInputHash   = "XxGP62PwgOW9NLxx8ysunvuijMhSd0y4j1SSRTAbt7c="
	specInputSchema = `{"additionalProperties":false,"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}`
	specMinimalHash = "K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4="
	specMinimalJSON = `{"agent":{"jid":"weather@agents.example","name":"weather","version":"1.4.0"},"manifestSpecVersion":"0","tools":[]}`
)

// toolsV2 is a manifest whose tool names sort differently by bytes than by
// any human rule, with annotations present on some tools only.
const toolsV2 = `{"manifestSpecVersion":"0","agent":{"jid":"tools@agents.example","name":"tools","title":"Tool Box","version":"2.0"},
 "tools":[
  {"name":"b","inputSchema":{"type":"object"}},
  {"name":"a","title":"Alpha","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false}},
  {"name":"é","inputSchema":{"type":"object"}},
  {"name":"Z","inputSchema":{"type":"object"},"outputSchema":{"type":"string"}},
  {"name":"a.b","description":"Dotted.","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true,"openWorldHint":false}}
 ]}`

// toolsV1 is an older, inactive version of the same endpoint.
const toolsV1 = `{"manifestSpecVersion":"0","agent":{"jid":"tools@agents.example","name":"tools","version":"1.0"},
 "tools":[{"name":"old","inputSchema":{"type":"object"}}]}`

// forecastManifest is the spec's full example manifest under another JID:
// the suite's weather@agents.example 1.4.0 is the minimal manifest.
func forecastManifest(t testing.TB) string {
	t.Helper()
	raw, err := os.ReadFile("../testdata/manifest/weather-full.json")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(raw), "weather@agents.example", "forecast@agents.example")
}

// startAPI starts a gateway whose policy, besides the test config's
// grants, makes admin@home.example an admin and enables self-registration.
func startAPI(t *testing.T) *env {
	t.Helper()
	e := start(t, "")
	e.gw.SetPolicy(apiPolicy(e, func(*policy.Policy) {}))
	return e
}

// apiPolicy is the test config's policy with an admin and self-registration,
// edited by edit.
func apiPolicy(e *env, edit func(*policy.Policy)) *policy.Policy {
	p := *e.cfg.Policy
	p.Admins = []string{"admin@home.example"}
	p.SelfRegister = true
	edit(&p)
	return &p
}

// provision registers a manifest straight into the store.
func provision(t testing.TB, store *db.Store, raw string, activate bool) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(raw), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v := db.Version{JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical, Name: m.Name, Title: m.Title, Description: m.Description}
	if _, err := store.RegisterVersion(ctx, v, db.OriginAdmin); err != nil {
		t.Fatal(err)
	}
	if activate {
		if err := store.Activate(ctx, m.JID, m.Version, &m.Hash); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// apiIQ sends an IQ and validates every urn:xmpp:agent-api:0 payload of
// the answer against the XSD.
func (e *env) apiIQ(from, to, typ, payload string) wire.Element {
	e.t.Helper()
	el := e.srv.iq(from, to, typ, payload)
	for _, c := range el.Children() {
		if c.Start.Name.Space == api.NS {
			xsdValidate(e.t, marshalEl(e.t, c))
		}
	}
	return el
}

func marshalEl(t testing.TB, el wire.Element) string {
	t.Helper()
	s, err := wire.Marshal(el.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// condition returns the error condition of an error IQ, or "" for a result.
func condition(el wire.Element) string {
	if typ, _ := el.AttrValue("type"); typ != "error" {
		return ""
	}
	for _, c := range el.Children() {
		if c.Start.Name.Local == "error" {
			for _, cond := range c.Children() {
				return cond.Start.Name.Local
			}
		}
	}
	return "?"
}

// payload returns the single child of a result IQ.
func payload(t testing.TB, el wire.Element) wire.Element {
	t.Helper()
	kids := el.Children()
	if typ, _ := el.AttrValue("type"); typ != "result" || len(kids) != 1 {
		t.Fatalf("not a result with one payload: %s", marshalEl(t, el))
	}
	return kids[0]
}

// norm strips the IQ's addressing, so that two answers compare by bytes.
func norm(t testing.TB, el wire.Element) string {
	el.Start.Attr = nil
	return marshalEl(t, el)
}

// escape escapes text for XML character data.
func escape(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func registerXML(manifestJSON string) string {
	return `<register xmlns='urn:xmpp:agent-api:0'><manifest media-type='application/json'>` + escape(manifestJSON) + `</manifest></register>`
}

func hashXML(value string) string {
	return `<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>` + value + `</hash>`
}

func b64(d [32]byte) string { return base64.StdEncoding.EncodeToString(d[:]) }

// apiXSD is the normative agent-api schema, copied from the spec.
var apiXSD = filepath.Join("..", "testdata", "agent-api.xsd")

// xsdValidate validates one XML document against testdata/agent-api.xsd
// with xmllint when the test ends (internal/xsdtest).
func xsdValidate(t testing.TB, doc string) {
	t.Helper()
	xsdtest.Check(t, apiXSD, doc)
}

// TestXSDValidateRejects proves the validation is real: invalid payloads
// fail.
func TestXSDValidateRejects(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		if os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" {
			t.Fatal("xmllint is required")
		}
		t.Skip("xmllint is not installed")
	}
	for _, doc := range []string{
		`<registered xmlns='urn:xmpp:agent-api:0' jid='a@b'/>`,
		`<manifest xmlns='urn:xmpp:agent-api:0' version='1' media-type='text/plain'><hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>x</hash><json>{}</json></manifest>`,
		`<schema-request xmlns='urn:xmpp:agent-api:0' tool='t' version='bad version' direction='input'><hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>x</hash></schema-request>`,
		`<frobnicate xmlns='urn:xmpp:agent-api:0'/>`,
	} {
		if err := xsdtest.Validate(apiXSD, []string{doc}); err == nil {
			t.Errorf("xmllint accepted %s", doc)
		}
	}
	if err := xsdtest.Validate(apiXSD, []string{`<removed xmlns='urn:xmpp:agent-api:0' jid='a@b'/>`}); err != nil {
		t.Errorf("xmllint rejected a valid payload: %v", err)
	}
}

func TestAPIFeatures(t *testing.T) {
	e := start(t, "")
	info := `<query xmlns='http://jabber.org/protocol/disco#info'/>`
	has := func(el wire.Element, feature string) bool {
		return strings.Contains(marshalEl(t, el), "var='"+feature+"'")
	}
	// The test config has no admins and self-registration off.
	el := e.srv.iq(alice, domain, "get", info)
	if has(el, api.FeatureAdmin) || has(el, api.FeatureSelfRegister) {
		t.Errorf("gateway advertises provisioning without config: %s", marshalEl(t, el))
	}
	// Features follow the policy in force, as a SIGHUP reload sets it.
	e.gw.SetPolicy(apiPolicy(e, func(*policy.Policy) {}))
	golden(t, "api-gateway-info", marshalEl(t, e.srv.iq(alice, domain, "get", info)))
	e.gw.SetPolicy(apiPolicy(e, func(p *policy.Policy) { p.SelfRegister = false }))
	el = e.srv.iq(alice, domain, "get", info)
	if !has(el, api.FeatureAdmin) || has(el, api.FeatureSelfRegister) {
		t.Errorf("admins only: %s", marshalEl(t, el))
	}

	register(t, e.store, "a001", "Agent One", true)
	el = e.srv.iq(alice, "a001@"+domain, "get", info)
	if !has(el, api.FeatureManifest) || !has(el, api.FeatureSchema) {
		t.Errorf("endpoint lacks #manifest or #schema: %s", marshalEl(t, el))
	}
}

func TestToolCollection(t *testing.T) {
	e := startAPI(t)
	provision(t, e.store, toolsV1, false)
	provision(t, e.store, toolsV2, true)
	to := "tools@" + domain
	items := func(node, set string) wire.Element {
		return e.srv.iq(alice, to, "get", `<query xmlns='http://jabber.org/protocol/disco#items' node='`+node+`'><set xmlns='http://jabber.org/protocol/rsm'>`+set+`</set></query>`)
	}
	const coll = "urn:xmpp:agent-tools:0#2.0"
	golden(t, "api-tools-page", marshalEl(t, items(coll, "<max>2</max>")))

	// The whole listing, one page at a time, is in octetwise name order.
	var names []string
	after := ""
	for {
		set := "<max>2</max>"
		if after != "" {
			set += "<after>" + after + "</after>"
		}
		q := payload(t, items(coll, set))
		var page []string
		for _, it := range q.Children() {
			if it.Start.Name.Local != "item" {
				continue
			}
			node, _ := it.AttrValue("node")
			if j, _ := it.AttrValue("jid"); j != to {
				t.Errorf("item jid = %q", j)
			}
			_, name, err := manifest.ParseToolNode(node)
			if err != nil {
				t.Fatalf("item node %q: %v", node, err)
			}
			page = append(page, name)
			after = node
		}
		names = append(names, page...)
		if len(page) < 2 {
			break
		}
	}
	if got := strings.Join(names, " "); got != "Z a a.b b é" {
		t.Errorf("tool order = %q", got)
	}

	// before: the last page, and the page before a tool.
	got := marshalEl(t, items(coll, "<max>2</max><before/>"))
	if !strings.Contains(got, manifest.ToolNode("2.0", "b")) || !strings.Contains(got, manifest.ToolNode("2.0", "é")) ||
		strings.Contains(got, manifest.ToolNode("2.0", "a.b")+"'") || !strings.Contains(got, "<first index='3'>") {
		t.Errorf("last page: %s", got)
	}
	got = marshalEl(t, items(coll, "<max>1</max><before>"+manifest.ToolNode("2.0", "a")+"</before>"))
	if !strings.Contains(got, manifest.ToolNode("2.0", "Z")) || !strings.Contains(got, "<count>5</count>") {
		t.Errorf("page before a: %s", got)
	}
	// index, count-only, and the cap (page_max is 10).
	got = marshalEl(t, items(coll, "<max>1</max><index>4</index>"))
	if !strings.Contains(got, manifest.ToolNode("2.0", "é")) {
		t.Errorf("index 4: %s", got)
	}
	got = marshalEl(t, items(coll, "<max>0</max>"))
	if strings.Contains(got, "<item") || !strings.Contains(got, "<set xmlns='http://jabber.org/protocol/rsm'><count>5</count></set>") {
		t.Errorf("count only: %s", got)
	}
	// An RSM id must be a tool node of this version.
	for _, bad := range []string{"<after>nope</after>", "<after>" + manifest.ToolNode("1.0", "a") + "</after>", "<max>x</max>"} {
		if c := condition(items(coll, bad)); c != "bad-request" {
			t.Errorf("%s: %s", bad, c)
		}
	}

	// The collection's own info.
	golden(t, "api-tools-collection-info", marshalEl(t, e.srv.iq(alice, to, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='`+coll+`'/>`)))

	// An inactive registered version is addressable by its exact value.
	got = marshalEl(t, items("urn:xmpp:agent-tools:0#1.0", ""))
	if !strings.Contains(got, manifest.ToolNode("1.0", "old")) {
		t.Errorf("inactive version: %s", got)
	}

	// Unknown version, hidden endpoint, nonexistent endpoint: one answer.
	missing := norm(t, e.srv.iq(carol, "nobody@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#items' node='`+coll+`'/>`))
	for name, el := range map[string]wire.Element{
		"unknown version": items("urn:xmpp:agent-tools:0#9.9", ""),
		"bad version":     items("urn:xmpp:agent-tools:0#a b", ""),
		"hidden items":    e.srv.iq(carol, to, "get", `<query xmlns='http://jabber.org/protocol/disco#items' node='`+coll+`'/>`),
		"hidden info":     e.srv.iq(carol, to, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='`+coll+`'/>`),
		"unknown info":    e.srv.iq(alice, to, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='urn:xmpp:agent-tools:0#3'/>`),
	} {
		if got := norm(t, el); got != missing {
			t.Errorf("%s: %s, want %s", name, got, missing)
		}
	}
}

func TestToolInfo(t *testing.T) {
	e := startAPI(t)
	provision(t, e.store, forecastManifest(t), true)
	provision(t, e.store, toolsV2, true)
	info := func(to, node string) wire.Element {
		return e.srv.iq(alice, to, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='`+escape(node)+`'/>`)
	}
	// The spec's tool node and input schema hash; no task features, since
	// the gateway implements none yet, although the tool declares two.
	el := info("forecast@"+domain, specToolNode)
	golden(t, "api-tool-info", marshalEl(t, el))
	form := toolForm(t, el)
	if form["input_schema_hash_value"] != specInputHash || form["name"] != "forecast.get" || form["api_version"] != "1.4.0" {
		t.Errorf("forecast.get form: %v", form)
	}
	if got := marshalEl(t, el); strings.Contains(got, "agent-task") {
		t.Errorf("task features advertised before tasks exist: %s", got)
	}

	// Absent values stay absent.
	for _, tc := range []struct {
		tool string
		want map[string]string
	}{
		{"a.b", map[string]string{"name": "a.b", "description": "Dotted.", "destructive": "1", "open_world": "0"}},
		{"a", map[string]string{"name": "a", "title": "Alpha", "read_only": "0"}},
		{"Z", map[string]string{"name": "Z", "output_schema_hash_algo": "sha-256", "output_schema_hash_value": b64(sha256.Sum256([]byte(`{"type":"string"}`)))}},
		{"é", map[string]string{"name": "é"}},
	} {
		el := info("tools@"+domain, manifest.ToolNode("2.0", tc.tool))
		if tc.tool == "a.b" {
			golden(t, "api-tool-info-sparse", marshalEl(t, el))
		}
		form := toolForm(t, el)
		tc.want["FORM_TYPE"] = api.FormToolInfo
		tc.want["api_version"] = "2.0"
		tc.want["input_schema_hash_algo"] = "sha-256"
		tc.want["input_schema_hash_value"] = b64(sha256.Sum256([]byte(`{"type":"object"}`)))
		if fmt.Sprint(form) != fmt.Sprint(tc.want) {
			t.Errorf("%s: form %v\nwant %v", tc.tool, form, tc.want)
		}
	}
	// A tool node has no items.
	got := marshalEl(t, e.srv.iq(alice, "forecast@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#items' node='`+specToolNode+`'/>`))
	if !strings.Contains(got, `<query node='`+specToolNode+`' xmlns='http://jabber.org/protocol/disco#items'/>`) {
		t.Errorf("tool node items: %s", got)
	}
}

// toolForm reads the single-valued fields of a tool info form.
func toolForm(t testing.TB, el wire.Element) map[string]string {
	t.Helper()
	x, ok := payload(t, el).Child(xml.Name{Space: wire.NSData, Local: "x"})
	if !ok {
		t.Fatalf("no form: %s", marshalEl(t, el))
	}
	out := map[string]string{}
	for _, f := range x.Children() {
		v, _ := f.AttrValue("var")
		vals := f.Children()
		if len(vals) != 1 {
			t.Errorf("field %s has %d values", v, len(vals))
			continue
		}
		out[v] = vals[0].Text()
	}
	return out
}

// TestToolNodeRejections: the strict decoder at the gateway. Every malformed
// node answers exactly like a nonexistent endpoint.
func TestToolNodeRejections(t *testing.T) {
	e := startAPI(t)
	provision(t, e.store, toolsV2, true)
	const p = "urn:xmpp:agent-tool:0#2.0#"
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	missing := norm(t, e.srv.iq(alice, "nobody@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='`+p+enc("a")+`'/>`))
	for name, node := range map[string]string{
		"padding":             p + "YQ==",
		"noncanonical bits":   p + "YR",
		"standard alphabet":   p + strings.ReplaceAll(enc("\xfb"), "-", "+"),
		"invalid utf-8":       p + enc("\xff\xfe"),
		"empty name":          p,
		"no name part":        "urn:xmpp:agent-tool:0#2.0",
		"control character":   p + enc("a\x01"),
		"U+FFFE":              p + enc("a\uFFFE"),
		"bad version":         "urn:xmpp:agent-tool:0#2 0#" + enc("a"),
		"empty version":       "urn:xmpp:agent-tool:0##" + enc("a"),
		"unknown tool":        p + enc("nope"),
		"unknown version":     "urn:xmpp:agent-tool:0#3.0#" + enc("a"),
		"line break in name":  p + "Y\nQ",
		"other prefix":        "urn:xmpp:agent-tool:1#2.0#" + enc("a"),
		"endpoint feature":    "urn:xmpp:agent-endpoint:0",
		"collection trailing": "urn:xmpp:agent-tools:0#2.0#x",
	} {
		for _, q := range []string{"info", "items"} {
			el := e.srv.iq(alice, "tools@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#`+q+`' node='`+escape(node)+`'/>`)
			if got := norm(t, el); got != missing {
				t.Errorf("%s (%s): %s", name, q, got)
			}
		}
	}
	// The valid spelling of a multi-byte name works.
	if c := condition(e.srv.iq(alice, "tools@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='`+p+enc("é")+`'/>`)); c != "" {
		t.Errorf("é: %s", c)
	}
}

func TestManifestRequest(t *testing.T) {
	e := startAPI(t)
	// The suite's minimal weather manifest is the spec's retrieval example.
	raw, err := os.ReadFile("../testdata/manifest/weather.json")
	if err != nil {
		t.Fatal(err)
	}
	provision(t, e.store, string(raw), true)
	v1 := provision(t, e.store, toolsV1, true)
	v2 := provision(t, e.store, toolsV2, false)
	req := func(from, to, version string) wire.Element {
		attr := ""
		if version != "" {
			attr = " version='" + version + "'"
		}
		return e.apiIQ(from, to, "get", `<manifest-request xmlns='urn:xmpp:agent-api:0'`+attr+`/>`)
	}

	el := req(alice, "weather@"+domain, "")
	golden(t, "api-manifest", marshalEl(t, el))
	m, err := api.ParseManifest(payload(t, el))
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != "1.4.0" || m.Hash.Base64() != specMinimalHash || m.JSON != specMinimalJSON || !api.VerifyJSON(m.JSON, m.Hash) {
		t.Errorf("weather manifest = %+v", m)
	}

	// A client pinned 1.0 while it was active; then 2.0 is activated.
	el = req(alice, "tools@"+domain, "")
	pinned, _ := api.ParseManifest(payload(t, el))
	if pinned.Version != "1.0" || pinned.Hash.Base64() != b64(v1.Hash) {
		t.Fatalf("pinned = %+v", pinned)
	}
	if err := e.store.Activate(context.Background(), "tools@"+domain, "2.0", nil); err != nil {
		t.Fatal(err)
	}
	active, _ := api.ParseManifest(payload(t, req(alice, "tools@"+domain, "")))
	if active.Version != "2.0" || active.Hash.Base64() != b64(v2.Hash) || active.JSON != string(v2.Canonical) {
		t.Errorf("active after the switch = %+v", active)
	}
	// The stale pin still names its exact, immutable version.
	again, _ := api.ParseManifest(payload(t, req(alice, "tools@"+domain, "1.0")))
	if again != pinned {
		t.Errorf("exact version 1.0 = %+v, want %+v", again, pinned)
	}

	// Unknown version, hidden endpoint, deactivated endpoint, nonexistent
	// endpoint: the same bytes.
	missing := norm(t, req(carol, "nobody@"+domain, ""))
	if !strings.Contains(missing, "item-not-found") {
		t.Fatalf("nonexistent: %s", missing)
	}
	if err := e.store.Deactivate(context.Background(), "weather@"+domain); err != nil {
		t.Fatal(err)
	}
	// mallory may invoke everything on tools but see nothing: invocation
	// permission alone never grants retrieval.
	mallory, _ := policy.ParsePrincipal("mallory@remote.example")
	e.gw.SetPolicy(apiPolicy(e, func(p *policy.Policy) {
		p.Invoke = []policy.Grant{{Principals: []policy.Principal{mallory}, AllEndpoints: true, AllTools: true}}
	}))
	for name, el := range map[string]wire.Element{
		"unknown version":       req(alice, "tools@"+domain, "9"),
		"hidden":                req(carol, "tools@"+domain, ""),
		"hidden exact":          req(carol, "tools@"+domain, "1.0"),
		"invoke grant only":     req(mall, "tools@"+domain, ""),
		"deactivated":           req(alice, "weather@"+domain, ""),
		"deactivated exact":     req(alice, "weather@"+domain, "1.4.0"),
		"nonexistent exact":     req(alice, "nobody@"+domain, "1.0"),
		"version of other jid":  req(alice, "a001@"+domain, "2.0"),
		"hidden unknown versio": req(carol, "tools@"+domain, "9"),
	} {
		if got := norm(t, el); got != missing {
			t.Errorf("%s: %s", name, got)
		}
	}
	// Malformed requests.
	for _, bad := range []string{
		`<manifest-request xmlns='urn:xmpp:agent-api:0' version='a b'/>`,
		`<manifest-request xmlns='urn:xmpp:agent-api:0' version=''/>`,
		`<manifest-request xmlns='urn:xmpp:agent-api:0'>` + hashXML(specMinimalHash) + `</manifest-request>`,
	} {
		if c := condition(e.srv.iq(alice, "tools@"+domain, "get", bad)); c != "bad-request" {
			t.Errorf("%s: %s", bad, c)
		}
	}
	// A set is not routed.
	if c := condition(e.srv.iq(alice, "tools@"+domain, "set", `<manifest-request xmlns='urn:xmpp:agent-api:0'/>`)); c != "service-unavailable" {
		t.Errorf("set: %s", c)
	}
}

func TestSchemaRequest(t *testing.T) {
	e := startAPI(t)
	fc := provision(t, e.store, forecastManifest(t), true)
	v1 := provision(t, e.store, toolsV1, false)
	v2 := provision(t, e.store, toolsV2, true)
	req := func(from, to, tool, version, dir, hash string) wire.Element {
		return e.apiIQ(from, to, "get", `<schema-request xmlns='urn:xmpp:agent-api:0' direction='`+dir+`' tool='`+escape(tool)+`' version='`+version+`'>`+hashXML(hash)+`</schema-request>`)
	}
	fcTo := "forecast@" + domain

	el := req(alice, fcTo, "forecast.get", "1.4.0", "input", b64(fc.Hash))
	golden(t, "api-schema", marshalEl(t, el))
	s, err := api.ParseSchema(payload(t, el))
	if err != nil {
		t.Fatal(err)
	}
	if s.JSON != specInputSchema || s.SchemaHash.Base64() != specInputHash || !api.VerifyJSON(s.JSON, s.SchemaHash) ||
		s.ManifestHash.Base64() != b64(fc.Hash) || s.Tool != "forecast.get" || s.Direction != "input" {
		t.Errorf("input schema = %+v", s)
	}
	s, _ = api.ParseSchema(payload(t, req(alice, fcTo, "forecast.get", "1.4.0", "output", b64(fc.Hash))))
	if !api.VerifyJSON(s.JSON, s.SchemaHash) || s.Direction != "output" || !strings.Contains(s.JSON, "summary") {
		t.Errorf("output schema = %+v", s)
	}
	// An inactive version, under its own hash.
	s, _ = api.ParseSchema(payload(t, req(alice, "tools@"+domain, "old", "1.0", "input", b64(v1.Hash))))
	if s.Version != "1.0" || s.JSON != `{"type":"object"}` {
		t.Errorf("inactive version schema = %+v", s)
	}

	// A hash that does not select the registered object: conflict.
	for name, el := range map[string]wire.Element{
		"spec's other hash":     req(alice, fcTo, "forecast.get", "1.4.0", "input", specMinimalHash),
		"another version's":     req(alice, "tools@"+domain, "old", "1.0", "input", b64(v2.Hash)),
		"stale for unknown one": req(alice, "tools@"+domain, "nope", "2.0", "input", b64(v1.Hash)),
	} {
		if c := condition(el); c != "conflict" {
			t.Errorf("%s: %s", name, c)
		}
	}
	// Unknown tool or version, no output schema, hidden, nonexistent: one
	// not-found answer.
	missing := norm(t, req(carol, "nobody@"+domain, "forecast.get", "1.4.0", "input", b64(fc.Hash)))
	for name, el := range map[string]wire.Element{
		"unknown tool":      req(alice, "tools@"+domain, "nope", "2.0", "input", b64(v2.Hash)),
		"unknown version":   req(alice, "tools@"+domain, "a", "7", "input", b64(v2.Hash)),
		"no output schema":  req(alice, "tools@"+domain, "a", "2.0", "output", b64(v2.Hash)),
		"hidden":            req(carol, fcTo, "forecast.get", "1.4.0", "input", b64(fc.Hash)),
		"hidden stale hash": req(carol, fcTo, "forecast.get", "1.4.0", "input", specMinimalHash),
	} {
		if got := norm(t, el); got != missing {
			t.Errorf("%s: %s", name, got)
		}
	}
	// Malformed requests.
	for _, bad := range []string{
		`<schema-request xmlns='urn:xmpp:agent-api:0' direction='sideways' tool='a' version='2.0'>` + hashXML(b64(v2.Hash)) + `</schema-request>`,
		`<schema-request xmlns='urn:xmpp:agent-api:0' direction='input' tool='' version='2.0'>` + hashXML(b64(v2.Hash)) + `</schema-request>`,
		`<schema-request xmlns='urn:xmpp:agent-api:0' direction='input' tool='a'>` + hashXML(b64(v2.Hash)) + `</schema-request>`,
		`<schema-request xmlns='urn:xmpp:agent-api:0' direction='input' tool='a' version='2.0'/>`,
		`<schema-request xmlns='urn:xmpp:agent-api:0' direction='input' tool='a' version='2.0'><hash xmlns='urn:xmpp:hashes:2' algo='sha-1'>` + b64(v2.Hash) + `</hash></schema-request>`,
		`<schema-request xmlns='urn:xmpp:agent-api:0' direction='input' tool='a' version='2.0'>` + hashXML("not base64") + `</schema-request>`,
	} {
		if c := condition(e.srv.iq(alice, "tools@"+domain, "get", bad)); c != "bad-request" {
			t.Errorf("%s: %s", bad, c)
		}
	}
}
