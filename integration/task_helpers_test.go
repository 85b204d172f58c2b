package integration

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/internal/xsdtest"
	"agentgw/task"
	"agentgw/wire"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Helpers of the task tests: running `agentgw client` as a process, and
// checking every task payload received against the XSD and the event
// schema.

// syncBuf is a buffer a subprocess writes while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// clientProc is a running `agentgw client`.
type clientProc struct {
	cmd      *exec.Cmd
	out, err syncBuf
	trace    string
	done     chan struct{}
	exitErr  error
}

// startClient runs `agentgw client -jid LOCAL@DOMAIN` on the user's home
// server with -trace, the password in AGENTGW_PASSWORD.
func startClient(t *testing.T, local, domain string, args ...string) *clientProc {
	t.Helper()
	server := suite.env.ProsodyC2S
	if domain == harness.RemoteDomain {
		server = suite.env.EjabberdC2S
	}
	f, err := os.CreateTemp(t.TempDir(), "trace-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := &clientProc{trace: f.Name(), done: make(chan struct{})}
	full := append([]string{"client", "-jid", local + "@" + domain, "-server", server, "-trace", p.trace}, args...)
	p.cmd = exec.Command(suite.bin, full...)
	p.cmd.Env = append(os.Environ(), "AGENTGW_PASSWORD="+password)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.exitErr = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the client to exit and returns its outputs.
func (p *clientProc) wait(t *testing.T, timeout time.Duration) (stdout, stderr string, err error) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("agentgw client %v did not finish in %v:\n%s%s", p.cmd.Args[1:], timeout, p.out.String(), p.err.String())
	}
	return p.out.String(), p.err.String(), p.exitErr
}

