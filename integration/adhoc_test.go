package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentgw/adhoc"
	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/internal/xsdtest"
)

// adhocScript drives the gateway's ad-hoc commands with slixmpp's XEP-0050
// client workflow (start_command, continue_command, complete_command,
// cancel_command): an independent, stock client. It logs in (plaintext:
// loopback only), runs every scenario of the issue against the demo
// endpoint and the gateway, and prints what it saw as JSON.
const adhocScript = `
import asyncio, json, logging, sys
import slixmpp

host, port, jid, password, endpoint, gateway = sys.argv[1:7]
logging.basicConfig(level=logging.ERROR)

def form_of(iq):
    cmd = iq['command']
    if not cmd.xml.find('{jabber:x:data}x') is not None:
        return None
    f = cmd['form']
    return {'type': f['type'], 'title': f['title'], 'instructions': f['instructions'],
            'fields': {v: {'type': x['type'], 'values': x.get_value(convert=False)} for v, x in f.get_fields().items()},
            'items': [{k: v for k, v in it.items()} for it in f.get_items()],
            'fixed': [v.text for x in cmd.xml.iter('{jabber:x:data}field') if x.get('type') == 'fixed'
                      for v in x.iter('{jabber:x:data}value')]}

def view(iq):
    if iq['type'] == 'error':
        return {'error': iq['error']['condition']}
    cmd = iq['command']
    return {'xml': str(cmd), 'status': cmd['status'], 'sessionid': cmd['sessionid'],
            'actions': sorted(cmd['actions']) if cmd.xml.find('{http://jabber.org/protocol/commands}actions') is not None else [],
            'notes': [t + ': ' + n for t, n in cmd['notes']], 'form': form_of(iq)}

class Client(slixmpp.ClientXMPP):
    def __init__(self):
        super().__init__(jid, password)
        for p in ('xep_0030', 'xep_0004', 'xep_0050'):
            self.register_plugin(p)
        self['feature_mechanisms'].unencrypted_plain = True
        self.out = {'error': 'no session'}
        self.add_event_handler('session_start', self.start)
        self.add_event_handler('failed_auth', lambda e: self.finish({'error': 'auth failed'}))

    def finish(self, out):
        self.out = out
        self.disconnect()

    async def step(self, action, session, values=None):
        """One stage of the XEP-0050 workflow; values fills a submit form."""
        fut = asyncio.get_running_loop().create_future()
        def done(iq, sess):
            if not fut.done():
                fut.set_result(iq)
        session['next'] = done
        session['error'] = done
        if values is None:
            session['payload'] = None
        else:
            form = self['xep_0004'].make_form(ftype='submit')
            for k, v in values.items():
                form.add_field(var=k, value=v)
            session['payload'] = form
        if action == 'start':
            self['xep_0050'].start_command(session['jid'], session['node'], session)
        elif action == 'cancel':
            self['xep_0050'].cancel_command(session)
        elif action == 'complete':
            self['xep_0050'].complete_command(session)
        else:
            self['xep_0050'].continue_command(session, action)
        return view(await asyncio.wait_for(fut, 30))

    async def until(self, session, status, tries=120):
        seen = []
        for _ in range(tries):
            v = await self.step('next', session)
            seen.append(v)
            if v.get('status') == status or 'error' in v:
                break
            await asyncio.sleep(0.25)
        return seen

    async def start(self, event):
        try:
            out = {}
            info = await self['xep_0030'].get_info(jid=endpoint)
            out['features'] = sorted(info['disco_info']['features'])
            items = await self['xep_0050'].get_commands(endpoint)
            out['commands'] = [[i[1], i[2]] for i in items['disco_items']['items']]

            s = {'jid': endpoint, 'node': 'echo'}
            out['echo_form'] = await self.step('start', s)
            out['echo'] = await self.step('complete', s, {'text': 'hello from slixmpp'})
            if out['echo'].get('status') == 'executing':
                # Not settled within the gateway's wait (a loaded machine).
                out['echo'] = (await self.until(s, 'completed'))[-1]

            s = {'jid': endpoint, 'node': 'count'}
            await self.step('start', s)
            out['count_submit'] = await self.step('complete', s, {'to': '4', 'interval_ms': '1000'})
            out['count_refresh'] = await self.until(s, 'completed')

            s = {'jid': endpoint, 'node': 'ask'}
            await self.step('start', s)
            out['ask_stage'] = await self.step('complete', s, {'question': 'Which colour?'})
            for _ in range(120):
                if out['ask_stage'].get('form') or out['ask_stage'].get('status') != 'executing':
                    break
                await asyncio.sleep(0.25)
                out['ask_stage'] = await self.step('next', s)
            out['ask'] = await self.step('complete', s, {'answer': 'blue'})
            if out['ask'].get('status') == 'executing':
                out['ask'] = (await self.until(s, 'completed'))[-1]

            s = {'jid': endpoint, 'node': 'count'}
            await self.step('start', s)
            out['long_count'] = await self.step('complete', s, {'to': '100', 'interval_ms': '500'})
            out['cancel'] = await self.step('cancel', s)
            out['cancel_after'] = [] if out['cancel'].get('status') == 'canceled' else await self.until(s, 'canceled')

            s = {'jid': endpoint, 'node': 'count'}
            await self.step('start', s)
            out['invalid'] = await self.step('complete', s, {'to': 'many'})
            out['invalid_cancel'] = await self.step('cancel', s)

            s = {'jid': gateway, 'node': 'find-agents'}
            out['find_form'] = await self.step('start', s)
            out['find'] = await self.step('complete', s, {'query': 'demo'})
            s = {'jid': gateway, 'node': 'find-agents'}
            await self.step('start', s)
            out['find_table'] = await self.step('complete', s, {'query': 'demo', 'layout': 'table'})
            s = {'jid': gateway, 'node': 'find-agents'}
            await self.step('start', s)
            out['find_none'] = await self.step('complete', s, {'query': 'no such agent'})
            self.finish(out)
        except Exception as e:
            self.finish({'error': repr(e)})

c = Client()
c.connect((host, int(port)), force_starttls=False, disable_starttls=True)
c.loop.run_until_complete(c.disconnected)
print(json.dumps(c.out))
`

