package api_test

import (
	"crypto/sha256"
	"encoding/xml"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"agentgw/api"
	"agentgw/manifest"
	"agentgw/wire"
)

// specHash is the hash of the spec's minimal manifest.
var specHash = wire.Hash(sha256.Sum256([]byte(`{"agent":{"jid":"weather@agents.example","name":"weather","version":"1.4.0"},"manifestSpecVersion":"0","tools":[]}`)))

const hashXML = `<hash algo='sha-256' xmlns='urn:xmpp:hashes:2'>K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=</hash>`

// roundTrip is one wire value, its canonical XML, and how to parse it back.
type roundTrip struct {
	name  string
	value interface{ TokenReader() xml.TokenReader }
	xml   string
	parse func(wire.Element) (any, error)
}

func parser[T any](f func(wire.Element) (T, error)) func(wire.Element) (any, error) {
	return func(el wire.Element) (any, error) { return f(el) }
}

func endpointOpParser(name xml.Name) func(wire.Element) (any, error) {
	return func(el wire.Element) (any, error) { return api.ParseEndpointOp(el, name) }
}

// TestWireRoundTrips: every element of the schema, marshalled to its XML
// and parsed back to the same value.
func TestWireRoundTrips(t *testing.T) {
	for _, tc := range []roundTrip{
		{"register", api.Register{Manifest: `{"a":"<&>"}`},
			`<register xmlns='urn:xmpp:agent-api:0'><manifest media-type='application/json'>{"a":"&lt;&amp;&gt;"}</manifest></register>`,
			parser(api.ParseRegister)},
		{"registered", api.Registered{JID: "w@agents.example", Version: "1.4.0", Hash: specHash},
			`<registered jid='w@agents.example' version='1.4.0' xmlns='urn:xmpp:agent-api:0'>` + hashXML + `</registered>`,
			parser(api.ParseRegistered)},
		{"activate", api.Activate{JID: "w@agents.example", Version: "1.4.0", Hash: specHash},
			`<activate jid='w@agents.example' version='1.4.0' xmlns='urn:xmpp:agent-api:0'>` + hashXML + `</activate>`,
			parser(api.ParseActivate)},
		{"active", api.Active{JID: "w@agents.example", Version: "1.4.0"},
			`<active jid='w@agents.example' version='1.4.0' xmlns='urn:xmpp:agent-api:0'/>`,
			parser(api.ParseActive)},
		{"deactivate", api.EndpointOp{Name: api.NameDeactivate, JID: "w@agents.example"},
			`<deactivate jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'/>`,
			endpointOpParser(api.NameDeactivate)},
		{"deactivated", api.EndpointOp{Name: api.NameDeactivated, JID: "w@agents.example"},
			`<deactivated jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'/>`,
			endpointOpParser(api.NameDeactivated)},
		{"registration-status", api.EndpointOp{Name: api.NameRegistrationStatus, JID: "w@agents.example"},
			`<registration-status jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'/>`,
			endpointOpParser(api.NameRegistrationStatus)},
		{"remove-endpoint", api.EndpointOp{Name: api.NameRemoveEndpoint, JID: "w@agents.example"},
			`<remove-endpoint jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'/>`,
			endpointOpParser(api.NameRemoveEndpoint)},
		{"remove-version", api.RemoveVersion{JID: "w@agents.example", Version: "1"},
			`<remove-version jid='w@agents.example' version='1' xmlns='urn:xmpp:agent-api:0'/>`,
			parser(api.ParseRemoveVersion)},
		{"removed version", api.Removed{JID: "w@agents.example", Version: "1"},
			`<removed jid='w@agents.example' version='1' xmlns='urn:xmpp:agent-api:0'/>`,
			parser(api.ParseRemoved)},
		{"removed endpoint", api.Removed{JID: "w@agents.example"},
			`<removed jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'/>`,
			parser(api.ParseRemoved)},
		{"registration", api.Registration{JID: "w@agents.example", Versions: []api.RegisteredVersion{
			{ID: "1", Active: true, Hash: specHash}, {ID: "2", Removable: true, Hash: specHash}}},
			`<registration jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'>` +
				`<version active='true' id='1' removable='false'>` + hashXML + `</version>` +
				`<version active='false' id='2' removable='true'>` + hashXML + `</version></registration>`,
			parser(api.ParseRegistration)},
		{"empty registration", api.Registration{JID: "w@agents.example"},
			`<registration jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'/>`,
			parser(api.ParseRegistration)},
		{"manifest-request", api.ManifestRequest{},
			`<manifest-request xmlns='urn:xmpp:agent-api:0'/>`,
			parser(api.ParseManifestRequest)},
		{"manifest-request version", api.ManifestRequest{Version: "1.4.0"},
			`<manifest-request version='1.4.0' xmlns='urn:xmpp:agent-api:0'/>`,
			parser(api.ParseManifestRequest)},
		{"manifest", api.Manifest{Version: "1.4.0", Hash: specHash, JSON: `{"tools":[]}`},
			`<manifest media-type='application/json' version='1.4.0' xmlns='urn:xmpp:agent-api:0'>` + hashXML + `<json>{"tools":[]}</json></manifest>`,
			parser(api.ParseManifest)},
		{"schema-request", api.SchemaRequest{Tool: "forecast.get", Version: "1.4.0", Direction: "input", Hash: specHash},
			`<schema-request direction='input' tool='forecast.get' version='1.4.0' xmlns='urn:xmpp:agent-api:0'>` + hashXML + `</schema-request>`,
			parser(api.ParseSchemaRequest)},
		{"schema", api.Schema{Tool: "forecast.get", Version: "1.4.0", Direction: "output", ManifestHash: specHash, SchemaHash: specHash, JSON: `{"type":"object"}`},
			`<schema direction='output' media-type='application/schema+json' tool='forecast.get' version='1.4.0' xmlns='urn:xmpp:agent-api:0'>` +
				`<manifest-hash>` + hashXML + `</manifest-hash><schema-hash>` + hashXML + `</schema-hash><json>{"type":"object"}</json></schema>`,
			parser(api.ParseSchema)},
	} {
		got, err := wire.Marshal(tc.value.TokenReader())
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.xml {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.xml)
			continue
		}
		el, err := wire.Parse(got)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		back, err := tc.parse(el)
		if err != nil {
			t.Errorf("%s: parse: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(back, tc.value) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", tc.name, back, tc.value)
		}
	}
}