// waitOutput waits until the client's output matches re and returns the
// first match's submatches.
func (p *clientProc) waitOutput(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			return m
		}
		select {
		case <-p.done:
			if m := re.FindStringSubmatch(p.out.String()); m != nil {
				return m
			}
			t.Fatalf("agentgw client exited (%v) before printing %s:\n%s%s", p.exitErr, re, p.out.String(), p.err.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("agentgw client never printed %s:\n%s%s", re, p.out.String(), p.err.String())
	return nil
}

// runClient runs `agentgw client` to the end, checks every task payload
// it received, and returns its outputs.
func runClient(t *testing.T, w *taskWire, local, domain string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	p := startClient(t, local, domain, args...)
	stdout, stderr, err = p.wait(t, 60*time.Second)
	w.trace(p.trace)
	return stdout, stderr, err
}

// taskWire collects every urn:xmpp:agent-task:0 payload a test receives,
// checks each event JSON (and each result and pending-input JSON) against
// testdata/event.schema.json at once, and validates all the XML against
// testdata/agent-task.xsd with xmllint when the test ends.
type taskWire struct {
	t      *testing.T
	mu     sync.Mutex
	docs   []string
	json   int
	drains sync.WaitGroup
}

var (
	eventSchemasOnce sync.Once
	eventSchemas     map[string]*jsonschema.Schema
	eventSchemasErr  error
)

// eventSchema returns the validator of one $defs entry of
// testdata/event.schema.json, compiled independently of package task.
func eventSchema(def string) (*jsonschema.Schema, error) {
	eventSchemasOnce.Do(func() {
		f, err := os.Open("../testdata/event.schema.json")
		if err != nil {
			eventSchemasErr = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			eventSchemasErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		const id = "urn:xmpp:agent-task:0:event-json"
		if eventSchemasErr = c.AddResource(id, doc); eventSchemasErr != nil {
			return
		}
		eventSchemas = map[string]*jsonschema.Schema{}
		for _, d := range []string{"status", "progress", "input_required", "completed", "failed", "cancelled"} {
			if eventSchemas[d], eventSchemasErr = c.Compile(id + "#/$defs/" + d); eventSchemasErr != nil {
				return
			}
		}
	})
	if eventSchemasErr != nil {
		return nil, eventSchemasErr
	}
	s, ok := eventSchemas[def]
	if !ok {
		return nil, fmt.Errorf("no event schema definition %q", def)
	}
	return s, nil
}

// newTaskWire returns a collector whose payloads are validated when the
// test ends. Create it before the sessions it drains, so that they close
// first.
func newTaskWire(t *testing.T) *taskWire {
	w := &taskWire{t: t}
	t.Cleanup(w.check)
	return w
}

// drain collects the task payloads of every message c receives until its
// session ends.
func (w *taskWire) drain(c *c2s.Client) {
	w.drains.Add(1)
	go func() {
		defer w.drains.Done()
		for el := range c.Incoming() {
			w.element(el)
		}
	}()
}

// checkJSON validates a JSON payload against the event schema definition.
func (w *taskWire) checkJSON(def, payload string) {
	w.t.Helper()
	s, err := eventSchema(def)
	if err != nil {
		w.t.Error(err)
		return
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(payload))
	if err == nil {
		err = s.Validate(v)
	}
	if err != nil {
		w.t.Errorf("%s JSON does not satisfy event.schema.json: %v\n%s", def, err, payload)
	}
	w.mu.Lock()
	w.json++
	w.mu.Unlock()
}

// stanza collects the task payloads of one received stanza (an IQ answer
// or a message).
func (w *taskWire) stanza(raw string) {
	w.t.Helper()
	el, err := wire.Parse(raw)
	if err != nil {
		w.t.Errorf("unparsable stanza %q: %v", raw, err)
		return
	}
	w.element(el)
}

// element is stanza for a stanza received as an element (c2s Incoming).
func (w *taskWire) element(el wire.Element) {
	w.t.Helper()
	for _, c := range el.Children() {
		if c.Start.Name.Space != task.NS {
			continue
		}
		doc, err := wire.Marshal(c.Reader())
		if err != nil {
			w.t.Error(err)
			continue
		}
		w.mu.Lock()
		w.docs = append(w.docs, doc)
		w.mu.Unlock()
		switch c.Start.Name.Local {
		case "event":
			typ, _ := c.AttrValue("type")
			w.checkJSON(typ, c.Text())
		case "task-result":
			st, _ := c.AttrValue("state")
			w.checkJSON(map[string]string{"completed": "completed", "failed": "failed", "cancelled": "cancelled"}[st], c.Text())
		case "task-state":
			for _, p := range c.Children() {
				if p.Start.Name.Local == "pending-input" {
					w.checkJSON("input_required", p.Text())
				}
			}
		}
	}
}

// trace collects the task payloads of an `agentgw client -trace` file.
func (w *taskWire) trace(file string) {
	w.t.Helper()
	f, err := os.Open(file)
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var line struct{ XML string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			w.t.Fatalf("trace line %q: %v", sc.Text(), err)
		}
		w.stanza(line.XML)
	}
}

// check validates every collected payload against the XSD
// (internal/xsdtest).
func (w *taskWire) check() {
	w.drains.Wait()
	w.mu.Lock()
	docs := w.docs
	w.mu.Unlock()
	if len(docs) == 0 {
		return
	}
	if _, err := exec.LookPath("xmllint"); err != nil {
		if requireServers() {
			w.t.Error("xmllint (libxml2-utils) is not installed and AGENTGW_REQUIRE_SERVERS is set")
		} else {
			w.t.Log("xmllint is not installed: XSD validation skipped")
		}
		return
	}
	if err := xsdtest.Validate("../testdata/agent-task.xsd", docs); err != nil {
		w.t.Errorf("XSD validation of task payloads: %s", tail(err.Error(), 30))
		return
	}
	w.t.Logf("%d task payloads valid against agent-task.xsd, %d JSON payloads against event.schema.json", len(docs), w.json)
}

// taskIQ sends an IQ, collects its task payloads, and returns the answer.
func (w *taskWire) taskIQ(c *c2s.Client, typ, to, payload string) (wire.Element, string) {
	w.t.Helper()
	el, raw := iq(w.t, c, typ, to, payload)
	w.stanza(raw)
	return el, raw
}

// marshalTask serializes a task element.
func marshalTask(t *testing.T, v interface{ TokenReader() xml.TokenReader }) string {
	t.Helper()
	s, err := wire.Marshal(v.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newRequestID is a fresh CSPRNG request ID.
func newRequestID(t *testing.T) string {
	t.Helper()
	id, err := task.NewID(nil, "req-")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// awaitSettled polls the task state until the task is terminal.
func (w *taskWire) awaitSettled(c *c2s.Client, ep, taskID string) task.TaskState {
	w.t.Helper()
	// Generous: a task that waits for an MCP server's restart waits for
	// node's start, which took over 30 s with two suites at once.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		el, raw := w.taskIQ(c, "get", ep, marshalTask(w.t, task.TaskStateRequest{TaskID: taskID}))
		kids := el.Children()
		if len(kids) != 1 {
			w.t.Fatalf("task state: %s", raw)
		}
		st, err := task.ParseTaskState(kids[0])
		if err != nil {
			w.t.Fatalf("task state: %v: %s", err, raw)
		}
		if st.State.Terminal() {
			return st
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("task %s still %s", taskID, st.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ledgerLines returns the lines of the ledger whose key is key.
func ledgerLines(t *testing.T, file, key string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[1] == key {
			out = append(out, l)
		}
	}
	return out
}

func mustDigest(t *testing.T, b64 string) [32]byte {
	t.Helper()
	var d [32]byte
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != len(d) {
		t.Fatalf("hash %q: %v", b64, err)
	}
	copy(d[:], raw)
	return d
}
