package gateway

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"agentgw/adhoc"
	"agentgw/db"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/surface"
	"agentgw/task"
	"agentgw/taskd"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// adhocService is the command surface of endpoints over this gateway's
// store, directory and task service. Like apiService it holds no state.
func (g *Gateway) adhocService() *adhoc.Service {
	s := &adhoc.Service{Dir: g.dir, Store: g.store, Wait: time.Duration(commandWait.Load())}
	if svc := g.tasks.Load(); svc != nil {
		s.Tasks = adhocTasks{svc}
	}
	return s
}

// commandWait overrides adhoc.DefaultWait when set (tests only).
var commandWait atomic.Int64

// adhocEndpointFeatures are the command features of an endpoint's
// disco#info for the requester. The one error is db.ErrWouldBlock, on the
// read loop's fast path (fastpath.go), which sends the request to a worker.
// v is the endpoint's summary, read for the requester already.
func (g *Gateway) adhocEndpointFeatures(ctx context.Context, req *Request, v db.Version) ([]string, error) {
	return g.adhocService().EndpointFeaturesOf(ctx, *req, v)
}

// gatewayCommands is the command surface of the gateway JID.
func (g *Gateway) gatewayCommands() *adhoc.GatewayService {
	return &adhoc.GatewayService{Store: g.store, PageSize: g.opts.PageMax, Sessions: &g.commands,
		Provisioned: func(op string, from jid.JID, endpoint string) {
			g.log.Info("provisioning", "op", op, "from", from.Bare().String(), "jid", endpoint)
		}}
}

// gatewayCommand answers a <command/> at the gateway JID.
func gatewayCommand(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	c, err := g.gatewayCommands().Execute(ctx, *req)
	if err != nil {
		return nil, err
	}
	return c.TokenReader(), nil
}

// gatewayCommandInfo and gatewayCommandItems answer disco on the
// gateway's command list and command nodes.
func gatewayCommandInfo(g *Gateway, req *Request, node string) (xml.TokenReader, error) {
	info, err := g.gatewayCommands().Info(*req, node)
	if err != nil {
		return nil, err
	}
	return info.TokenReader(), nil
}

func gatewayCommandItems(g *Gateway, req *Request, node string) (xml.TokenReader, error) {
	if node != adhoc.NS {
		if _, err := g.gatewayCommands().Info(*req, node); err != nil {
			return nil, err
		}
		return wire.ItemsResult{Node: node}.TokenReader(), nil
	}
	return g.gatewayCommands().Items(*req).TokenReader(), nil
}

func endpointCommand(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	c, err := g.adhocService().Execute(ctx, *req)
	if err != nil {
		return nil, err
	}
	return c.TokenReader(), nil
}

// adhocNodeInfo and adhocNodeItems answer disco on an endpoint's command
// list and command nodes.
func adhocNodeInfo(g *Gateway, ctx context.Context, req *Request, node string) (xml.TokenReader, error) {
	info, err := g.adhocService().Info(ctx, *req, node)
	if err != nil {
		return nil, err
	}
	return info.TokenReader(), nil
}

func adhocNodeItems(g *Gateway, ctx context.Context, req *Request, node string) (xml.TokenReader, error) {
	if node != adhoc.NS {
		// A command node has no items; answer as for a missing one
		// after the same checks.
		if _, err := g.adhocService().Info(ctx, *req, node); err != nil {
			return nil, err
		}
		return wire.ItemsResult{Node: node}.TokenReader(), nil
	}
	items, err := g.adhocService().Items(ctx, *req)
	if err != nil {
		return nil, err
	}
	return items.TokenReader(), nil
}

// adhocTasks is adhoc.Tasks over the task service: every operation goes
// through the same entry points as the IQ protocol, with the wire element
// the protocol would carry, so that a command is exactly an invocation.
type adhocTasks struct{ svc *taskd.Service }

func (a adhocTasks) Hosts(endpoint string) bool { return a.svc.Hosts(endpoint) }

func (a adhocTasks) Manifest(ctx context.Context, endpoint, version string) (*manifest.Manifest, error) {
	return a.svc.Manifest(ctx, endpoint, version)
}

func (a adhocTasks) Invoke(ctx context.Context, pol *policy.Policy, from, to jid.JID, inv task.Invoke) (string, error) {
	el, err := element(inv.TokenReader())
	if err != nil {
		return "", err
	}
	adm, err := a.svc.Invoke(ctx, surface.Request{Type: stanza.SetIQ, Policy: pol, From: from, To: to, Payload: el})
	if err != nil {
		return "", err
	}
	if adm.Dispatch != nil {
		// No <accepted/> precedes the events here: the command response
		// is what the requester waits for.
		adm.Dispatch()
	}
	return adm.Accepted.TaskID, nil
}

func (a adhocTasks) Lookup(ctx context.Context, from, to jid.JID, requestID string) (task.Task, error) {
	return a.svc.TaskByRequest(ctx, from, to, requestID)
}

func (a adhocTasks) Progress(ctx context.Context, taskID string) (string, string, error) {
	return a.svc.LastProgress(ctx, taskID)
}

func (a adhocTasks) ProvideInput(ctx context.Context, from, to jid.JID, in task.ProvideInput) error {
	el, err := element(in.TokenReader())
	if err != nil {
		return err
	}
	_, err = a.svc.ProvideInput(ctx, surface.Request{Type: stanza.SetIQ, From: from, To: to, Payload: el})
	return err
}

func (a adhocTasks) Cancel(ctx context.Context, from, to jid.JID, c task.Cancel) error {
	el, err := element(c.TokenReader())
	if err != nil {
		return err
	}
	_, err = a.svc.Cancel(ctx, surface.Request{Type: stanza.SetIQ, From: from, To: to, Payload: el})
	return err
}

// element buffers the element r writes.
func element(r xml.TokenReader) (wire.Element, error) {
	tok, err := r.Token()
	if err != nil {
		return wire.Element{}, err
	}
	start, ok := tok.(xml.StartElement)
	if !ok {
		return wire.Element{}, errors.New("gateway: element: no start token")
	}
	el, err := wire.ReadElement(r, start, maxStanzaTokens, maxStanzaBytes)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return el, err
}