// TestParseLenient: what a peer may write differently and still mean the
// same: other prefixes, CDATA, whitespace around hashes, xs:boolean 1/0.
func TestParseLenient(t *testing.T) {
	el, _ := wire.Parse(`<a:register xmlns:a='urn:xmpp:agent-api:0'><a:manifest media-type='application/json'><![CDATA[{"x":"<y>"}]]></a:manifest></a:register>`)
	if r, err := api.ParseRegister(el); err != nil || r.Manifest != `{"x":"<y>"}` {
		t.Errorf("CDATA register: %+v, %v", r, err)
	}
	el, _ = wire.Parse(`<registration jid='a@b' xmlns='urn:xmpp:agent-api:0'><version id='1' active='1' removable='0'>
		<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>
			K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=
		</hash></version></registration>`)
	r, err := api.ParseRegistration(el)
	if err != nil || len(r.Versions) != 1 || !r.Versions[0].Active || r.Versions[0].Removable || r.Versions[0].Hash != specHash {
		t.Errorf("registration: %+v, %v", r, err)
	}
}

// TestParseRejects: payloads that break the XSD or a value grammar are
// *ParseError values (bad-request on the wire).
func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		xml   string
		parse func(wire.Element) (any, error)
	}{
		{`<register xmlns='urn:xmpp:agent-api:0'/>`, parser(api.ParseRegister)},
		{`<register xmlns='urn:xmpp:agent-api:0'><manifest>{}</manifest></register>`, parser(api.ParseRegister)},
		{`<register xmlns='urn:xmpp:agent-api:0'><manifest media-type='application/json'>{}</manifest><manifest media-type='application/json'>{}</manifest></register>`, parser(api.ParseRegister)},
		{`<register xmlns='urn:xmpp:agent-api:0'><manifest media-type='application/json'><b/></manifest></register>`, parser(api.ParseRegister)},
		{`<register xmlns='urn:x'><manifest media-type='application/json'>{}</manifest></register>`, parser(api.ParseRegister)},
		{`<activate jid='a@b' version='1' xmlns='urn:xmpp:agent-api:0'/>`, parser(api.ParseActivate)},
		{`<activate version='1' xmlns='urn:xmpp:agent-api:0'>` + hashXML + `</activate>`, parser(api.ParseActivate)},
		{`<activate jid='a@b' version='1 2' xmlns='urn:xmpp:agent-api:0'>` + hashXML + `</activate>`, parser(api.ParseActivate)},
		{`<activate jid='a@b' version='1' xmlns='urn:xmpp:agent-api:0'><hash xmlns='urn:x' algo='sha-256'>x</hash></activate>`, parser(api.ParseActivate)},
		{`<activate jid='a@b' version='1' xmlns='urn:xmpp:agent-api:0'><hash xmlns='urn:xmpp:hashes:2'>x</hash></activate>`, parser(api.ParseActivate)},
		{`<activate jid='a@b' version='1' xmlns='urn:xmpp:agent-api:0'>` + hashXML + hashXML + `</activate>`, parser(api.ParseActivate)},
		{`<active jid='a@b' xmlns='urn:xmpp:agent-api:0'/>`, parser(api.ParseActive)},
		{`<remove-version jid='a@b' xmlns='urn:xmpp:agent-api:0'/>`, parser(api.ParseRemoveVersion)},
		{`<removed jid='a@b' version='' xmlns='urn:xmpp:agent-api:0'/>`, parser(api.ParseRemoved)},
		{`<deactivate xmlns='urn:xmpp:agent-api:0'/>`, endpointOpParser(api.NameDeactivate)},
		{`<deactivate jid='a@b' xmlns='urn:xmpp:agent-api:0'><x/></deactivate>`, endpointOpParser(api.NameDeactivate)},
		{`<deactivated jid='a@b' xmlns='urn:xmpp:agent-api:0'/>`, endpointOpParser(api.NameDeactivate)},
		{`<registration jid='a@b' xmlns='urn:xmpp:agent-api:0'><version id='1' active='yes' removable='false'>` + hashXML + `</version></registration>`, parser(api.ParseRegistration)},
		{`<registration jid='a@b' xmlns='urn:xmpp:agent-api:0'><other/></registration>`, parser(api.ParseRegistration)},
		{`<manifest-request version='1 2' xmlns='urn:xmpp:agent-api:0'/>`, parser(api.ParseManifestRequest)},
		{`<manifest-request version='' xmlns='urn:xmpp:agent-api:0'/>`, parser(api.ParseManifestRequest)},
		{`<manifest-request xmlns='urn:xmpp:agent-api:0'><version/></manifest-request>`, parser(api.ParseManifestRequest)},
		{`<manifest version='1' xmlns='urn:xmpp:agent-api:0'>` + hashXML + `<json>{}</json></manifest>`, parser(api.ParseManifest)},
		{`<manifest media-type='application/json' version='1' xmlns='urn:xmpp:agent-api:0'><json>{}</json>` + hashXML + `</manifest>`, parser(api.ParseManifest)},
		{`<schema-request direction='sideways' tool='t' version='1' xmlns='urn:xmpp:agent-api:0'>` + hashXML + `</schema-request>`, parser(api.ParseSchemaRequest)},
		{`<schema-request direction='input' tool='' version='1' xmlns='urn:xmpp:agent-api:0'>` + hashXML + `</schema-request>`, parser(api.ParseSchemaRequest)},
		{`<schema-request direction='input' tool='t' version='1' xmlns='urn:xmpp:agent-api:0'/>`, parser(api.ParseSchemaRequest)},
		{`<schema direction='input' media-type='application/json' tool='t' version='1' xmlns='urn:xmpp:agent-api:0'><manifest-hash>` + hashXML + `</manifest-hash><schema-hash>` + hashXML + `</schema-hash><json>{}</json></schema>`, parser(api.ParseSchema)},
	} {
		el, err := wire.Parse(tc.xml)
		if err != nil {
			t.Fatalf("%s: %v", tc.xml, err)
		}
		_, err = tc.parse(el)
		var pe *api.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want a *ParseError", tc.xml, err)
		}
	}
}

