package task_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// marshaler is every wire type of the package.
type marshaler interface{ TokenReader() xml.TokenReader }

// parsers maps each element to its parse function.
var parsers = map[string]func(wire.Element) (marshaler, error){
	"invoke":              func(e wire.Element) (marshaler, error) { return task.ParseInvoke(e) },
	"accepted":            func(e wire.Element) (marshaler, error) { return task.ParseAccepted(e) },
	"event":               func(e wire.Element) (marshaler, error) { return task.ParseEvent(e) },
	"task-state-request":  func(e wire.Element) (marshaler, error) { return task.ParseTaskStateRequest(e) },
	"task-state":          func(e wire.Element) (marshaler, error) { return task.ParseTaskState(e) },
	"task-result-request": func(e wire.Element) (marshaler, error) { return task.ParseTaskResultRequest(e) },
	"task-result":         func(e wire.Element) (marshaler, error) { return task.ParseTaskResult(e) },
	"provide-input":       func(e wire.Element) (marshaler, error) { return task.ParseProvideInput(e) },
	"input-accepted":      func(e wire.Element) (marshaler, error) { return task.ParseInputAccepted(e) },
	"cancel":              func(e wire.Element) (marshaler, error) { return task.ParseCancel(e) },
	"cancel-accepted":     func(e wire.Element) (marshaler, error) { return task.ParseCancelAccepted(e) },
}

// TestSpecExamples parses every urn:xmpp:agent-task:0 payload of the
// ProtoXEP's examples (testdata/spec, extracted verbatim), re-emits it,
// validates the result against the XSD, parses it again and checks the
// round trip is stable. Event payloads must validate against the event
// schema.
func TestSpecExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "spec", "*.xml"))
	if err != nil || len(files) != 19 {
		t.Fatalf("spec examples: %d files, %v", len(files), err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		el := parse(t, string(raw))
		xsdCheck(t, string(raw))
		p := parsers[el.Start.Name.Local]
		if p == nil {
			t.Fatalf("%s: no parser for %s", f, el.Start.Name.Local)
		}
		v, err := p(el)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		out := marshal(t, v.TokenReader())
		xsdCheck(t, out)
		v2, err := p(parse(t, out))
		if err != nil {
			t.Errorf("%s: reparse: %v", f, err)
			continue
		}
		if again := marshal(t, v2.TokenReader()); again != out {
			t.Errorf("%s: round trip changed:\n%s\n%s", f, out, again)
		}
		if ev, ok := v.(task.Event); ok {
			if err := task.ValidatePayload(ev.Type, ev.Payload); err != nil {
				t.Errorf("%s: payload: %v", f, err)
			}
		}
	}
}

