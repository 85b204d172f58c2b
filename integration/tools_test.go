package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentgw/api"
	"agentgw/internal/harness"
	"agentgw/internal/xsdtest"
	"agentgw/manifest"
	"agentgw/wire"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The spec's tool node and input schema hash for forecast.get in 1.4.0.
const (
	specToolNode  = "urn:xmpp:agent-tool:0#1.4.0#Zm9yZWNhc3QuZ2V0"
	specInputHash = "XxGP62PwgOW9NLxx8ysunvuijMhSd0y4j1SSRTAbt7c="
)

// forecastJID serves the spec's full example manifest. The suite's
// weather@agents.example is already registered at 1.4.0 with the minimal
// manifest, so the full one goes under another JID: the tool node and the
// schema hashes do not depend on the JID, the manifest hash does.
const forecastJID = "forecast@" + harness.ComponentDomain

// xsdValidate validates one agent-api payload against testdata/agent-api.xsd
// with xmllint when the test ends (internal/xsdtest).
func xsdValidate(t testing.TB, doc string) {
	t.Helper()
	xsdtest.Check(t, "../testdata/agent-api.xsd", doc)
}

// apiResult checks that el is a result IQ whose payload is an agent-api
// element, validates that payload against the XSD, and returns it.
func apiResult(t testing.TB, el wire.Element, raw string) wire.Element {
	t.Helper()
	kids := el.Children()
	if attr, _ := el.AttrValue("type"); attr != "result" || len(kids) != 1 || kids[0].Start.Name.Space != api.NS {
		t.Fatalf("not an agent-api result: %s", raw)
	}
	doc, err := wire.Marshal(kids[0].Reader())
	if err != nil {
		t.Fatal(err)
	}
	xsdValidate(t, doc)
	return kids[0]
}

// errorCondition is the stanza error condition of an answer, "" if it is a
// result.
func errorCondition(el wire.Element) string {
	for _, c := range el.Children() {
		if c.Start.Name.Local == "error" {
			for _, cond := range c.Children() {
				return cond.Start.Name.Local
			}
		}
	}
	return ""
}

// registerForecast registers and activates the full example manifest under
// forecastJID through the CLI, and removes the endpoint when the test ends.
func registerForecast(t *testing.T) *manifest.Manifest {
	t.Helper()
	raw, err := os.ReadFile("../testdata/manifest/weather-full.json")
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.ReplaceAll(raw, []byte("weather@agents.example"), []byte(forecastJID))
	m, err := manifest.Parse(body, manifest.Options{Domain: harness.ComponentDomain})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(suite.dir, "forecast.json")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", file); err != nil {
		t.Fatalf("register %s: %v %s", forecastJID, err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if out, err := agentgw(ctx, "endpoint", "remove", "-config", suite.config, forecastJID); err != nil {
			t.Errorf("remove %s: %v %s", forecastJID, err, out)
		}
	})
	return m
}

// grantCarol lets carol@remote.example see forecastJID (config + SIGHUP)
// until the test ends.
func grantCarol(t *testing.T) {
	t.Helper()
	grant := fmt.Sprintf("\n[[policy.visibility]]\nprincipals = [\"carol@%s\"]\nendpoints = [%q]\n", harness.RemoteDomain, forecastJID)
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
}

