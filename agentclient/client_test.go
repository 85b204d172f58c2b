package agentclient_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/agentclient"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// lossyConn answers IQs from a script: each step is an answer (XML) or a
// lost one (err).
type lossyConn struct {
	mu       sync.Mutex
	payloads []string
	answers  []func(payload string) (string, error)
}

func (c *lossyConn) IQ(_ context.Context, _, _, payload string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.payloads = append(c.payloads, payload)
	next := c.answers[0]
	if len(c.answers) > 1 {
		c.answers = c.answers[1:]
	}
	return next(payload)
}

var demo = jid.MustParse("demo@agents.example")

// TestInvokeRetriesIdentical: a lost acceptance is retried with the
// identical request (same request ID), so the target replays one task.
func TestInvokeRetriesIdentical(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	conn := &lossyConn{answers: []func(string) (string, error){
		func(string) (string, error) { return "", context.DeadlineExceeded },
		func(payload string) (string, error) {
			el, _ := wire.Parse(payload)
			inv, err := task.ParseInvoke(el)
			if err != nil {
				t.Fatalf("invoke sent: %v", err)
			}
			acc, _ := wire.Marshal(task.Accepted{RequestID: inv.RequestID, TaskID: "task-0123456789abcdefghijkl", Created: created, RetainUntil: created.Add(time.Hour)}.TokenReader())
			return "<iq xmlns='jabber:client' type='result'>" + acc + "</iq>", nil
		},
	}}
	c := agentclient.New(conn)
	reqID, err := agentclient.NewRequestID()
	if err != nil || !task.ValidID(reqID) {
		t.Fatalf("request id %q: %v", reqID, err)
	}
	p := agentclient.PinFlags(demo, "demo-1", [32]byte{1})
	acc, retried, err := c.Invoke(context.Background(), p, task.Invoke{RequestID: reqID, Tool: "echo", Arguments: `{"text":"x"}`})
	if err != nil || !retried || acc.TaskID != "task-0123456789abcdefghijkl" || acc.RequestID != reqID {
		t.Fatalf("invoke: %+v %v %v", acc, retried, err)
	}
	if len(conn.payloads) != 2 || conn.payloads[0] != conn.payloads[1] || !strings.Contains(conn.payloads[0], reqID) {
		t.Fatalf("payloads sent: %q", conn.payloads)
	}
}

// TestRefusalIsStanzaError: an error IQ is an *IQError that unwraps to
// the stanza.Error; nothing is retried.
func TestRefusalIsStanzaError(t *testing.T) {
	conn := &lossyConn{answers: []func(string) (string, error){func(string) (string, error) {
		return `<iq xmlns='jabber:client' type='error'><error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>`, nil
	}}}
	c := agentclient.New(conn)
	_, err := c.Manifest(context.Background(), demo)
	var se stanza.Error
	if !errors.As(err, &se) || se.Condition != stanza.ItemNotFound || agentclient.Condition(err) != stanza.ItemNotFound || !agentclient.IsRefusal(err) {
		t.Fatalf("error: %#v", err)
	}
	if !strings.Contains(err.Error(), "it does not exist, or you are not allowed to use it") {
		t.Fatalf("message: %v", err)
	}
	p := agentclient.PinFlags(demo, "demo-1", [32]byte{1})
	_, retried, err := c.Invoke(context.Background(), p, task.Invoke{RequestID: "req-0123456789abcdefghijkl", Tool: "echo", Arguments: `{}`})
	if !errors.Is(err, agentclient.ErrNotAccepted) || retried || len(conn.payloads) != 2 {
		t.Fatalf("refused invoke: %v retried=%v sent=%d", err, retried, len(conn.payloads))
	}
}