// TestSpecExampleValues checks a few parsed values against the examples.
func TestSpecExampleValues(t *testing.T) {
	read := func(name string) wire.Element {
		raw, err := os.ReadFile(filepath.Join("testdata", "spec", name))
		if err != nil {
			t.Fatal(err)
		}
		return parse(t, string(raw))
	}
	inv, err := task.ParseInvoke(read("invoke-1.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Tool != "forecast.get" || inv.APIVersion != "1.4.0" || inv.Arguments != `{"city":"Riga"}` ||
		inv.Deadline.String() != "2026-07-27T19:15:00Z" || inv.RequestID != "req-91a6d2f49c514f44a2d223f0f97bd9fe" {
		t.Errorf("invoke: %+v", inv)
	}
	st, err := task.ParseTaskState(read("task-state-1.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != task.StateRunning || st.Revision != 2 || st.ResultAvailable || st.Endpoint != "weather@agents.example" ||
		!st.Updated.Equal(time.Date(2026, 7, 27, 19, 14, 3, 0, time.UTC)) {
		t.Errorf("task-state: %+v", st)
	}
	c, err := task.ParseCancel(read("cancel-1.xml"))
	if err != nil || !c.HasReason || c.Reason != "Trip was cancelled" || c.ExpectedRevision != 4 {
		t.Errorf("cancel: %+v %v", c, err)
	}
	pi, err := task.ParseProvideInput(read("provide-input-1.xml"))
	if err != nil || pi.Input != `{"unit":"C"}` || pi.ExpectedRevision != 3 {
		t.Errorf("provide-input: %+v %v", pi, err)
	}
}

func TestWireRoundTrip(t *testing.T) {
	sum := [32]byte{1, 2, 3}
	dl, _ := task.ParseDateTime("2026-07-27T19:15:00.0000000001+01:00")
	for _, tc := range []struct {
		v    marshaler
		want string
	}{
		{task.Invoke{RequestID: "req-0123456789abcdef0123", Tool: "a<b", APIVersion: "1", ManifestHash: sum, Arguments: `{"x":"<&>"}`, Deadline: dl},
			`<invoke api-version='1' request-id='req-0123456789abcdef0123' tool='a&lt;b' xmlns='urn:xmpp:agent-task:0'><manifest-hash><hash algo='sha-256' xmlns='urn:xmpp:hashes:2'>AQIDAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</hash></manifest-hash><arguments media-type='application/json'>{&#34;x&#34;:&#34;&lt;&amp;&gt;&#34;}</arguments><deadline>2026-07-27T18:15:00.0000000001Z</deadline></invoke>`},
		{task.Cancel{TaskID: "task-0123456789abcdef0123", ExpectedRevision: 7, HasReason: true},
			`<cancel expected-revision='7' task-id='task-0123456789abcdef0123' xmlns='urn:xmpp:agent-task:0'><reason/></cancel>`},
		{task.Cancel{TaskID: "task-0123456789abcdef0123"},
			`<cancel expected-revision='0' task-id='task-0123456789abcdef0123' xmlns='urn:xmpp:agent-task:0'/>`},
		{task.TaskState{TaskID: "task-0123456789abcdef0123", Endpoint: "w@a", State: task.StateInputRequired, Revision: 3,
			APIVersion: "1", ManifestHash: sum, Created: t0, Updated: t0, RetainUntil: t0, PendingInput: []byte(`{"a":1}`)},
			`<task-state api-version='1' created='2026-07-27T19:14:01Z' endpoint='w@a' result-available='false' retain-until='2026-07-27T19:14:01Z' revision='3' state='input_required' task-id='task-0123456789abcdef0123' updated='2026-07-27T19:14:01Z' xmlns='urn:xmpp:agent-task:0'><manifest-hash><hash algo='sha-256' xmlns='urn:xmpp:hashes:2'>AQIDAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</hash></manifest-hash><pending-input media-type='application/json'>{&#34;a&#34;:1}</pending-input></task-state>`},
		{task.TaskResult{TaskID: "task-0123456789abcdef0123", State: task.StateCancelled, Revision: 9, Payload: []byte(`{}`)},
			`<task-result media-type='application/json' revision='9' state='cancelled' task-id='task-0123456789abcdef0123' xmlns='urn:xmpp:agent-task:0'>{}</task-result>`},
		{task.InputAccepted{TaskID: "task-0123456789abcdef0123", Revision: 4},
			`<input-accepted revision='4' task-id='task-0123456789abcdef0123' xmlns='urn:xmpp:agent-task:0'/>`},
	} {
		got := marshal(t, tc.v.TokenReader())
		// wire.Marshal escapes quotes only in attributes; the expected
		// strings above spell them as entities for readability.
		want := strings.ReplaceAll(tc.want, "&#34;", `"`)
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		xsdCheck(t, got)
	}
}

// TestParseRejects feeds malformed payloads to the parsers: each must be a
// <bad-request/>.
func TestParseRejects(t *testing.T) {
	const (
		id   = "task-0123456789abcdef0123"
		hash = `<manifest-hash><hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=</hash></manifest-hash>`
		args = `<arguments media-type='application/json'>{}</arguments>`
		inv  = `<invoke xmlns='urn:xmpp:agent-task:0' api-version='1' request-id='req-0123456789abcdef0123' tool='t'>`
	)
	for _, doc := range []string{
		`<invoke xmlns='urn:xmpp:agent-task:0' api-version='1' request-id='short' tool='t'>` + hash + args + `</invoke>`,
		`<invoke xmlns='urn:xmpp:agent-task:0' api-version='1' request-id='req-0123456789abcdef0123!' tool='t'>` + hash + args + `</invoke>`,
		`<invoke xmlns='urn:xmpp:agent-task:0' api-version='1 0' request-id='req-0123456789abcdef0123' tool='t'>` + hash + args + `</invoke>`,
		`<invoke xmlns='urn:xmpp:agent-task:0' api-version='1' request-id='req-0123456789abcdef0123' tool=''>` + hash + args + `</invoke>`,
		`<invoke xmlns='urn:xmpp:agent-task:0' api-version='1' request-id='req-0123456789abcdef0123'>` + hash + args + `</invoke>`,
		inv + args + hash + `</invoke>`,
		inv + hash + `</invoke>`,
		inv + hash + args + args + `</invoke>`,
		inv + hash + args + `<extension xmlns='urn:example'/></invoke>`,
		inv + hash + args + `<deadline>tomorrow</deadline></invoke>`,
		inv + hash + args + `<deadline>2026-07-27T19:15:00</deadline></invoke>`,
		inv + hash + `<arguments media-type='text/plain'>{}</arguments></invoke>`,
		inv + hash + `<arguments>{}</arguments></invoke>`,
		inv + hash + `<arguments media-type='application/json'><x/></arguments></invoke>`,
		inv + `text` + hash + args + `</invoke>`,
		inv + `<manifest-hash><hash xmlns='urn:xmpp:hashes:2' algo='sha-1'>K2/YdwvIBAlfUIeZHiNCyiYA4m4=</hash></manifest-hash>` + args + `</invoke>`,
		inv + `<manifest-hash><hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>AAAA</hash></manifest-hash>` + args + `</invoke>`,
		inv + `<manifest-hash/>` + args + `</invoke>`,
		`<invoke xmlns='urn:example' api-version='1' request-id='req-0123456789abcdef0123' tool='t'>` + hash + args + `</invoke>`,
		`<cancel xmlns='urn:xmpp:agent-task:0' task-id='` + id + `'/>`,
		`<cancel xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' expected-revision='-1'/>`,
		`<cancel xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' expected-revision='99999999999999999999'/>`,
		`<cancel xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' expected-revision='1'><reason><b/></reason></cancel>`,
		`<cancel xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' expected-revision='1'><reason/><reason/></cancel>`,
		`<cancel xmlns='urn:xmpp:agent-task:0' task-id='bad id' expected-revision='1'/>`,
		`<task-state-request xmlns='urn:xmpp:agent-task:0' task-id='x'/>`,
		`<task-state-request xmlns='urn:xmpp:agent-task:0'/>`,
		`<task-state-request xmlns='urn:xmpp:agent-task:0' task-id='` + id + `'><x/></task-state-request>`,
		`<task-result-request xmlns='urn:xmpp:agent-task:0' task-id='` + strings.Repeat("a", 129) + `'/>`,
		`<provide-input xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' request-id='` + id + `' expected-revision='1'/>`,
		`<provide-input xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' request-id='r' expected-revision='1'><input media-type='application/json'>{}</input></provide-input>`,
		`<provide-input xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' request-id='` + id + `' expected-revision='1'><input media-type='text/json'>{}</input></provide-input>`,
		`<event xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' event-id='` + id + `' revision='1' type='bogus'>{}</event>`,
		`<task-result xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' revision='1' state='running' media-type='application/json'>{}</task-result>`,
		`<task-result xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' revision='1' state='failed'>{}</task-result>`,
		`<accepted xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' request-id='` + id + `' revision='0' created='2026-07-27T19:14:01Z'/>`,
		`<accepted xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' request-id='` + id + `' revision='0' created='2026-07-27T19:14:01Z' retain-until='2026-07-28T19:14:01Z'>x</accepted>`,
		`<input-accepted xmlns='urn:xmpp:agent-task:0' task-id='` + id + `'/>`,
		`<cancel-accepted xmlns='urn:xmpp:agent-task:0' revision='1'/>`,
		`<event xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' event-id='` + id + `' revision='1' type='status'><x/></event>`,
		`<event xmlns='urn:xmpp:agent-task:0' task-id='` + id + `' revision='1' type='status'>{}</event>`,
		taskState(`endpoint='w@a/res'`, hash),
		taskState(`endpoint='w@a' state='paused'`, hash),
		taskState(`endpoint='w@a' result-available='yes'`, hash),
		taskState(`endpoint='w@a' deadline='soon'`, hash),
		taskState(`endpoint='w@a'`, ``),
		taskState(`endpoint='w@a'`, hash+`<pending-input>{}</pending-input>`),
		taskState(`endpoint='w@a'`, `<pending-input media-type='application/json'>{}</pending-input>`+hash),
	} {
		el := parse(t, doc)
		_, err := parsers[el.Start.Name.Local](el)
		if el.Start.Name.Space != task.NS {
			_, err = task.ParseInvoke(el)
		}
		if !errors.Is(err, task.ErrBadRequest) {
			t.Errorf("not a bad-request (%v): %s", err, doc)
		}
	}
	if _, err := task.ParseTaskState(parse(t, taskState(`endpoint='w@a' deadline='2026-07-27T19:15:00Z'`, hash))); err != nil {
		t.Errorf("valid task-state: %v", err)
	}
	// Leading zeros, a plus sign and surrounding whitespace are valid
	// xs:nonNegativeInteger spellings.
	c, err := task.ParseCancel(parse(t, `<cancel xmlns='urn:xmpp:agent-task:0' task-id='`+id+`' expected-revision=' +007 '/>`))
	if err != nil || c.ExpectedRevision != 7 {
		t.Errorf("revision spelling: %v %v", c, err)
	}
}

// taskState returns a <task-state/> with valid attributes, overridden or
// completed by extra, and the given children.
func taskState(extra, children string) string {
	attrs := map[string]string{
		"task-id": "task-0123456789abcdef0123", "state": "running", "revision": "2", "api-version": "1",
		"created": "2026-07-27T19:14:01Z", "updated": "2026-07-27T19:14:01Z",
		"retain-until": "2026-07-28T19:14:01Z", "result-available": "false",
	}
	for _, kv := range strings.Fields(extra) {
		k, v, _ := strings.Cut(kv, "=")
		attrs[k] = strings.Trim(v, "'")
	}
	var b strings.Builder
	b.WriteString("<task-state xmlns='urn:xmpp:agent-task:0'")
	for k, v := range attrs {
		b.WriteString(" " + k + "='" + v + "'")
	}
	return b.String() + ">" + children + "</task-state>"
}

// TestEventMessage checks the notification stanza: type normal, the event
// as its only child, the event ID as stanza ID, and no hints or receipt
// requests.
func TestEventMessage(t *testing.T) {
	ev := task.Event{TaskID: "task-0123456789abcdef0123", ID: "evt-0123456789abcdef0123", Revision: 1, Type: task.EventCancelled, Payload: []byte(`{}`)}
	got := marshal(t, ev.Message(jid.MustParse("w@a"), jid.MustParse("c@b/r")))
	want := `<message from='w@a' id='evt-0123456789abcdef0123' to='c@b/r' type='normal'><event event-id='evt-0123456789abcdef0123' revision='1' task-id='task-0123456789abcdef0123' type='cancelled' xmlns='urn:xmpp:agent-task:0'>{}</event></message>`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if el := parse(t, got); len(el.Children()) != 1 {
		t.Error("message must have exactly one child")
	}
}

func TestErrorMapping(t *testing.T) {
	var se stanza.Error
	if !errors.As(task.ErrNotFound, &se) || se.Condition != stanza.ItemNotFound || se.Type != stanza.Cancel || se.Text != nil {
		t.Errorf("not found: %+v", se)
	}
	var err error = &task.Error{Condition: stanza.Conflict, Text: "x"}
	if !errors.Is(err, task.ErrConflict) || errors.Is(err, task.ErrNotFound) {
		t.Error("errors.Is must match on the condition")
	}
	// The text is for logs: no error IQ carries it (package surface).
	if !errors.As(err, &se) || se.Type != stanza.Cancel || se.Text != nil || err.Error() != "task: conflict: x" {
		t.Errorf("conflict: %+v (%v)", se, err)
	}
	for cond, typ := range map[*task.Error]stanza.ErrorType{
		task.ErrBadRequest: stanza.Modify, task.ErrNotAcceptable: stanza.Modify, task.ErrUnexpectedRequest: stanza.Wait,
		task.ErrResourceConstraint: stanza.Wait, task.ErrForbidden: stanza.Auth, task.ErrServiceUnavailable: stanza.Cancel,
	} {
		if cond.StanzaError().Type != typ {
			t.Errorf("%s: type %s", cond.Condition, cond.StanzaError().Type)
		}
	}
}

// TestEventSchemaIdentical checks that the embedded schema is
// byte-identical to testdata/event.schema.json, the committed normative
// artifact.
func TestEventSchemaIdentical(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "testdata", "event.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(task.EventSchema(), want) {
		t.Error("task/event.schema.json differs from testdata/event.schema.json")
	}
	var doc map[string]any
	if err := json.Unmarshal(want, &doc); err != nil || doc["$id"] != task.EventSchemaID {
		t.Errorf("schema $id: %v %v", doc["$id"], err)
	}
}

func TestValidatePayload(t *testing.T) {
	for _, tc := range []struct {
		typ task.EventType
		js  string
		ok  bool
	}{
		{task.EventStatus, `{"state":"running","updatedAt":"2026-07-27T19:14:02Z"}`, true},
		{task.EventStatus, `{"state":"completed","updatedAt":"2026-07-27T19:14:02Z"}`, false},
		{task.EventStatus, `{"state":"running","updatedAt":"yesterday"}`, false},
		{task.EventStatus, `{"state":"running","updatedAt":"2026-07-27t19:14:02z"}`, false},
		{task.EventStatus, `{"state":"running"}`, false},
		{task.EventProgress, `{}`, false},
		{task.EventProgress, `{"percent":101}`, false},
		{task.EventProgress, `{"percent":50,"extra":1}`, false},
		{task.EventInputRequired, `{"requestId":"short","question":"q","inputSchema":{},"createdAt":"2026-07-27T19:14:02Z"}`, false},
		{task.EventCompleted, `{"result":{"content":[],"isError":true}}`, true},
		{task.EventCompleted, `{"result":{"content":[],"other":1}}`, false},
		{task.EventFailed, `{"error":{"code":"a b","message":"m","retryable":true}}`, false},
		{task.EventCancelled, `{}`, true},
		{task.EventCancelled, `[]`, false},
		{task.EventCancelled, `{} {}`, false},
	} {
		err := task.ValidatePayload(tc.typ, []byte(tc.js))
		if (err == nil) != tc.ok {
			t.Errorf("%s %s: %v", tc.typ, tc.js, err)
		}
	}
}