// TestClientGuideWalkthrough: carol, on the federated server, with a
// visibility grant, follows steps 1 to 7 of the client guide and checks
// every hash she receives.
func TestClientGuideWalkthrough(t *testing.T) {
	need(t)
	want := registerForecast(t)
	grantCarol(t)
	carol := login(t, "carol", harness.RemoteDomain)

	// 1. The gateway is configured: check its identity and directory feature.
	_, raw := iq(t, carol, "get", harness.ComponentDomain, discoInfo)
	if norm := strings.ReplaceAll(raw, "'", `"`); !strings.Contains(norm, `category="automation"`) ||
		!strings.Contains(norm, `type="agent-gateway"`) || !strings.Contains(norm, `var="urn:xmpp:agent-directory:0"`) {
		t.Fatalf("step 1, gateway info: %s", raw)
	}

	// 2. Page the directory until exhausted: the grant shows forecast only.
	var endpoints []string
	el := waitFor(t, func() (wire.Element, bool) {
		el, _ := iq(t, carol, "get", harness.ComponentDomain, rsmItems("urn:xmpp:agent-directory:0", "<max>1</max>"))
		return el, parsePage(t, el).count > 0
	})
	for p := parsePage(t, el); ; {
		endpoints = append(endpoints, p.jids...)
		if len(p.jids) == 0 || len(endpoints) >= p.count {
			break
		}
		el, _ = iq(t, carol, "get", harness.ComponentDomain, rsmItems("urn:xmpp:agent-directory:0", "<max>1</max><after>"+p.last+"</after>"))
		p = parsePage(t, el)
	}
	if len(endpoints) != 1 || endpoints[0] != forecastJID {
		t.Fatalf("step 2, directory = %v", endpoints)
	}

	// 3. Endpoint identity, features and information form.
	el, raw = iq(t, carol, "get", forecastJID, discoInfo)
	for _, f := range []string{"urn:xmpp:agent-endpoint:0", api.FeatureManifest, api.FeatureSchema} {
		if !strings.Contains(strings.ReplaceAll(raw, "'", `"`), `var="`+f+`"`) {
			t.Errorf("step 3, endpoint lacks %s: %s", f, raw)
		}
	}
	info := formValues(t, el)
	if info["version"] != "1.4.0" || info["manifest_hash_algo"] != "sha-256" || info["manifest_hash_value"] != want.HashBase64() {
		t.Fatalf("step 3, endpoint info %v", info)
	}

	// 4. Retrieve and pin the active manifest; its JSON hashes to the
	// advertised value, which is the endpoint info's.
	el, raw = iq(t, carol, "get", forecastJID, `<manifest-request xmlns='urn:xmpp:agent-api:0'/>`)
	pinned, err := api.ParseManifest(apiResult(t, el, raw))
	if err != nil {
		t.Fatal(err)
	}
	if pinned.Version != info["version"] || pinned.Hash.Base64() != info["manifest_hash_value"] || !api.VerifyJSON(pinned.JSON, pinned.Hash) {
		t.Fatalf("step 4, manifest %+v does not match endpoint info %v", pinned, info)
	}
	// Carol's own canonicalization of the JSON she received agrees.
	mine, err := manifest.Parse([]byte(pinned.JSON), manifest.Options{})
	if err != nil || mine.HashBase64() != pinned.Hash.Base64() || string(mine.Canonical) != pinned.JSON {
		t.Fatalf("step 4, local canonicalization: %v", err)
	}

	// 5. List tools of the pinned version.
	coll := manifest.ToolsNode(pinned.Version)
	el, raw = iq(t, carol, "get", forecastJID, rsmItems(coll, "<max>50</max>"))
	var nodes []string
	for _, it := range el.Children()[0].Children() {
		if it.Start.Name.Local == "item" {
			node, _ := it.AttrValue("node")
			if j, _ := it.AttrValue("jid"); j != forecastJID {
				t.Errorf("step 5, item jid %q", j)
			}
			nodes = append(nodes, node)
		}
	}
	if len(nodes) != 1 || nodes[0] != specToolNode || !strings.Contains(raw, "<count>1</count>") {
		t.Fatalf("step 5, tools: %s", raw)
	}

	// 6. Tool information: identity, feature, pinned version, complete
	// input hash pair equal to the spec's and to the pinned manifest's.
	el, raw = iq(t, carol, "get", forecastJID, `<query xmlns='http://jabber.org/protocol/disco#info' node='`+nodes[0]+`'/>`)
	if norm := strings.ReplaceAll(raw, "'", `"`); !strings.Contains(norm, `type="agent-tool"`) || !strings.Contains(norm, `var="urn:xmpp:agent-tool:0"`) {
		t.Fatalf("step 6, tool info: %s", raw)
	}
	tool := formValues(t, el)
	_, name, err := manifest.ParseToolNode(nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	mt, _ := mine.Tool(name)
	if tool["name"] != name || tool["api_version"] != pinned.Version || tool["input_schema_hash_algo"] != "sha-256" ||
		tool["input_schema_hash_value"] != specInputHash || tool["input_schema_hash_value"] != wire.Hash(mt.InputHash).Base64() ||
		tool["output_schema_hash_value"] != wire.Hash(mt.OutputHash).Base64() || tool["read_only"] != "1" {
		t.Fatalf("step 6, tool form %v", tool)
	}

	// 7. Both schemas under the pinned hash: each matches the tool info
	// hash and its own bytes; the input schema compiles and validates
	// arguments.
	for _, dir := range []string{"input", "output"} {
		el, raw = iq(t, carol, "get", forecastJID, `<schema-request xmlns='urn:xmpp:agent-api:0' direction='`+dir+`' tool='`+name+`' version='`+pinned.Version+`'>`+
			`<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>`+pinned.Hash.Base64()+`</hash></schema-request>`)
		s, err := api.ParseSchema(apiResult(t, el, raw))
		if err != nil {
			t.Fatal(err)
		}
		if s.Tool != name || s.Version != pinned.Version || s.Direction != dir || s.ManifestHash != pinned.Hash ||
			s.SchemaHash.Base64() != tool[dir+"_schema_hash_value"] || !api.VerifyJSON(s.JSON, s.SchemaHash) {
			t.Fatalf("step 7, %s schema %+v", dir, s)
		}
		if dir != "input" {
			continue
		}
		compiled, err := manifest.CompileSchema([]byte(s.JSON), true, manifest.Options{})
		if err != nil {
			t.Fatalf("step 7, compile: %v", err)
		}
		for args, ok := range map[string]bool{`{"city":"Riga"}`: true, `{"town":"Riga"}`: false} {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
			if err != nil {
				t.Fatal(err)
			}
			if err := compiled.Validate(v); (err == nil) != ok {
				t.Errorf("step 7, arguments %s: %v", args, err)
			}
		}
	}
	// A stale pin is refused: the minimal manifest's hash does not select
	// this object.
	_, raw = iq(t, carol, "get", forecastJID, `<schema-request xmlns='urn:xmpp:agent-api:0' direction='input' tool='`+name+`' version='1.4.0'>`+
		`<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=</hash></schema-request>`)
	if !strings.Contains(raw, "conflict") {
		t.Errorf("stale hash: %s", raw)
	}
}

// TestHiddenToolMetadata: bob, federated and without any grant, gets the
// same bytes for the manifest, a tool node and a schema of an endpoint
// hidden from him as for those of a nonexistent one.
func TestHiddenToolMetadata(t *testing.T) {
	need(t)
	m := registerForecast(t)
	bob := login(t, "bob", harness.RemoteDomain)
	hash := `<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>` + m.HashBase64() + `</hash>`
	requests := map[string]string{
		"manifest":   `<manifest-request xmlns='urn:xmpp:agent-api:0'/>`,
		"exact":      `<manifest-request xmlns='urn:xmpp:agent-api:0' version='1.4.0'/>`,
		"tool info":  `<query xmlns='http://jabber.org/protocol/disco#info' node='` + specToolNode + `'/>`,
		"tool items": `<query xmlns='http://jabber.org/protocol/disco#items' node='urn:xmpp:agent-tools:0#1.4.0'/>`,
		"schema":     `<schema-request xmlns='urn:xmpp:agent-api:0' direction='input' tool='forecast.get' version='1.4.0'>` + hash + `</schema-request>`,
	}
	var first string
	for name, payload := range requests {
		_, hidden := iq(t, bob, "get", forecastJID, payload)
		_, missing := iq(t, bob, "get", "nobody-here@"+harness.ComponentDomain, payload)
		if !strings.Contains(hidden, "item-not-found") {
			t.Errorf("%s of a hidden endpoint: %s", name, hidden)
		}
		if stripAddrs(hidden) != stripAddrs(missing) {
			t.Errorf("%s: hidden and nonexistent differ:\n%s\n%s", name, hidden, missing)
		}
		if first == "" {
			first = stripAddrs(hidden)
		} else if stripAddrs(hidden) != first {
			t.Errorf("%s: not the one not-found answer:\n%s\n%s", name, hidden, first)
		}
	}
	// alice, who may see it, gets the schema: the answers above were not
	// failures of the request itself.
	alice := login(t, "alice", harness.HomeDomain)
	el, raw := iq(t, alice, "get", forecastJID, requests["schema"])
	apiResult(t, el, raw)
}
