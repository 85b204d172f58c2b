package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/internal/harness"
)

// ejabberdDemo is the builtin demo endpoint of the gateway ejabberd hosts.
const ejabberdDemo = "demo@" + harness.RemoteComponentDomain

// startEjabberdGateway starts a second gateway, with a database of its own,
// as ejabberd's XEP-0114 component harness.RemoteComponentDomain; extra is
// appended to its configuration. bob and carol (ejabberd's users) see
// every endpoint; bob may invoke the builtin demo tools. It stops when the
// test ends.
func startEjabberdGateway(t testing.TB, name, extra string) *gatewayProc {
	t.Helper()
	dir := filepath.Join(suite.dir, name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "component.secret"), []byte(suite.env.ComponentSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "agentgw.toml")
	body := fmt.Sprintf(`
[component]
domain = %[1]q
server = %[2]q
secret_file = "component.secret"

[gateway]
name = "Gateway on ejabberd"
rate_limit = 100000
rate_burst = 100000
domain_rate_limit = 100000
domain_rate_burst = 100000

[database]
%[6]s

[policy]
local_domains = [%[3]q]

[[policy.visibility]]
principals = [%[3]q]
endpoints = ["*"]

[[endpoint]]
jid = %[4]q
runtime = "builtin"

[[policy.invoke]]
principals = ["bob@%[3]s"]
endpoints = [%[4]q]
tools = ["*"]
%[5]s`, harness.RemoteComponentDomain, suite.env.EjabberdComponentAddr, harness.RemoteDomain, ejabberdDemo, extra, ownStoreKey(t))
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := startGatewayWith(ctx, config)
	if err != nil {
		t.Fatalf("gateway on ejabberd: %v", err)
	}
	t.Cleanup(g.stop)
	return g
}

// TestGatewayOnEjabberd: the same binary serves as ejabberd's component
// (ejabberd_service) as it does as Prosody's: bob, ejabberd's own user,
// finds the gateway among the server's items, lists and searches its
// directory, reads an endpoint's vCard, pings it and calls a tool, while
// the suite's gateway keeps serving on Prosody.
func TestGatewayOnEjabberd(t *testing.T) {
	need(t)
	startEjabberdGateway(t, "on-ejabberd", "")
	bob := login(t, "bob", harness.RemoteDomain)

	_, raw := iq(t, bob, "get", harness.RemoteDomain, discoItems)
	if !strings.Contains(raw, `jid='`+harness.RemoteComponentDomain+`'`) {
		t.Errorf("ejabberd's items do not list the gateway: %s", raw)
	}
	_, raw = iq(t, bob, "get", harness.RemoteComponentDomain, discoInfo)
	for _, want := range []string{`category='automation'`, `type='agent-gateway'`, `var='jabber:iq:search'`} {
		if !strings.Contains(raw, want) {
			t.Errorf("gateway disco#info lacks %s: %s", want, raw)
		}
	}
	_, raw = iq(t, bob, "get", harness.RemoteComponentDomain, discoItems)
	if !strings.Contains(raw, `jid='`+ejabberdDemo+`'`) || !strings.Contains(raw, "<count>1</count>") {
		t.Errorf("directory: %s", raw)
	}
	_, raw = iq(t, bob, "set", harness.RemoteComponentDomain, searchForm("DEMO"))
	if !strings.Contains(raw, "<value>"+ejabberdDemo+"</value>") || !strings.Contains(raw, "<count>1</count>") {
		t.Errorf("search: %s", raw)
	}
	_, raw = iq(t, bob, "get", ejabberdDemo, vcardTemp)
	if !strings.Contains(raw, "<NICKNAME>agentgw-demo</NICKNAME>") {
		t.Errorf("vcard-temp: %s", raw)
	}
	_, raw = iq(t, bob, "get", ejabberdDemo, `<ping xmlns='urn:xmpp:ping'/>`)
	if !strings.Contains(raw, `type='result'`) {
		t.Errorf("ping: %s", raw)
	}

	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "bob", harness.RemoteDomain, "call", ejabberdDemo, "echo", `{"text":"hello from ejabberd's own component"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	for _, want := range []string{"accepted: task task-", "[2] completed", "  hello from ejabberd's own component\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("call output lacks %q:\n%s", want, out)
		}
	}

	// The gateway on Prosody was not disturbed.
	alice := login(t, "alice", harness.HomeDomain)
	if _, raw := iq(t, alice, "get", harness.ComponentDomain, discoInfo); !strings.Contains(raw, `type='agent-gateway'`) {
		t.Errorf("the suite's gateway: %s", raw)
	}
}
