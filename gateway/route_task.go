package gateway

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"sync"

	"agentgw/db"
	"agentgw/metrics"
	"agentgw/task"
	"agentgw/taskd"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

func init() {
	surfaces = append(surfaces, taskSurface)
}

// Payload names of the task protocol (urn:xmpp:agent-task:0).
var (
	nameInvoke       = xml.Name{Space: task.NS, Local: "invoke"}
	nameTaskState    = xml.Name{Space: task.NS, Local: "task-state-request"}
	nameTaskResult   = xml.Name{Space: task.NS, Local: "task-result-request"}
	nameProvideInput = xml.Name{Space: task.NS, Local: "provide-input"}
	nameCancel       = xml.Name{Space: task.NS, Local: "cancel"}
)

// taskSurface is the Task Execution profile (packages task and taskd) at
// endpoint JIDs: invocation, recovery, input and cancellation. Its disco
// features depend on the endpoint (only one with a runtime executes tasks,
// and only the optional features its tools declare are advertised), so
// they are computed per request: taskEndpointFeatures for the endpoint,
// taskToolFeatures for its tool nodes. Without an attached service every
// request gets <service-unavailable/>, like an unrouted one.
func taskSurface() surface {
	return surface{
		endpointIQ: map[iqKey]iqHandler{
			{stanza.SetIQ, nameInvoke}:       taskInvoke,
			{stanza.GetIQ, nameTaskState}:    taskState,
			{stanza.GetIQ, nameTaskResult}:   taskResult,
			{stanza.SetIQ, nameProvideInput}: taskProvideInput,
			{stanza.SetIQ, nameCancel}:       taskCancel,
		},
	}
}

// AttachTasks makes the gateway serve the task protocol with s. Call it
// before Run; s.Options.Notify should be SendEvent and s.Options.Ready
// WaitConnected.
func (g *Gateway) AttachTasks(s *taskd.Service) {
	g.tasks.Store(s)
}

// SendEvent sends a lifecycle event notification: a normal message from
// the endpoint to the invoking route, with the <event/> as its only child
// (task.Event.Message). It fails with ErrStreamLost when no stream is up.
// It is the taskd.Options.Notify of a gateway, and WaitConnected its Ready:
// the task service then holds events until a stream is up, and sends a
// failed one again on the next stream.
func (g *Gateway) SendEvent(from, to jid.JID, ev task.Event) error {
	return g.sendStanza(ev.Message(from, to))
}

func taskInvoke(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	svc := g.tasks.Load()
	if svc == nil {
		return nil, errServiceUnavailable
	}
	adm, err := svc.Invoke(ctx, g.Policy(), req.From, req.To, req.Payload)
	metrics.Admission(err, adm.Dispatch == nil)
	if err != nil {
		return nil, err
	}
	if adm.Dispatch == nil {
		return adm.Accepted.TokenReader(), nil
	}
	// Dispatch once the <accepted/> has been written: the caller then sees
	// it before any event of the task. The reply is encoded while the
	// session's write lock is held, so no event can overtake it once its
	// payload has been read. If it cannot be written (the write failed, or
	// the stream ended first), dispatch anyway: the task is admitted, and
	// a replay of the invocation or task-state will show its progress.
	written := make(chan struct{})
	go func() {
		select {
		case <-written:
		case <-ctx.Done():
		}
		adm.Dispatch()
	}()
	return &afterRead{r: adm.Accepted.TokenReader(), f: func() { close(written) }}, nil
}

func taskState(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	svc := g.tasks.Load()
	if svc == nil {
		return nil, errServiceUnavailable
	}
	st, err := svc.State(ctx, req.From, req.To, req.Payload)
	if err != nil {
		return nil, err
	}
	return st.TokenReader(), nil
}

func taskResult(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	svc := g.tasks.Load()
	if svc == nil {
		return nil, errServiceUnavailable
	}
	res, err := svc.Result(ctx, req.From, req.To, req.Payload)
	if err != nil {
		return nil, err
	}
	return res.TokenReader(), nil
}

func taskProvideInput(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	svc := g.tasks.Load()
	if svc == nil {
		return nil, errServiceUnavailable
	}
	acc, err := svc.ProvideInput(ctx, req.From, req.To, req.Payload)
	if err != nil {
		return nil, err
	}
	return acc.TokenReader(), nil
}

func taskCancel(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	svc := g.tasks.Load()
	if svc == nil {
		return nil, errServiceUnavailable
	}
	acc, err := svc.Cancel(ctx, req.From, req.To, req.Payload)
	if err != nil {
		return nil, err
	}
	return acc.TokenReader(), nil
}

// taskEndpointFeatures are the task features of an endpoint's disco#info
// for its active version v: none unless the endpoint has a runtime. Its
// only error is db.ErrWouldBlock, on the read loop (fastpath.go).
func (g *Gateway) taskEndpointFeatures(ctx context.Context, v db.Version) ([]string, error) {
	svc := g.tasks.Load()
	if svc == nil {
		return nil, nil
	}
	f, err := svc.EndpointFeatures(ctx, v)
	if errors.Is(err, db.ErrWouldBlock) {
		return nil, err
	}
	if err != nil {
		// The stored manifest is unreadable: advertise nothing rather
		// than fail discovery.
		g.log.Error("task features", "endpoint", v.JID, "err", err)
		return nil, nil
	}
	return f, nil
}

// taskToolFeatures are the task features the tool nodes of an endpoint
// may advertise (api.Service.TaskFeatures): those implemented, for an
// endpoint with a runtime.
func (g *Gateway) taskToolFeatures(endpoint jid.JID) []string {
	svc := g.tasks.Load()
	if svc == nil {
		return nil
	}
	return svc.ToolFeatures(endpoint.Bare().String())
}

// afterRead is a token reader that calls f once r is exhausted, or when
// done is called, whichever comes first, and only once.
type afterRead struct {
	r    xml.TokenReader
	f    func()
	once sync.Once
}

func (a *afterRead) Token() (xml.Token, error) {
	tok, err := a.r.Token()
	if err == io.EOF {
		a.done()
	}
	return tok, err
}

// done calls f unless it has been called.
func (a *afterRead) done() { a.once.Do(a.f) }
