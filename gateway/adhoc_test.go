package gateway_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"agentgw/adhoc"
	"agentgw/db"
	"agentgw/gateway"
	"agentgw/internal/xsdtest"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/wire"
)

// sessionIDs matches the sessionids the gateway assigns; goldens
// normalize them.
var sessionIDs = regexp.MustCompile(`ah[0-9a-f]{32}~`)

func normalizeCommand(s string) string {
	return normalize(sessionIDs.ReplaceAllString(s, "ah00000000000000000000000000000000~"))
}

// command sends a <command/> and returns the answer and its parsed
// payload (zero on an error answer), checking every command payload
// against the XEP-0050 and XEP-0004 schemas.
func (te *taskEnv) command(from, to, node, action, sessionID, form string) (wire.Element, adhoc.Command) {
	te.t.Helper()
	attrs := fmt.Sprintf(`node='%s'`, node)
	if action != "" {
		attrs += fmt.Sprintf(` action='%s'`, action)
	}
	if sessionID != "" {
		attrs += fmt.Sprintf(` sessionid='%s'`, sessionID)
	}
	iq := te.taskIQ(from, to, "set", fmt.Sprintf(`<command xmlns='http://jabber.org/protocol/commands' %s>%s</command>`, attrs, form))
	if typ, _ := iq.AttrValue("type"); typ != "result" {
		return iq, adhoc.Command{}
	}
	p := iq.Children()[0]
	commandXSD(te.t, marshal(te.t, p))
	c, err := adhoc.ParseCommand(p)
	if err != nil {
		te.t.Fatalf("parse %s: %v", marshal(te.t, p), err)
	}
	if len(marshal(te.t, p)) > adhoc.MaxResponseBytes {
		te.t.Errorf("response of %d bytes", len(marshal(te.t, p)))
	}
	return iq, c
}

func commandXSD(t *testing.T, doc string) {
	t.Helper()
	xsdtest.Check(t, filepath.Join("..", "adhoc", "testdata", "commands.xsd"), doc)
}

func submit(fields ...string) string {
	var b strings.Builder
	b.WriteString(`<x xmlns='jabber:x:data' type='submit'>`)
	for i := 0; i+1 < len(fields); i += 2 {
		fmt.Fprintf(&b, `<field var='%s'><value>%s</value></field>`, fields[i], fields[i+1])
	}
	b.WriteString(`</x>`)
	return b.String()
}

// stripID drops a stanza's id attribute, for comparing answers.
func stripID(s string) string { return stanzaID.ReplaceAllString(s, "") }

var stanzaID = regexp.MustCompile(` id='[^']*'`)

func noteText(c adhoc.Command) string {
	var out []string
	for _, n := range c.Notes {
		out = append(out, n.Type+": "+n.Text)
	}
	return strings.Join(out, "\n")
}

// TestCommandsList: the demo endpoint offers its three tools as commands
// to a requester granted them, and advertises the feature only there.
func TestCommandsList(t *testing.T) {
	te := startTasks(t)
	items := te.taskIQ(alice, demoJID, "get", `<query xmlns='http://jabber.org/protocol/disco#items' node='http://jabber.org/protocol/commands'/>`)
	golden(t, "adhoc-commands", marshal(t, items))
	info := marshal(t, te.taskIQ(alice, demoJID, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`))
	if !strings.Contains(info, "var='"+adhoc.NS+"'") {
		t.Errorf("the demo endpoint does not advertise commands: %s", info)
	}
	golden(t, "adhoc-command-info", marshal(t, te.taskIQ(alice, demoJID, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='count'/>`)))
	// The endpoint's info is cached per version (infocache.go), but the
	// commands feature is the requester's: one who may see the endpoint but
	// run none of its commands is not offered it, before or after.
	const infoQuery = `<query xmlns='http://jabber.org/protocol/disco#info'/>`
	pm, err := policy.ParsePrincipal("mallory@remote.example")
	if err != nil {
		t.Fatal(err)
	}
	pol := *te.gw.Policy()
	pol.Visibility = append(slices.Clone(pol.Visibility), policy.Grant{Principals: []policy.Principal{pm}, Endpoints: []string{demoJID}})
	te.gw.SetPolicy(&pol)
	for i := range 2 {
		ungranted := marshal(t, te.taskIQ(mall, demoJID, "get", infoQuery))
		if !strings.Contains(ungranted, "type='result'") && !strings.Contains(ungranted, `type="result"`) {
			t.Fatalf("mallory cannot see the demo endpoint: %s", ungranted)
		}
		if strings.Contains(ungranted, "var='"+adhoc.NS+"'") {
			t.Errorf("pass %d: commands advertised to a requester who may run none: %s", i, ungranted)
		}
		if again := marshal(t, te.taskIQ(alice, demoJID, "get", infoQuery)); stripID(again) != stripID(info) {
			t.Errorf("pass %d: alice's info changed:\n%s\nwant\n%s", i, again, info)
		}
	}
}

