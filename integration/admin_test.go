package integration

import (
	"context"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"

	"agentgw/api"
	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/manifest"
	"agentgw/wire"
)

// provJID is the virtual endpoint the admin provisions over XMPP.
const provJID = "provisioned@" + harness.ComponentDomain

// provManifest is provJID's manifest at a version, with title varying the
// content.
func provManifest(version, title string) string {
	return fmt.Sprintf(`{"manifestSpecVersion":"0","agent":{"jid":%q,"name":"provisioned","title":%q,"version":%q},"tools":[]}`, provJID, title, version)
}

// registerPayload is a <register/> carrying doc.
func registerPayload(doc string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(doc))
	return `<register xmlns='urn:xmpp:agent-api:0'><manifest media-type='application/json'>` + b.String() + `</manifest></register>`
}

func hashChild(m *manifest.Manifest) string {
	return `<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>` + m.HashBase64() + `</hash>`
}

func mustManifest(t *testing.T, doc string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(doc), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// gatewayIQ sends a provisioning IQ to the gateway.
func gatewayIQ(t *testing.T, c *c2s.Client, typ, payload string) (wire.Element, string) {
	t.Helper()
	return iq(t, c, typ, harness.ComponentDomain, payload)
}

// TestAdminProvisioning: admin@home.example (in [policy] admins) manages a
// virtual endpoint's versions entirely over XMPP; nobody else may.
func TestAdminProvisioning(t *testing.T) {
	need(t)
	admin := login(t, "admin", harness.HomeDomain)
	alice := login(t, "alice", harness.HomeDomain)
	bob := login(t, "bob", harness.RemoteDomain)
	t.Cleanup(func() {
		// Whatever happened, leave no endpoint behind for later tests.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		agentgw(ctx, "endpoint", "remove", "-config", suite.config, provJID)
	})
	m1 := mustManifest(t, provManifest("1", "Provisioned"))
	m2 := mustManifest(t, provManifest("2", "Provisioned Two"))
	op := func(c *c2s.Client, typ, name, attrs, body string) (wire.Element, string) {
		return gatewayIQ(t, c, typ, `<`+name+` xmlns='urn:xmpp:agent-api:0' `+attrs+`>`+body+`</`+name+`>`)
	}
	want := func(step, raw, cond string) {
		t.Helper()
		if !strings.Contains(raw, "<"+cond) {
			t.Errorf("%s: want %s, got %s", step, cond, raw)
		}
	}

	// The gateway advertises both provisioning profiles.
	_, raw := iq(t, admin, "get", harness.ComponentDomain, discoInfo)
	for _, f := range []string{api.FeatureAdmin, api.FeatureSelfRegister} {
		if !strings.Contains(strings.ReplaceAll(raw, "'", `"`), `var="`+f+`"`) {
			t.Errorf("gateway does not advertise %s: %s", f, raw)
		}
	}

	// Register: the hash is the one computed locally; the result comes
	// from the gateway.
	el, raw := gatewayIQ(t, admin, "set", registerPayload(provManifest("1", "Provisioned")))
	reg, err := api.ParseRegistered(apiResult(t, el, raw))
	if err != nil || reg.JID != provJID || reg.Version != "1" || reg.Hash.Base64() != m1.HashBase64() {
		t.Fatalf("register: %+v, %v", reg, err)
	}
	if from, _ := el.AttrValue("from"); from != harness.ComponentDomain {
		t.Errorf("registered from %q", from)
	}
	// Identical content again: the same answer.
	el2, raw2 := gatewayIQ(t, admin, "set", registerPayload(provManifest("1", "Provisioned")))
	apiResult(t, el2, raw2)
	if stripAddrs(raw2) != stripAddrs(raw) {
		t.Errorf("idempotent register:\n%s\n%s", raw2, raw)
	}
	// Other content under version 1: conflict.
	_, raw = gatewayIQ(t, admin, "set", registerPayload(provManifest("1", "Changed")))
	want("conflicting register", raw, "conflict")

	// Nobody else may provision, and federation grants nothing.
	_, raw = gatewayIQ(t, bob, "set", registerPayload(provManifest("3", "Bob's")))
	want("federated register", raw, "forbidden")
	_, raw = op(alice, "set", "activate", "jid='"+provJID+"' version='1'", hashChild(m1))
	want("non-admin activate", raw, "forbidden")
	_, raw = op(bob, "get", "registration-status", "jid='"+provJID+"'", "")
	want("federated status", raw, "forbidden")

	// Activate under the hash: wrong hash conflicts; right one activates,
	// and alice (who sees every endpoint) finds it.
	_, raw = op(admin, "set", "activate", "jid='"+provJID+"' version='1'", hashChild(m2))
	want("activate with another hash", raw, "conflict")
	el, raw = op(admin, "set", "activate", "jid='"+provJID+"' version='1'", hashChild(m1))
	if a, err := api.ParseActive(apiResult(t, el, raw)); err != nil || a.JID != provJID || a.Version != "1" {
		t.Fatalf("activate: %+v, %v", a, err)
	}
	waitFor(t, func() (wire.Element, bool) {
		el, _ := iq(t, alice, "get", provJID, discoInfo)
		return el, errorCondition(el) == ""
	})

	// A second version; the active one cannot be removed.
	el, raw = gatewayIQ(t, admin, "set", registerPayload(provManifest("2", "Provisioned Two")))
	apiResult(t, el, raw)
	_, raw = op(admin, "set", "remove-version", "jid='"+provJID+"' version='1'", "")
	want("remove the active version", raw, "conflict")
	el, raw = op(admin, "get", "registration-status", "jid='"+provJID+"'", "")
	status, err := api.ParseRegistration(apiResult(t, el, raw))
	if err != nil || len(status.Versions) != 2 || !status.Versions[0].Active || status.Versions[0].Removable ||
		status.Versions[1].Active || !status.Versions[1].Removable || status.Versions[1].Hash.Base64() != m2.HashBase64() {
		t.Fatalf("registration-status: %+v, %v", status, err)
	}

	// Switch to 2, remove 1, and restore it: only its own content.
	el, raw = op(admin, "set", "activate", "jid='"+provJID+"' version='2'", hashChild(m2))
	apiResult(t, el, raw)
	el, raw = op(admin, "set", "remove-version", "jid='"+provJID+"' version='1'", "")
	if r, err := api.ParseRemoved(apiResult(t, el, raw)); err != nil || r.Version != "1" {
		t.Fatalf("remove-version: %+v, %v", r, err)
	}
	_, raw = iq(t, alice, "get", provJID, `<manifest-request xmlns='urn:xmpp:agent-api:0' version='1'/>`)
	want("removed version", raw, "item-not-found")
	_, raw = gatewayIQ(t, admin, "set", registerPayload(provManifest("1", "Changed")))
	want("other content under a tombstone", raw, "conflict")
	el, raw = gatewayIQ(t, admin, "set", registerPayload(provManifest("1", "Provisioned")))
	if r, err := api.ParseRegistered(apiResult(t, el, raw)); err != nil || r.Hash.Base64() != m1.HashBase64() {
		t.Fatalf("restore: %+v, %v", r, err)
	}
	el, raw = iq(t, alice, "get", provJID, `<manifest-request xmlns='urn:xmpp:agent-api:0' version='1'/>`)
	if m, err := api.ParseManifest(apiResult(t, el, raw)); err != nil || m.Hash.Base64() != m1.HashBase64() || !api.VerifyJSON(m.JSON, m.Hash) {
		t.Errorf("restored manifest: %+v, %v", m, err)
	}

	// Limits answer resource-constraint, after authorization.
	deep := `{"manifestSpecVersion":"0","agent":{"jid":"deep@agents.example","name":"d","version":"1"},"tools":[{"name":"t","inputSchema":{"type":"object","default":` +
		strings.Repeat("[", 80) + strings.Repeat("]", 80) + `}}]}`
	_, raw = gatewayIQ(t, admin, "set", registerPayload(deep))
	want("too deep", raw, "resource-constraint")
	if strings.Contains(raw, "manifestSpecVersion") {
		t.Errorf("the error reflects the manifest: %s", raw)
	}
	_, raw = gatewayIQ(t, bob, "set", registerPayload(deep))
	want("too deep, federated", raw, "forbidden")

	// Deactivate hides it; remove-endpoint removes it.
	el, raw = op(admin, "set", "deactivate", "jid='"+provJID+"'", "")
	apiResult(t, el, raw)
	_, raw = iq(t, alice, "get", provJID, `<manifest-request xmlns='urn:xmpp:agent-api:0'/>`)
	want("deactivated endpoint", raw, "item-not-found")
	el, raw = op(admin, "set", "remove-endpoint", "jid='"+provJID+"'", "")
	if r, err := api.ParseRemoved(apiResult(t, el, raw)); err != nil || r.JID != provJID || r.Version != "" {
		t.Fatalf("remove-endpoint: %+v, %v", r, err)
	}
	_, raw = op(admin, "get", "registration-status", "jid='"+provJID+"'", "")
	want("status after removal", raw, "item-not-found")
}

// TestSelfRegistration: a second Prosody account registers its own
// manifest, activates it, and appears in the directory; it cannot register
// another JID, and a federated account cannot register at all.
func TestSelfRegistration(t *testing.T) {
	need(t)
	const local = "selfbot"
	botJID := local + "@" + harness.HomeDomain
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := suite.env.Register(ctx, local, harness.HomeDomain, password); err != nil {
		t.Fatal(err)
	}
	bot := login(t, local, harness.HomeDomain)
	alice := login(t, "alice", harness.HomeDomain)
	bob := login(t, "bob", harness.RemoteDomain)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		agentgw(ctx, "endpoint", "remove", "-config", suite.config, botJID)
	})
	doc := fmt.Sprintf(`{"manifestSpecVersion":"0","agent":{"jid":%q,"name":"selfbot","title":"Self Bot","version":"1"},"tools":[]}`, botJID)
	m := mustManifest(t, doc)

	el, raw := gatewayIQ(t, bot, "set", registerPayload(doc))
	reg, err := api.ParseRegistered(apiResult(t, el, raw))
	if err != nil || reg.JID != botJID || reg.Hash.Base64() != m.HashBase64() {
		t.Fatalf("self-registration: %+v, %v", reg, err)
	}
	// From the gateway's JID, never the manifest's.
	if from, _ := el.AttrValue("from"); from != harness.ComponentDomain {
		t.Errorf("result from %q", from)
	}

	for name, tc := range map[string]struct {
		c   *c2s.Client
		doc string
	}{
		"another account":  {bot, strings.ReplaceAll(doc, botJID, "alice@"+harness.HomeDomain)},
		"virtual endpoint": {bot, strings.ReplaceAll(doc, botJID, "selfbot@"+harness.ComponentDomain)},
		"federated":        {bob, strings.ReplaceAll(doc, botJID, "bob@"+harness.RemoteDomain)},
		"federated as bot": {bob, doc},
	} {
		if _, raw := gatewayIQ(t, tc.c, "set", registerPayload(tc.doc)); !strings.Contains(raw, "<forbidden") {
			t.Errorf("%s: %s", name, raw)
		}
	}

	// The owner activates its own endpoint; removal stays with admins.
	el, raw = gatewayIQ(t, bot, "set", `<activate xmlns='urn:xmpp:agent-api:0' jid='`+botJID+`' version='1'>`+hashChild(m)+`</activate>`)
	apiResult(t, el, raw)
	if _, raw := gatewayIQ(t, bot, "set", `<remove-endpoint xmlns='urn:xmpp:agent-api:0' jid='`+botJID+`'/>`); !strings.Contains(raw, "<forbidden") {
		t.Errorf("owner remove-endpoint: %s", raw)
	}

	// It is in the directory alice pages through.
	found := false
	after := ""
	for !found {
		set := "<max>100</max>"
		if after != "" {
			set += "<after>" + after + "</after>"
		}
		el, _ := iq(t, alice, "get", harness.ComponentDomain, rsmItems("urn:xmpp:agent-directory:0", set))
		p := parsePage(t, el)
		for _, j := range p.jids {
			found = found || j == botJID
		}
		if len(p.jids) < 100 {
			break
		}
		after = p.last
	}
	if !found {
		t.Errorf("%s is not in the directory", botJID)
	}

	// An admin can take it out again.
	admin := login(t, "admin", harness.HomeDomain)
	el, raw = gatewayIQ(t, admin, "set", `<remove-endpoint xmlns='urn:xmpp:agent-api:0' jid='`+botJID+`'/>`)
	apiResult(t, el, raw)
}