// adhocView is what the script reports for one response.
type adhocView struct {
	// XML is the <command/> as slixmpp received it.
	XML       string
	Error     string
	Status    string
	SessionID string
	Actions   []string
	Notes     []string
	Form      *struct {
		Type, Title  string
		Instructions string
		Fields       map[string]struct {
			Type   string
			Values any
		}
		Items []map[string]any
		Fixed []string
	}
}

func (v adhocView) notes() string { return strings.Join(v.Notes, "\n") }

// TestAdhocSlixmpp runs every tool of the demo endpoint from slixmpp's
// XEP-0050 client, as alice on Prosody and as bob on ejabberd over s2s,
// and uses "Find agents" at the gateway.
func TestAdhocSlixmpp(t *testing.T) {
	need(t)
	const python = "/usr/bin/python3" // slixmpp imports only there
	if err := exec.Command(python, "-c", "import slixmpp").Run(); err != nil {
		if requireServers() {
			t.Fatalf("slixmpp: %v", err)
		}
		t.Skipf("slixmpp is not installed (python3-slixmpp): %v", err)
	}
	withTaskEndpoints(t)
	script := filepath.Join(t.TempDir(), "adhoc.py")
	if err := os.WriteFile(script, []byte(adhocScript), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct{ local, domain, server string }{
		{"alice", harness.HomeDomain, suite.env.ProsodyC2S},
		{"bob", harness.RemoteDomain, suite.env.EjabberdC2S},
	} {
		t.Run(u.local+"@"+u.domain, func(t *testing.T) {
			host, port, _ := strings.Cut(u.server, ":")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, script, host, port, u.local+"@"+u.domain, password, demoEndpoint, harness.ComponentDomain)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, err := cmd.Output()
			if err != nil {
				t.Fatalf("slixmpp: %v\n%s\n%s", err, stdout, stderr.String())
			}
			checkAdhoc(t, stdout, stderr.String())
		})
	}
}