// TestCommandsHidden: hidden, ungranted and nonexistent endpoints and
// tools answer the same bytes, for the list, a node and execution.
func TestCommandsHidden(t *testing.T) {
	te := startTasks(t)
	register(t, te.store, "a001", "Agent One", true) // granted, but no runtime
	list := `<query xmlns='http://jabber.org/protocol/disco#items' node='http://jabber.org/protocol/commands'/>`
	missing := te.taskIQ(alice, "nobody@"+domain, "get", list)
	golden(t, "adhoc-not-found", stripAll(t, missing))
	// Each answer must be the missing endpoint's, from the JID asked.
	want := func(from string) string {
		return strings.ReplaceAll(normAnswer(t, missing), "'nobody@"+domain+"'", "'"+from+"'")
	}
	for name, c := range map[string]struct {
		from string
		el   wire.Element
	}{
		"list, ungranted (mallory)": {demoJID, te.taskIQ(mall, demoJID, "get", list)},
		"list, hidden (carol)":      {demoJID, te.taskIQ(carol, demoJID, "get", list)},
		"list, no runtime (a001)":   {"a001@" + domain, te.taskIQ(alice, "a001@"+domain, "get", list)},
		"node, ungranted":           {demoJID, te.taskIQ(mall, demoJID, "get", nodeInfo("echo"))},
		"node, missing tool":        {demoJID, te.taskIQ(alice, demoJID, "get", nodeInfo("nope"))},
		"execute, ungranted":        {demoJID, te.taskIQ(mall, demoJID, "set", execCommand("echo", ""))},
		"execute, ungranted remote": {demoJID, te.taskIQ(carol, demoJID, "set", execCommand("echo", ""))},
		"execute, missing endpoint": {"nobody@" + domain, te.taskIQ(alice, "nobody@"+domain, "set", execCommand("echo", ""))},
		"execute, missing tool":     {demoJID, te.taskIQ(alice, demoJID, "set", execCommand("nope", ""))},
		"execute, no runtime":       {"a001@" + domain, te.taskIQ(alice, "a001@"+domain, "set", execCommand("echo", ""))},
	} {
		if got := normAnswer(t, c.el); got != want(c.from) {
			t.Errorf("%s: %s\nwant %s", name, got, want(c.from))
		}
	}
	t.Run("approval", commandsHiddenApproval)
	info := marshal(t, te.taskIQ(alice, "a001@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`))
	if strings.Contains(info, adhoc.NS) {
		t.Errorf("an endpoint without a runtime advertises commands: %s", info)
	}
}

// TestCommandEcho: execute, the generated form, submission, completion
// with a result form and the text as a note; a replayed submission is the
// same task.
func TestCommandEcho(t *testing.T) {
	longWait(t)
	te := startTasks(t)
	iq, c := te.command(alice, demoJID, "echo", "execute", "", "")
	golden(t, "adhoc-echo-form", normalizeCommand(marshal(t, iq)))
	if c.Status != adhoc.StatusExecuting || c.Form == nil || c.SessionID == "" {
		t.Fatalf("first stage: %+v", c)
	}
	iq, done := te.command(alice, demoJID, "echo", "complete", c.SessionID, submit("text", "hello"))
	golden(t, "adhoc-echo-completed", normalizeCommand(marshal(t, iq)))
	if done.Status != adhoc.StatusCompleted || done.Form == nil || done.Form.Fields[0].Values[0] != "hello" || !strings.Contains(noteText(done), "info: hello") {
		t.Fatalf("completed: %+v", done)
	}
	// The session is a durable task: asking again shows the same result.
	_, again := te.command(alice, demoJID, "echo", "next", c.SessionID, "")
	if again.Status != adhoc.StatusCompleted || again.Form.Fields[0].Values[0] != "hello" {
		t.Errorf("refresh after completion: %+v", again)
	}
	// Nor is it a session of another command.
	if el, _ := te.command(alice, demoJID, "count", "next", c.SessionID, ""); !strings.Contains(marshal(t, el), "bad-request") {
		t.Errorf("echo's session at count: %s", marshal(t, el))
	}
	// A sessionid the gateway did not make is refused.
	if el, _ := te.command(alice, demoJID, "echo", "next", "made-up-session-0123456789", ""); !strings.Contains(marshal(t, el), "bad-request") {
		t.Errorf("made-up session: %s", marshal(t, el))
	}
	// Another account cannot see it.
	el, _ := te.command("bob@home.example/x", demoJID, "echo", "next", c.SessionID, "")
	if got := marshal(t, el); strings.Contains(got, "hello") {
		t.Errorf("another caller saw the session: %s", got)
	}
}

// TestCommandInvalidForm: a value that the schema refuses gives the form
// back with a note naming the field; nothing is admitted.
func TestCommandInvalidForm(t *testing.T) {
	te := startTasks(t)
	_, c := te.command(alice, demoJID, "count", "execute", "", "")
	iq, bad := te.command(alice, demoJID, "count", "complete", c.SessionID, submit("to", "many"))
	golden(t, "adhoc-invalid-form", normalizeCommand(marshal(t, iq)))
	if bad.Status != adhoc.StatusExecuting || bad.Form == nil || !strings.Contains(noteText(bad), `"to"`) {
		t.Fatalf("invalid: %+v", bad)
	}
	_, bad = te.command(alice, demoJID, "count", "complete", c.SessionID, submit("to", "5000"))
	if !strings.Contains(noteText(bad), `"to"`) || !strings.Contains(noteText(bad), "maximum") {
		t.Fatalf("out of range: %s", noteText(bad))
	}
	if n := te.svc.Active(); n != 0 {
		t.Errorf("%d tasks admitted by invalid forms", n)
	}
}

// TestCommandCountRefreshAndCancel: a task that does not settle within the
// wait is executing with a progress note; next refreshes it until it
// completes; cancel reports canceled once the task has settled so.
func TestCommandCountRefreshAndCancel(t *testing.T) {
	gateway.SetCommandWait(50 * time.Millisecond)
	t.Cleanup(func() { gateway.SetCommandWait(0) })
	te := startTasks(t)
	_, c := te.command(alice, demoJID, "count", "execute", "", "")
	_, run := te.command(alice, demoJID, "count", "complete", c.SessionID, submit("to", "2", "interval_ms", "10"))
	// Accepted until the dispatch has committed running.
	if run.Status != adhoc.StatusExecuting || run.Actions == nil || !run.Actions.Next || !regexp.MustCompile(`task is (accepted|running)`).MatchString(noteText(run)) {
		t.Fatalf("running: %+v", run)
	}
	(<-te.steps) <- time.Time{}
	step2 := <-te.steps // the second step waits: progress 50% is committed
	mid := te.refreshUntil(c.SessionID, func(r adhoc.Command) bool { return strings.Contains(noteText(r), "50%") })
	if !strings.Contains(noteText(mid), "50% done") || !strings.Contains(noteText(mid), "Counted 1 of 2.") {
		t.Fatalf("progress: %s", noteText(mid))
	}
	golden(t, "adhoc-count-executing", normalizeCommand(marshal(t, commandOf(t, mid))))

	// A second count is canceled mid-way.
	_, c2 := te.command(alice, demoJID, "count", "execute", "", "")
	_, run2 := te.command(alice, demoJID, "count", "complete", c2.SessionID, submit("to", "100", "interval_ms", "10"))
	if run2.Status != adhoc.StatusExecuting {
		t.Fatalf("second count: %+v", run2)
	}
	// The builtin honours cancellation while waiting for its next step.
	_, canceled := te.command(alice, demoJID, "count", "cancel", c2.SessionID, "")
	if canceled.Status != adhoc.StatusCanceled {
		canceled = te.refreshUntil(c2.SessionID, func(r adhoc.Command) bool { return r.Status == adhoc.StatusCanceled })
	}
	if canceled.Status != adhoc.StatusCanceled {
		t.Fatalf("cancel: %+v", canceled)
	}

	// The first count finishes.
	step2 <- time.Time{}
	fin := te.refreshUntil(c.SessionID, func(r adhoc.Command) bool { return r.Status == adhoc.StatusCompleted })
	if fin.Status != adhoc.StatusCompleted || fin.Form == nil || fin.Form.Fields[0].Var != "counted" || fin.Form.Fields[0].Values[0] != "2" {
		t.Fatalf("completed: %+v", fin)
	}
}

// refreshBound bounds how long refreshUntil refreshes. It is far beyond
// what any step takes even on a loaded machine, and is reached only when
// the awaited state never comes, so the test fails on that state, not on
// the machine's speed.
const refreshBound = 20 * time.Second

// refreshUntil refreshes the count session with next until done holds
// of the response, or refreshBound has passed, and returns the last
// response for the caller to check. Each of the task's steps is a durable
// commit (an fsync), so how many refreshes it takes to see one depends on
// the disk: the bound is a time, not a number of refreshes.
func (te *taskEnv) refreshUntil(sessionID string, done func(adhoc.Command) bool) adhoc.Command {
	te.t.Helper()
	deadline := time.Now().Add(refreshBound)
	for {
		_, c := te.command(alice, demoJID, "count", "next", sessionID, "")
		if done(c) || time.Now().After(deadline) {
			return c
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// longWait lets a response wait as long as its task needs to settle,
// however loaded the machine: the wait ends as soon as the task settles,
// so the test does not depend on how long that takes.
func longWait(t *testing.T) {
	gateway.SetCommandWait(time.Minute)
	t.Cleanup(func() { gateway.SetCommandWait(0) })
}

func commandOf(t *testing.T, c adhoc.Command) wire.Element {
	return parseWire(t, c.TokenReader())
}

// TestCommandAsk: ask's question becomes a second stage, whose form is the
// input request's schema; submitting it provides the input.
func TestCommandAsk(t *testing.T) {
	longWait(t)
	te := startTasks(t)
	_, c := te.command(alice, demoJID, "ask", "execute", "", "")
	iq, stage := te.command(alice, demoJID, "ask", "complete", c.SessionID, submit("question", "Colour?"))
	golden(t, "adhoc-ask-input", normalizeCommand(marshal(t, iq)))
	if stage.Status != adhoc.StatusExecuting || stage.Form == nil || len(stage.Form.Instructions) == 0 || stage.Form.Instructions[0] != "Colour?" {
		t.Fatalf("second stage: %+v", stage)
	}
	_, bad := te.command(alice, demoJID, "ask", "complete", c.SessionID, submit("other", "x"))
	if !strings.Contains(noteText(bad), `"answer" is required`) {
		t.Errorf("empty answer: %s", noteText(bad))
	}
	_, done := te.command(alice, demoJID, "ask", "complete", c.SessionID, submit("answer", "blue"))
	if done.Status != adhoc.StatusCompleted || done.Form == nil || done.Form.Fields[0].Values[0] != "blue" {
		t.Fatalf("answered: %+v", done)
	}
}

// TestCommandHugeSubmission: a refused form shows the submitted values
// again only while they fit: the response stays within one stanza.
func TestCommandHugeSubmission(t *testing.T) {
	longWait(t)
	te := startTasks(t)
	_, c := te.command(alice, demoJID, "echo", "execute", "", "")
	big := strings.Repeat("x", 300<<10)
	iq, bad := te.command(alice, demoJID, "echo", "complete", c.SessionID, submit("text", big))
	if bad.Status != adhoc.StatusExecuting || !strings.Contains(noteText(bad), "maxLength") {
		t.Fatalf("huge text: %s", noteText(bad))
	}
	if n := len(marshal(t, iq)); n > adhoc.MaxResponseBytes {
		t.Errorf("response of %d bytes", n)
	}
}

// stripAll drops all of an IQ's attributes (the golden's form).
func stripAll(t *testing.T, el wire.Element) string {
	el.Start.Attr = nil
	return marshal(t, el)
}

// normAnswer masks only an IQ's id and to, which differ with the
// request; from and type stay, so that an answer from the wrong JID or
// of the wrong type does not compare equal.
func normAnswer(t *testing.T, el wire.Element) string {
	el.Start.Attr = slices.Clone(el.Start.Attr)
	for i, a := range el.Start.Attr {
		if a.Name.Space == "" && (a.Name.Local == "id" || a.Name.Local == "to") {
			el.Start.Attr[i].Value = "*"
		}
	}
	return marshal(t, el)
}

func nodeInfo(node string) string {
	return fmt.Sprintf(`<query xmlns='http://jabber.org/protocol/disco#info' node='%s'/>`, node)
}

func execCommand(node, sessionID string) string {
	if sessionID != "" {
		sessionID = fmt.Sprintf(` sessionid='%s'`, sessionID)
	}
	return fmt.Sprintf(`<command xmlns='http://jabber.org/protocol/commands' node='%s' action='execute'%s/>`, node, sessionID)
}

// commandsHiddenApproval: an approvalRequired tool, for a caller with an
// invoke grant but no approve grant, and a tool of a version never
// activated, named by a client-written sessionid, answer as a command
// that does not exist; with an approve grant the command is listed and
// runs.
func commandsHiddenApproval(t *testing.T) {
	// mallory may invoke only ask (approvalRequired); alice, through
	// home.example, every tool.
	const pol = hostilePolicy + `
[[policy.visibility]]
principals = ["mallory@remote.example"]
endpoints = ["hostile@agents.example"]
[[policy.invoke]]
principals = ["mallory@remote.example"]
endpoints = ["hostile@agents.example"]
tools = ["ask"]
`
	e, man := startHostile(t, pol)
	// Version 2.0, registered but never activated, has a tool "secret".
	next, err := manifest.Parse([]byte(strings.Replace(strings.Replace(hostileManifest, `"version":"1.0"`, `"version":"2.0"`, 1),
		`"tools":[`, `"tools":[{"name":"secret","inputSchema":{"type":"object","properties":{"key":{"type":"string"}}}},`, 1)), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RegisterVersion(context.Background(), db.Version{JID: next.JID, Version: next.Version, Hash: next.Hash, Canonical: next.Canonical, Name: next.Name}, "admin"); err != nil {
		t.Fatal(err)
	}
	if man.Version == next.Version {
		t.Fatalf("versions %s", man.Version)
	}
	list := `<query xmlns='http://jabber.org/protocol/disco#items' node='http://jabber.org/protocol/commands'/>`
	missing := normAnswer(t, e.srv.iq(alice, hostileJID, "set", execCommand("nosuch", "")))
	if !strings.Contains(missing, "item-not-found") {
		t.Fatalf("missing command: %s", missing)
	}
	missingNode := normAnswer(t, e.srv.iq(alice, hostileJID, "get", nodeInfo("nosuch")))
	nonce := "ah" + strings.Repeat("0", 32) + "~"
	for name, c := range map[string]struct {
		got, want string
	}{
		"node, unapproved":              {normAnswer(t, e.srv.iq(alice, hostileJID, "get", nodeInfo("ask"))), missingNode},
		"execute, unapproved":           {normAnswer(t, e.srv.iq(alice, hostileJID, "set", execCommand("ask", ""))), missing},
		"execute, unapproved session":   {normAnswer(t, e.srv.iq(alice, hostileJID, "set", execCommand("ask", nonce+man.Version))), missing},
		"execute, unactivated version":  {normAnswer(t, e.srv.iq(alice, hostileJID, "set", execCommand("secret", nonce+next.Version))), missing},
		"execute, unactivated, pinless": {normAnswer(t, e.srv.iq(alice, hostileJID, "set", execCommand("echo", nonce+next.Version))), missing},
		"execute, only unapproved":      {normAnswer(t, e.srv.iq(mall, hostileJID, "set", execCommand("ask", ""))), strings.ReplaceAll(missing, alice, mall)},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s\nwant %s", name, c.got, c.want)
		}
	}
	items := marshal(t, e.srv.iq(alice, hostileJID, "get", list))
	if !strings.Contains(items, "node='echo'") && !strings.Contains(items, `node="echo"`) {
		t.Errorf("echo not listed: %s", items)
	}
	if strings.Contains(items, "'ask'") || strings.Contains(items, `"ask"`) {
		t.Errorf("unapproved ask listed: %s", items)
	}
	missingList := normAnswer(t, e.srv.iq(mall, "nobody@"+domain, "get", list))
	if got := normAnswer(t, e.srv.iq(mall, hostileJID, "get", list)); got != strings.ReplaceAll(missingList, "nobody@"+domain, hostileJID) {
		t.Errorf("list, only unapproved: %s\nwant %s", got, missingList)
	}
	info := marshal(t, e.srv.iq(mall, hostileJID, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`))
	if !strings.Contains(info, "result") || strings.Contains(info, adhoc.NS) {
		t.Errorf("commands advertised to a caller who may run none: %s", info)
	}

	// With an approve grant, ask is listed and runs.
	e2, _ := startHostile(t, pol+`
[[policy.approve]]
principals = ["alice@home.example"]
endpoints = ["hostile@agents.example"]
tools = ["ask"]
`)
	if items := marshal(t, e2.srv.iq(alice, hostileJID, "get", list)); !strings.Contains(items, "'ask'") && !strings.Contains(items, `"ask"`) {
		t.Errorf("approved ask not listed: %s", items)
	}
	if got := marshal(t, e2.srv.iq(alice, hostileJID, "get", nodeInfo("ask"))); !strings.Contains(got, "result") {
		t.Errorf("approved ask node: %s", got)
	}
	first := e2.srv.iq(alice, hostileJID, "set", execCommand("ask", ""))
	if typ, _ := first.AttrValue("type"); typ != "result" {
		t.Fatalf("approved ask: %s", marshal(t, first))
	}
	c, err := adhoc.ParseCommand(first.Children()[0])
	if err != nil || c.Form == nil || c.SessionID == "" {
		t.Fatalf("approved ask first stage: %+v, %v", c, err)
	}
	done := e2.srv.iq(alice, hostileJID, "set", fmt.Sprintf(`<command xmlns='http://jabber.org/protocol/commands' node='ask' action='complete' sessionid='%s'>%s</command>`, c.SessionID, submit()))
	if typ, _ := done.AttrValue("type"); typ != "result" {
		t.Fatalf("approved ask submission: %s", marshal(t, done))
	}
	if _, err := adhoc.ParseCommand(done.Children()[0]); err != nil {
		t.Fatal(err)
	}
	// Once another version is active, the session still reaches the
	// version its task pinned; a fresh nonce at that version does not.
	ctx := context.Background()
	if _, err := e2.store.RegisterVersion(ctx, db.Version{JID: next.JID, Version: next.Version, Hash: next.Hash, Canonical: next.Canonical, Name: next.Name}, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := e2.store.Activate(ctx, next.JID, next.Version, &next.Hash); err != nil {
		t.Fatal(err)
	}
	if got := marshal(t, e2.srv.iq(alice, hostileJID, "set", execCommand("ask", c.SessionID))); !strings.Contains(got, "type='result'") {
		t.Errorf("pinned session after activation: %s", got)
	}
	stale := normAnswer(t, e2.srv.iq(alice, hostileJID, "set", execCommand("ask", nonce+man.Version)))
	if want := normAnswer(t, e2.srv.iq(alice, hostileJID, "set", execCommand("nosuch", ""))); stale != want {
		t.Errorf("unpinned old version: %s\nwant %s", stale, want)
	}
}
