package gateway_test

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/gateway"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// pipeListener hands the gateway in-memory connections (net.Pipe): a
// write blocks until the other end reads, so a fake server that stops
// reading stalls the gateway's next write at once, with no socket buffer in
// between.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }

// String is a loopback address, so the configuration built from it is
// valid; nothing dials it (pipeListener.dial does).
func (pipeAddr) String() string { return "127.0.0.1:5347" }

func newPipeServer(t *testing.T) (*fakeServer, *pipeListener) {
	l := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	t.Cleanup(func() { l.Close() })
	return &fakeServer{t: t, ln: l}, l
}

// dial is the gateway's dialer: it waits for the fake server to accept.
func (l *pipeListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-time.After(10 * time.Second):
		return nil, errors.New("no connection from the gateway")
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// faultWriteTimeout is the gateway's per-write deadline in these tests.
const faultWriteTimeout = 200 * time.Millisecond

// TestWriteTimeoutDropsStream: the server stops reading until a write of
// the gateway times out, then reads again. The gateway drops that stream
// (mellium's encoder would fail every later write) instead of staying
// connected and mute: the outgoing IQ pending on it fails at once, nothing
// stays pending, and the gateway reconnects and answers.
func TestWriteTimeoutDropsStream(t *testing.T) {
	srv, pl := newPipeServer(t)
	cfg := testConfig(t, pl.Addr().String(), "")
	store := openStore(t)
	gw := newGateway(cfg, store)
	gw.SetWriteTimeout(faultWriteTimeout)
	gw.SetDialer(pl.dial)
	runGateway(t, context.Background(), gw)
	srv.accept()
	waitUp(t, gw)

	// An outgoing IQ is pending, unanswered.
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := gw.SendIQ(ctx, stanza.IQ{Type: stanza.GetIQ, From: jid.MustParse(domain), To: jid.MustParse(alice)}, wire.Elem(xml.Name{Space: "urn:xmpp:ping", Local: "ping"}, nil))
		errc <- err
	}()
	if el := srv.next(); !strings.Contains(marshal(t, el), "urn:xmpp:ping") {
		t.Fatalf("expected the outgoing ping, got %s", marshal(t, el))
	}

	// The server stops reading; a request keeps coming in, and its answer
	// cannot be written.
	srv.write(`<iq xmlns='jabber:component:accept' type='get' id='stalled' from='` + alice + `' to='` + domain + `'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>`)
	select {
	case err := <-errc:
		if !errors.Is(err, gateway.ErrStreamLost) {
			t.Fatalf("pending IQ failed with %v, want ErrStreamLost", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pending IQ still waits: the stream with a failed write was not dropped")
	}
	if n := gw.PendingIQs(); n != 0 {
		t.Fatalf("%d IQs still pending", n)
	}

	// The server reads again: the gateway is back on a new stream.
	srv.accept()
	waitUp(t, gw)
	el := srv.iq(alice, domain, "get", `<ping xmlns='urn:xmpp:ping'/>`)
	if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Fatalf("after the reconnect: %s", marshal(t, el))
	}
}

// TestAcceptedUnsentStillDispatched: an invocation is admitted, but its
// <accepted/> cannot be written (the server stopped reading). The task is
// dispatched anyway; its events wait for the next stream and arrive there
// in order, and a replay of the invocation gives the same task, completed.
func TestAcceptedUnsentStillDispatched(t *testing.T) {
	srv, pl := newPipeServer(t)
	te := startTasksOn(t, srv, func(gw *gateway.Gateway) {
		gw.SetWriteTimeout(faultWriteTimeout)
		gw.SetDialer(pl.dial)
	})
	invoke := te.invoke(alice, "req-unsent-0123456789abcdef", "echo", `{"text":"hello"}`)
	// Written, never read: the server has stopped reading.
	te.srv.write(fmt.Sprintf(`<iq xmlns='jabber:component:accept' type='set' id='lost' from='%s' to='%s'>%s</iq>`, alice, demoJID, invoke))

	srv.accept()
	waitUp(t, te.gw)
	_, running := te.event(task.EventStatus, 1)
	_, completed := te.event(task.EventCompleted, 2)
	if running.TaskID != completed.TaskID {
		t.Fatalf("events of two tasks: %s, %s", running.TaskID, completed.TaskID)
	}
	iq := te.taskIQ(alice, demoJID, "set", invoke)
	acc, err := task.ParseAccepted(te.payload(iq))
	if err != nil {
		t.Fatal(err)
	}
	if acc.TaskID != running.TaskID {
		t.Fatalf("replay gives task %s, the events were of %s", acc.TaskID, running.TaskID)
	}
	state := te.taskIQ(alice, demoJID, "get", fmt.Sprintf(`<task-state-request xmlns='urn:xmpp:agent-task:0' task-id='%s'/>`, acc.TaskID))
	if st, err := task.ParseTaskState(te.payload(state)); err != nil || st.State != task.StateCompleted {
		t.Fatalf("task state %+v, %v", st, err)
	}
}

func waitUp(t testing.TB, gw *gateway.Gateway) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := gw.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
}

func openStore(t testing.TB) *db.Store {
	t.Helper()
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	// Only this Store writes, and its own writes are seen at once: the
	// 250 ms recheck for other processes' writes would only put a store
	// read between two of a test's reads whenever the machine pauses, and
	// the memo's hits are counted (TestMemoRepeats failed so under load).
	store.SetRecheck(time.Hour)
	return store
}
