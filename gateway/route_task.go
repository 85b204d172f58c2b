package gateway

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"sync"

	"agentgw/db"
	"agentgw/metrics"
	"agentgw/surface"
	"agentgw/task"
	"agentgw/taskd"

	"mellium.im/xmpp/jid"
)

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
		return nil, surface.ErrServiceUnavailable
	}
	adm, err := svc.Invoke(ctx, *req)
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

// taskCall adapts a caller operation of the task service (State, Result,
// ProvideInput, Cancel) to the routing table.
func taskCall[T interface{ TokenReader() xml.TokenReader }](op func(*taskd.Service, context.Context, surface.Request) (T, error)) iqHandler {
	return func(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
		svc := g.tasks.Load()
		if svc == nil {
			return nil, surface.ErrServiceUnavailable
		}
		res, err := op(svc, ctx, *req)
		if err != nil {
			return nil, err
		}
		return res.TokenReader(), nil
	}
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
