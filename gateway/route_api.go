package gateway

import (
	"context"
	"encoding/xml"

	"agentgw/api"
)

// apiService is the agent API over this gateway's store and directory. It
// holds no state of its own (parsed manifests are cached by hash inside
// package api), so one per request costs nothing.
func (g *Gateway) apiService() *api.Service {
	return &api.Service{
		Store:  g.store,
		Dir:    g.dir,
		Domain: g.domain,
		// The hook for the task layer: the task features it implements,
		// set per endpoint by endpointNodeInfo (route_task.go).
		TaskFeatures:    nil,
		MaxSelfVersions: g.opts.VersionsPerRegistrant,
	}
}

// apiHandler adapts a handler of package api to the routing table.
func apiHandler(h func(*api.Service, context.Context, api.Request) (xml.TokenReader, error)) iqHandler {
	return func(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
		return h(g.apiService(), ctx, *req)
	}
}

// provisioning is apiHandler for the operations that change the store, which
// are logged when they succeed: who did what to which endpoint.
func provisioning(h func(*api.Service, context.Context, api.Request) (xml.TokenReader, error)) iqHandler {
	return func(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
		res, err := h(g.apiService(), ctx, *req)
		if err == nil {
			endpoint, _ := req.Payload.AttrValue("jid")
			g.log.Info("provisioning", "op", req.Payload.Start.Name.Local, "from", req.From.Bare().String(), "jid", endpoint)
		}
		return res, err
	}
}

// endpointNodeInfo answers disco#info on a node of an endpoint: tool
// collection and tool nodes (package api); anything else is item-not-found.
func endpointNodeInfo(g *Gateway, ctx context.Context, req *Request, node string) (xml.TokenReader, error) {
	svc := g.apiService()
	svc.TaskFeatures = g.taskToolFeatures(req.To)
	info, err := svc.NodeInfo(ctx, *req, node)
	if err != nil {
		return nil, err
	}
	return info.TokenReader(), nil
}

// endpointNodeItems answers disco#items on a node of an endpoint.
func endpointNodeItems(g *Gateway, ctx context.Context, req *Request, node string) (xml.TokenReader, error) {
	items, err := g.apiService().NodeItems(ctx, *req, node)
	if err != nil {
		return nil, err
	}
	return items.TokenReader(), nil
}