func TestFeatures(t *testing.T) {
	if got := api.GatewayFeatures(nil); len(got) != 0 {
		t.Errorf("nil policy: %v", got)
	}
	if !reflect.DeepEqual(api.EndpointFeatures, []string{api.FeatureManifest, api.FeatureSchema}) {
		t.Errorf("endpoint features: %v", api.EndpointFeatures)
	}
}

func TestCheckServable(t *testing.T) {
	manifestWith := func(description string) *manifest.Manifest {
		t.Helper()
		raw := fmt.Sprintf(`{"manifestSpecVersion":"0","agent":{"jid":"a@agents.example","name":"a","version":"1"},"tools":[%s]}`, description)
		m, err := manifest.Parse([]byte(raw), manifest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tools := func(n int, desc string) string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(`{"name":"t%d","description":%q,"inputSchema":{"type":"object"}}`, i, desc))
		}
		return strings.Join(out, ",")
	}
	if err := api.CheckServable(manifestWith(tools(10, "small"))); err != nil {
		t.Errorf("small manifest: %v", err)
	}
	// 40 tools of 4000 plain bytes fit; of 4000 ampersands they do not,
	// because each becomes &amp; on the wire.
	if err := api.CheckServable(manifestWith(tools(40, strings.Repeat("x", 4000)))); err != nil {
		t.Errorf("160 KB of plain text: %v", err)
	}
	err := api.CheckServable(manifestWith(tools(40, strings.Repeat("&", 4000))))
	var me *manifest.Error
	if !errors.As(err, &me) || me.Kind != manifest.KindTooLarge {
		t.Errorf("160 KB of ampersands: %v, want KindTooLarge", err)
	}

	// A quote counts as the six bytes of &quot; a server writes for the
	// next hop, not the five of Go's &#34;: a manifest that fits only at
	// five bytes a quote is refused.
	base := manifestWith(tools(8, "")).Canonical
	quotes := strings.Count(string(base), `"`)
	goLen := wire.EscapedLen(base) - quotes         // at five bytes a quote
	k := (api.MaxServedJSONBytes - goLen) / (8 * 6) // each description quote is \" in JSON
	m := manifestWith(tools(8, strings.Repeat(`"`, k)))
	if n := wire.EscapedLen(m.Canonical) - strings.Count(string(m.Canonical), `"`); n > api.MaxServedJSONBytes {
		t.Fatalf("test manifest is %d bytes at five a quote, want it to fit", n)
	}
	if err := api.CheckServable(m); !errors.As(err, &me) || me.Kind != manifest.KindTooLarge {
		t.Errorf("manifest over the limit only at six bytes a quote: %v, want KindTooLarge", err)
	}
}