func checkAdhoc(t *testing.T, stdout []byte, stderr string) {
	t.Helper()
	var out struct {
		Error         string
		Features      []string
		Commands      [][]string
		EchoForm      adhocView `json:"echo_form"`
		Echo          adhocView
		CountSubmit   adhocView   `json:"count_submit"`
		CountRefresh  []adhocView `json:"count_refresh"`
		AskStage      adhocView   `json:"ask_stage"`
		Ask           adhocView
		LongCount     adhocView `json:"long_count"`
		Cancel        adhocView
		CancelAfter   []adhocView `json:"cancel_after"`
		Invalid       adhocView
		InvalidCancel adhocView `json:"invalid_cancel"`
		FindForm      adhocView `json:"find_form"`
		FindTable     adhocView `json:"find_table"`
		FindNone      adhocView `json:"find_none"`
		Find          adhocView
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("slixmpp output %q: %v\n%s", stdout, err, stderr)
	}
	if out.Error != "" {
		t.Fatalf("slixmpp: %s\n%s\ngateway log:\n%s", out.Error, stderr, tail(suite.gateway.logText(), 30))
	}
	t.Logf("slixmpp saw commands %v", out.Commands)
	// Every response, as received, is a valid XEP-0050 command whose form
	// is a valid XEP-0004 form.
	all := append([]adhocView{out.EchoForm, out.Echo, out.CountSubmit, out.AskStage, out.Ask, out.LongCount, out.Cancel,
		out.Invalid, out.InvalidCancel, out.FindForm, out.Find}, append(out.CountRefresh, out.CancelAfter...)...)
	for _, v := range all {
		if v.XML == "" {
			t.Errorf("a response without a command: %+v", v)
			continue
		}
		xsdtest.Check(t, filepath.Join("..", "adhoc", "testdata", "commands.xsd"), v.XML)
	}
	if !slices.Contains(out.Features, adhoc.NS) {
		t.Errorf("endpoint features: %v", out.Features)
	}
	// slixmpp keeps disco items in a set: compare them sorted.
	var got []string
	for _, c := range out.Commands {
		got = append(got, strings.Join(c, "/"))
	}
	slices.Sort(got)
	if want := []string{"ask/Ask (demo)", "count/Count (demo)", "echo/Echo (demo)"}; !slices.Equal(got, want) {
		t.Errorf("commands: %v, want %v", got, want)
	}
	if f := out.EchoForm.Form; out.EchoForm.Status != "executing" || f == nil || f.Type != "form" || f.Fields["text"].Type != "text-multi" {
		t.Errorf("echo form: %+v", out.EchoForm)
	}
	if out.Echo.Status != "completed" || out.Echo.Form == nil || !strings.Contains(out.Echo.notes(), "info: hello from slixmpp") {
		t.Errorf("echo: %+v", out.Echo)
	}
	if out.CountSubmit.Status != "executing" || !slices.Contains(out.CountSubmit.Actions, "next") {
		t.Errorf("count submitted: %+v", out.CountSubmit)
	}
	n := len(out.CountRefresh)
	if n == 0 || out.CountRefresh[n-1].Status != "completed" {
		t.Fatalf("count never completed: %+v", out.CountRefresh)
	}
	t.Logf("count: executing, then %d refreshes with next until completed; cancel answered %s after %d more", n, out.Cancel.Status, len(out.CancelAfter))
	last := out.CountRefresh[n-1]
	if last.Form == nil || !strings.Contains(last.notes(), "Counted to 4.") {
		t.Errorf("count result: %+v", last)
	}
	sawProgress := strings.Contains(out.CountSubmit.notes(), "% done")
	for _, v := range out.CountRefresh {
		sawProgress = sawProgress || strings.Contains(v.notes(), "% done")
	}
	if !sawProgress {
		t.Errorf("no progress note while counting: %+v", out.CountRefresh)
	}
	if f := out.AskStage.Form; out.AskStage.Status != "executing" || f == nil || f.Instructions != "Which colour?" {
		t.Errorf("ask stage: %+v", out.AskStage)
	}
	if out.Ask.Status != "completed" || out.Ask.Form == nil || !strings.Contains(out.Ask.notes(), "blue") {
		t.Errorf("ask: %+v", out.Ask)
	}
	if out.LongCount.Status != "executing" {
		t.Errorf("long count: %+v", out.LongCount)
	}
	canceled := out.Cancel
	if len(out.CancelAfter) > 0 {
		canceled = out.CancelAfter[len(out.CancelAfter)-1]
	}
	if canceled.Status != "canceled" {
		t.Errorf("cancel: %+v then %+v", out.Cancel, out.CancelAfter)
	}
	if out.Invalid.Status != "executing" || out.Invalid.Form == nil || !strings.Contains(out.Invalid.notes(), `error: The field "to"`) {
		t.Errorf("invalid form: %+v", out.Invalid)
	}
	if out.InvalidCancel.Status != "canceled" {
		t.Errorf("cancel at the form stage: %+v", out.InvalidCancel)
	}
	if out.FindForm.Form == nil || out.FindForm.Form.Fields["query"].Type != "text-single" {
		t.Errorf("find form: %+v", out.FindForm)
	}
	if f := out.FindForm.Form; f == nil || f.Fields["layout"].Type != "hidden" {
		t.Errorf("find form without the hidden layout field: %+v", out.FindForm)
	}
	// Find agents as a stock client gets it: a jid-multi field and a
	// fixed line per match, no table (docs/adhoc.md).
	if f := out.Find.Form; out.Find.Status != "completed" || f == nil || len(f.Items) != 0 ||
		f.Fields["jid"].Type != "jid-multi" || fmt.Sprint(f.Fields["jid"].Values) != "["+demoEndpoint+"]" ||
		len(f.Fixed) != 1 || !strings.HasSuffix(f.Fixed[0], "("+demoEndpoint+")") {
		t.Errorf("find agents: %+v\n%s", out.Find.Form, out.Find.XML)
	}
	// The table, for a client that asks for it.
	found := false
	if out.FindTable.Form != nil {
		for _, it := range out.FindTable.Form.Items {
			found = found || it["jid"] == demoEndpoint
		}
	}
	if out.FindTable.Status != "completed" || !found {
		t.Errorf("find agents as a table: %+v", out.FindTable)
	}
	if out.FindNone.Status != "completed" || out.FindNone.Form != nil || out.FindNone.notes() != "info: Nothing found." {
		t.Errorf("find agents, nothing found: %+v", out.FindNone)
	}
}

