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

// chattyTarget is a running task whose revision moves on (progress) after
// every state read, until stale cancellations have been refused; then it
// accepts the one at its revision. cancelled makes it a task another
// cancellation was accepted for, which refuses every one of ours.
type chattyTarget struct {
	mu              sync.Mutex
	revision        int64
	stale, attempts int
	cancelled       bool
}

func (c *chattyTarget) IQ(_ context.Context, _, _, payload string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, err := wire.Parse(payload)
	if err != nil {
		return "", err
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const id = "task-0123456789abcdefghijkl"
	if el.Start.Name.Local != "cancel" {
		state := task.StateRunning
		if c.cancelled {
			state = task.StateCancelling
		}
		st, _ := wire.Marshal(task.TaskState{TaskID: id, Endpoint: demo.String(), State: state, Revision: c.revision,
			APIVersion: "1.0", Created: now, Updated: now, RetainUntil: now.Add(time.Hour)}.TokenReader())
		if c.attempts < c.stale {
			c.revision++ // progress, before the cancellation arrives
		}
		return "<iq xmlns='jabber:client' type='result'>" + st + "</iq>", nil
	}
	c.attempts++
	cn, err := task.ParseCancel(el)
	if err != nil || c.cancelled || cn.ExpectedRevision != c.revision {
		return `<iq xmlns='jabber:client' type='error'><error type='cancel'><conflict xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>`, nil
	}
	ack, _ := wire.Marshal(task.CancelAccepted{TaskID: id, Revision: c.revision + 1}.TokenReader())
	return "<iq xmlns='jabber:client' type='result'>" + ack + "</iq>", nil
}

// TestCancelOutlastsProgress: a task that reports progress faster than a
// state read and a cancellation take is still cancelled, by retrying at
// the new revision for RevisionRetryWindow, well past MaxRevisionRetries
// attempts; but a task another cancellation was accepted for is given up
// at once.
func TestCancelOutlastsProgress(t *testing.T) {
	ctx := context.Background()
	target := &chattyTarget{stale: 3 * agentclient.MaxRevisionRetries}
	ack, err := agentclient.New(target).Cancel(ctx, demo, task.Cancel{TaskID: "task-0123456789abcdefghijkl"}, -1)
	if err != nil || target.attempts != target.stale+1 || ack.Revision != target.revision+1 {
		t.Fatalf("cancel after %d stale attempts: %+v %v (%d attempts)", target.stale, ack, err, target.attempts)
	}

	other := &chattyTarget{cancelled: true}
	if _, err := agentclient.New(other).Cancel(ctx, demo, task.Cancel{TaskID: "task-0123456789abcdefghijkl"}, -1); agentclient.Condition(err) != stanza.Conflict || other.attempts != 1 {
		t.Fatalf("cancel of a task cancelled by another: %v after %d attempts, want <conflict/> after 1", err, other.attempts)
	}
}
