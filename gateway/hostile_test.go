package gateway_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"agentgw/db"
	"agentgw/internal/testclock"
	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/task"
	"agentgw/taskd"
	"agentgw/wire"
)

const hostileJID = "hostile@" + domain

// regexpID matches an id attribute.
var regexpID = regexp.MustCompile(`id='[^']*'`)

// hostileManifest has one tool, the builtin echo, whose input schema is
// cheap to register but can be made expensive to validate: "a" tries two
// branches at every level of array nesting, and "ids" is under
// uniqueItems. A second tool declares approvalRequired.
const hostileManifest = `{"manifestSpecVersion":"0","agent":{"jid":"hostile@agents.example","name":"hostile","version":"1.0"},"tools":[
{"name":"echo","inputSchema":{"type":"object","$defs":{"n":{"anyOf":[{"type":"array","items":{"$ref":"#/$defs/n"}},{"type":"array","items":{"$ref":"#/$defs/n"},"minItems":2}]}},
 "properties":{"text":{"type":"string"},"a":{"$ref":"#/$defs/n"},"ids":{"type":"array","uniqueItems":true}}}},
{"name":"ask","inputSchema":{"type":"object"},"urn:xmpp:agent-api:0":{"approvalRequired":true}}]}`

// startHostile is a gateway with the task service, serving hostileManifest
// through the builtin runtime, under the given policy.
func startHostile(t *testing.T, policy string) (*env, *manifest.Manifest) {
	t.Helper()
	srv := newFakeServer(t)
	cfg := testConfig(t, srv.ln.Addr().String(), policy)
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	man, err := manifest.Parse([]byte(hostileManifest), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := db.Version{JID: man.JID, Version: man.Version, Hash: man.Hash, Canonical: man.Canonical, Name: man.Name}
	if _, err := store.RegisterVersion(ctx, v, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := store.Activate(ctx, man.JID, man.Version, &man.Hash); err != nil {
		t.Fatal(err)
	}
	gw := newGateway(cfg, store)
	svc, err := taskd.New(store, taskd.Options{
		Limits:       taskd.Limits{Retention: cfg.Tasks.Retention},
		Runtimes:     map[string]runtime.Runtime{hostileJID: builtin.New(builtin.Options{})},
		Notify:       gw.SendEvent,
		Availability: gw.Availability(),
		Clock:        testclock.New(taskT0),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	gw.AttachTasks(svc)
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := runGateway(t, ctx, gw)
	srv.accept()
	waitUp(t, gw)
	return &env{t: t, srv: srv, gw: gw, store: store, cfg: cfg, done: done}, man
}

// invokeXML is an <invoke/> of a hostileManifest tool.
func invokeXML(t *testing.T, man *manifest.Manifest, requestID, tool, args string) string {
	inv := task.Invoke{RequestID: requestID, Tool: tool, APIVersion: man.Version, ManifestHash: man.Hash, Arguments: args}
	return marshal(t, parseWire(t, inv.TokenReader()))
}

// answers writes every IQ before reading any answer, then returns the
// answers by id, skipping messages.
func answers(e *env, from string, iqs map[string][3]string) map[string]wire.Element {
	e.t.Helper()
	var b strings.Builder
	for id, iq := range iqs {
		fmt.Fprintf(&b, `<iq xmlns='jabber:component:accept' type='%s' id='%s' from='%s' to='%s'>%s</iq>`, iq[0], id, from, iq[1], iq[2])
	}
	e.srv.write(b.String())
	got := make(map[string]wire.Element)
	for len(got) < len(iqs) {
		el := e.srv.next()
		if el.Start.Name.Local != "iq" {
			continue
		}
		if id, _ := el.AttrValue("id"); iqs[id] != [3]string{} {
			got[id] = el
		}
	}
	return got
}

const hostilePolicy = `
[[policy.invoke]]
principals = ["home.example"]
endpoints = ["*"]
tools = ["*"]
`

// TestValidationBudgetAnswersResourceConstraint: arguments whose
// validation would exceed the budget, and an array under uniqueItems past
// its bound, get <resource-constraint/> with nothing reflected, while a
// disco#info sent in the same burst is answered.
func TestValidationBudgetAnswersResourceConstraint(t *testing.T) {
	e, man := startHostile(t, hostilePolicy)
	deep := `{"a":` + strings.Repeat("[", 40) + "1" + strings.Repeat("]", 40) + `}`
	ids := make([]string, manifest.DefaultMaxUniqueItems+1)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	unique := `{"ids":[` + strings.Join(ids, ",") + `]}`
	iqs := map[string][3]string{}
	for i := range 8 {
		args := deep
		if i%2 == 1 {
			args = unique
		}
		iqs[fmt.Sprintf("h%d", i)] = [3]string{"set", hostileJID, invokeXML(t, man, fmt.Sprintf("req-hostile-0123456789abcde%02d", i), "echo", args)}
	}
	iqs["info"] = [3]string{"get", domain, `<query xmlns='http://jabber.org/protocol/disco#info'/>`}
	got := answers(e, alice, iqs)
	info := got["info"]
	if typ, _ := info.AttrValue("type"); typ != "result" {
		t.Fatalf("disco#info answer %s", marshal(t, info))
	}
	for id, el := range got {
		if id == "info" {
			continue
		}
		s := marshal(t, el)
		if typ, _ := el.AttrValue("type"); typ != "error" || !strings.Contains(s, "<resource-constraint") {
			t.Errorf("%s: %s, want resource-constraint", id, s)
		}
		if strings.Contains(s, "[[") || strings.Contains(s, "511") {
			t.Errorf("%s: the error reflects the arguments: %s", id, s)
		}
	}
	// A cheap call of the same tool still runs.
	ok := e.srv.iq(alice, hostileJID, "set", invokeXML(t, man, "req-hostile-0123456789abcdeok", "echo", `{"text":"fine","a":[[]],"ids":[1,2]}`))
	if typ, _ := ok.AttrValue("type"); typ != "result" {
		t.Fatalf("cheap call: %s", marshal(t, ok))
	}
}

// TestApprovalRequiredGateway: over the wire, a "*" invoke grant does not
// run an approvalRequired tool, and answers exactly as for a stranger; an
// approve grant does.
func TestApprovalRequiredGateway(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		want         string
	}{
		{"invoke grant only", hostilePolicy, "error"},
		{"approve grant", hostilePolicy + `
[[policy.approve]]
principals = ["alice@home.example"]
endpoints = ["hostile@agents.example"]
tools = ["ask"]
`, "result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, man := startHostile(t, tc.policy)
			inv := invokeXML(t, man, "req-approve-0123456789abcdef", "ask", `{"question":"ok?"}`)
			got := e.srv.iq(alice, hostileJID, "set", inv)
			if typ, _ := got.AttrValue("type"); typ != tc.want {
				t.Fatalf("%s, want type %s", marshal(t, got), tc.want)
			}
			if tc.want == "result" {
				return
			}
			stranger := e.srv.iq(mall, hostileJID, "set", inv)
			strip := func(el wire.Element) string {
				s := marshal(t, el)
				// Only the addressing differs.
				s = strings.ReplaceAll(s, alice, "X")
				s = strings.ReplaceAll(s, mall, "X")
				return regexpID.ReplaceAllString(s, "id='N'")
			}
			if a, b := strip(got), strip(stranger); a != b || !strings.Contains(a, "item-not-found") {
				t.Errorf("unapproved %s\nstranger   %s", a, b)
			}
		})
	}
}

// TestSchemaWorkLimits: manifests that cost little to send and seconds to
// compile (1,000 patterns of 5,000 instructions each; an anyOf chain over
// $refs that doubles at every level) are refused at registration with
// <resource-constraint/>, nothing reflected, and a disco#info sent in the
// same burst is answered.
func TestSchemaWorkLimits(t *testing.T) {
	e := startAPI(t)
	tool := func(schema string) string {
		return `{"manifestSpecVersion":"0","agent":{"jid":"w@agents.example","name":"w","version":"1"},"tools":[{"name":"t","inputSchema":` + schema + `}]}`
	}
	var props, defs []string
	for i := range 1000 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"string","pattern":"(?:[^a]{1000})(?:[^b]{1000})(?:[^c]{1000})(?:[^d]{1000})(?:[^e]{1000})"}`, i))
	}
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d40":{"type":"integer"}`)
	iqs := map[string][3]string{
		"patterns": {"set", domain, registerXML(tool(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`))},
		"chain":    {"set", domain, registerXML(tool(`{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"properties":{"x":{"$ref":"#/$defs/d0"}}}`))},
		"info":     {"get", domain, `<query xmlns='http://jabber.org/protocol/disco#info'/>`},
	}
	got := answers(e, admin, iqs)
	if typ, _ := got["info"].AttrValue("type"); typ != "result" {
		t.Errorf("disco#info: %s", marshal(t, got["info"]))
	}
	for _, name := range []string{"patterns", "chain"} {
		if c := condition(got[name]); c != "resource-constraint" {
			t.Errorf("%s: %s", name, c)
		}
		if s := marshalEl(t, got[name]); len(s) > 512 || strings.Contains(s, "[^a]") || strings.Contains(s, "$defs") {
			t.Errorf("%s: the answer reflects the request: %.200s", name, s)
		}
	}
}
