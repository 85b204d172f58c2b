package gateway_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"agentgw/adhoc"
	"agentgw/gateway"
	"agentgw/internal/xsdtest"
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
	norm := func(el wire.Element) string {
		el.Start.Attr = nil
		return marshal(t, el)
	}
	list := `<query xmlns='http://jabber.org/protocol/disco#items' node='http://jabber.org/protocol/commands'/>`
	missing := te.taskIQ(alice, "nobody@"+domain, "get", list)
	golden(t, "adhoc-not-found", norm(missing))
	exec := func(node string) string {
		return fmt.Sprintf(`<command xmlns='http://jabber.org/protocol/commands' node='%s' action='execute'/>`, node)
	}
	for name, el := range map[string]wire.Element{
		"list, ungranted (mallory)": te.taskIQ(mall, demoJID, "get", list),
		"list, hidden (carol)":      te.taskIQ(carol, demoJID, "get", list),
		"list, no runtime (a001)":   te.taskIQ(alice, "a001@"+domain, "get", list),
		"node, ungranted":           te.taskIQ(mall, demoJID, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='echo'/>`),
		"node, missing tool":        te.taskIQ(alice, demoJID, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='nope'/>`),
		"execute, ungranted":        te.taskIQ(mall, demoJID, "set", exec("echo")),
		"execute, ungranted remote": te.taskIQ(carol, demoJID, "set", exec("echo")),
		"execute, missing endpoint": te.taskIQ(alice, "nobody@"+domain, "set", exec("echo")),
		"execute, missing tool":     te.taskIQ(alice, demoJID, "set", exec("nope")),
		"execute, no runtime":       te.taskIQ(alice, "a001@"+domain, "set", exec("echo")),
	} {
		if norm(el) != norm(missing) {
			t.Errorf("%s: %s", name, marshal(t, el))
		}
	}
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
	var mid adhoc.Command
	for i := 0; i < 200 && !strings.Contains(noteText(mid), "50%"); i++ {
		_, mid = te.command(alice, demoJID, "count", "next", c.SessionID, "")
	}
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
	var canceled adhoc.Command
	_, canceled = te.command(alice, demoJID, "count", "cancel", c2.SessionID, "")
	for i := 0; i < 200 && canceled.Status != adhoc.StatusCanceled; i++ {
		_, canceled = te.command(alice, demoJID, "count", "next", c2.SessionID, "")
	}
	if canceled.Status != adhoc.StatusCanceled {
		t.Fatalf("cancel: %+v", canceled)
	}

	// The first count finishes.
	step2 <- time.Time{}
	var fin adhoc.Command
	for i := 0; i < 200 && fin.Status != adhoc.StatusCompleted; i++ {
		_, fin = te.command(alice, demoJID, "count", "next", c.SessionID, "")
	}
	if fin.Status != adhoc.StatusCompleted || fin.Form == nil || fin.Form.Fields[0].Var != "counted" || fin.Form.Fields[0].Values[0] != "2" {
		t.Fatalf("completed: %+v", fin)
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