// TestAdhocSessionSurvivesRestart: a command session is its durable task.
// A count submitted before the gateway restarts is found again by its
// sessionid afterwards, settled as the restart left it (the builtin
// runtime cannot resume a task, so it failed, retryable), and the same
// submission again shows that task rather than starting another.
func TestAdhocSessionSurvivesRestart(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	send := func(c *c2s.Client, body string) adhoc.Command {
		t.Helper()
		el, raw := iq(t, c, "set", demoEndpoint, body)
		if typ, _ := el.AttrValue("type"); typ != "result" {
			t.Fatalf("command: %s", raw)
		}
		cmd, err := adhoc.ParseCommand(el.Children()[0])
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return cmd
	}
	const form = `<x xmlns='jabber:x:data' type='submit'><field var='to'><value>50</value></field><field var='interval_ms'><value>1000</value></field></x>`
	c := login(t, "alice", harness.HomeDomain)
	first := send(c, `<command xmlns='http://jabber.org/protocol/commands' node='count' action='execute'/>`)
	submit := `<command xmlns='http://jabber.org/protocol/commands' node='count' action='complete' sessionid='` + first.SessionID + `'>` + form + `</command>`
	if run := send(c, submit); run.Status != adhoc.StatusExecuting {
		t.Fatalf("submitted: %+v", run)
	}
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := restartGateway(ctx); err != nil {
		t.Fatal(err)
	}
	c = login(t, "alice", harness.HomeDomain)
	next := `<command xmlns='http://jabber.org/protocol/commands' node='count' action='next' sessionid='` + first.SessionID + `'/>`
	var after adhoc.Command
	for i := 0; i < 100; i++ {
		if after = send(c, next); after.Status != adhoc.StatusExecuting {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if after.Status != adhoc.StatusCompleted || len(after.Notes) == 0 || !strings.Contains(after.Notes[0].Text, "restart") {
		t.Fatalf("after the restart: %+v", after)
	}
	if again := send(c, submit); again.Status != after.Status || again.Notes[0].Text != after.Notes[0].Text {
		t.Errorf("resubmission: %+v, want the same task's %+v", again, after)
	}
}
