package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/internal/pgtest"
	"agentgw/internal/testwait"
	"agentgw/mcpface/account"
	"agentgw/wire"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// offlineServer is the Server of an account that never connects: the MCP
// Tasks layer works on what its store holds.
func offlineServer(t *testing.T) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store, err := OpenStore(ctx, pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	acct := account.New(account.Options{JID: jid.MustParse("alice@example.org"), Store: store.Store, Queue: account.Queue{QueueMax: 10}})
	s, err := New(ctx, acct, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// unsettledTask stores an MCP task of owner that nothing follows: it
// never settles.
func unsettledTask(t *testing.T, s *Server, owner string) string {
	t.Helper()
	now := s.store.Now()
	rec := TaskRecord{ID: newTaskID(), Owner: owner, Account: s.acct.JID().String(), Endpoint: "demo@agents.example",
		XMPPTaskID: "x", RequestID: "r", Version: "1", Hash: wire.Hash{1}, Tool: "ask", Status: "input_required", XMPPState: "input_required",
		Created: now, Updated: now, RetainUntil: now.Add(time.Hour), TTL: time.Hour}
	if err := s.store.CreateTask(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec.ID
}

func taskRequest(t *testing.T, method, id string) *jsonrpc.Request {
	t.Helper()
	rid, _ := jsonrpc.MakeID(float64(1))
	params, _ := json.Marshal(map[string]string{"taskId": id})
	return &jsonrpc.Request{ID: rid, Method: method, Params: params}
}

// TestTaskWaitsBounded: one caller's tasks/result requests waiting at once
// are bounded (each is an asker, and over HTTP a stream); past the bound
// the answer is an error at once, another caller is not affected, and
// nothing is left behind once they end.
func TestTaskWaitsBounded(t *testing.T) {
	s := offlineServer(t)
	id := unsettledTask(t, s, "token:mallory")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range maxTaskWaits {
		wg.Go(func() {
			s.tasksMethod(ctx, "token:mallory", taskRequest(t, "tasks/result", id), &asker{canElicit: true})
		})
	}
	waitFor(t, "the waits counted", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.inputs[id] != nil && len(s.inputs[id].askers) == maxTaskWaits
	})
	extra, cancelExtra := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelExtra()
	_, err := s.tasksMethod(extra, "token:mallory", taskRequest(t, "tasks/result", id), &asker{})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || extra.Err() != nil || !strings.Contains(we.Message, "at most") {
		t.Fatalf("tasks/result past the bound: %v", err)
	}
	// Another caller still waits for its own task.
	other := unsettledTask(t, s, "token:alice")
	octx, ocancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer ocancel()
	if _, err := s.tasksMethod(octx, "token:alice", taskRequest(t, "tasks/result", other), nil); octx.Err() == nil {
		t.Fatalf("another caller's tasks/result did not wait: %v", err)
	}
	cancel()
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waits) != 0 || len(s.inputs) != 0 || len(s.elicits) != 0 {
		t.Fatalf("left behind: waits %v, inputs %d, elicitations %d", s.waits, len(s.inputs), len(s.elicits))
	}
}

func waitFor(t *testing.T, what string, check func() bool) {
	t.Helper()
	testwait.Until(t, 10*time.Second, what, check)
}

// sentTo collects what rawElicit sends the client.
type sentTo struct {
	mu   sync.Mutex
	msgs []*jsonrpc.Request
}

func (c *sentTo) send(m jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m.(*jsonrpc.Request))
	return nil
}

func (c *sentTo) get(i int) *jsonrpc.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < len(c.msgs) {
		return c.msgs[i]
	}
	return nil
}

// TestRawElicitAnswers: only a response from the owner, to the id the
// layer sent, answers an elicitation; results that are no ElicitResult
// are errors; the request ending withdraws it; nothing is left behind.
func TestRawElicitAnswers(t *testing.T) {
	s := offlineServer(t)
	type outcome struct {
		res *mcp.ElicitResult
		err error
	}
	elicit := func(req context.Context) (*sentTo, <-chan outcome) {
		c := &sentTo{}
		ch := make(chan outcome, 1)
		go func() {
			res, err := s.rawElicit(context.Background(), req, "account:alice", c.send, &mcp.ElicitParams{Message: "?"})
			ch <- outcome{res, err}
		}()
		waitFor(t, "the elicitation/create", func() bool { return c.get(0) != nil })
		if q := c.get(0); q.Method != "elicitation/create" {
			t.Fatalf("sent %s", q.Method)
		}
		return c, ch
	}
	answer := func(owner string, id jsonrpc.ID, result string) bool {
		return s.deliver(owner, &jsonrpc.Response{ID: id, Result: json.RawMessage(result)})
	}
	for _, tc := range []struct {
		result string
		ok     bool
	}{
		{`{"action":"accept","content":{"answer":"blue"}}`, true},
		{`{"action":"decline"}`, true},
		{`{"action":"maybe"}`, false},
		{`{}`, false},
		{`42`, false},
		{`{"action":"accept","content":["blue"]}`, false},
		{`{"action":"accept","content":"blue"}`, false},
	} {
		c, ch := elicit(context.Background())
		id := c.get(0).ID
		// An id the layer never sent, the same id as an integer (go-sdk's
		// ids are) and another owner's answer are not answers.
		forged, _ := jsonrpc.MakeID("agentgw-elicit-forged")
		asInt, _ := jsonrpc.MakeID(float64(1))
		if answer("account:alice", forged, tc.result) || answer("account:alice", asInt, tc.result) || answer("token:mallory", id, tc.result) {
			t.Fatalf("%s: a forged answer was taken", tc.result)
		}
		if !answer("account:alice", id, tc.result) {
			t.Fatalf("%s: the answer was not taken", tc.result)
		}
		o := <-ch
		if (o.err == nil) != tc.ok {
			t.Errorf("%s: %+v %v", tc.result, o.res, o.err)
		}
		if o.err != nil && strings.Contains(o.err.Error(), "json") {
			t.Errorf("%s: the error shows the decoder: %v", tc.result, o.err)
		}
	}
	// The asking request ends: errAskerGone, and the client is told.
	req, end := context.WithCancel(context.Background())
	c, ch := elicit(req)
	end()
	if o := <-ch; !errors.Is(o.err, errAskerGone) {
		t.Fatalf("the request ended: %v", o.err)
	}
	var p struct {
		RequestID string `json:"requestId"`
	}
	n := c.get(1)
	if n != nil {
		json.Unmarshal(n.Params, &p)
	}
	if n == nil || n.Method != "notifications/cancelled" || p.RequestID != c.get(0).ID.Raw() {
		t.Fatalf("the withdrawal: %+v", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.elicits) != 0 {
		t.Fatalf("%d elicitations left behind", len(s.elicits))
	}
}
