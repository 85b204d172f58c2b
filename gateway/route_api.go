package gateway

import (
	"context"
	"encoding/xml"

	"agentgw/api"

	"mellium.im/xmpp/stanza"
)

func init() {
	surfaces = append(surfaces, agentAPI)
	policyFeatures = append(policyFeatures, api.GatewayFeatures)
}

// agentAPI is the urn:xmpp:agent-api:0 surface (package api): manifest and
// schema retrieval at endpoints, provisioning and self-registration at the
// gateway. Tool collection and tool nodes arrive through the endpoint's
// disco handlers (route.go). The gateway's #admin and #self-register
// features depend on the policy and are added per request (policyFeatures).
func agentAPI() surface {
	return surface{
		gatewayIQ: map[iqKey]iqHandler{
			{stanza.SetIQ, api.NameRegister}:           provisioning((*api.Service).Register),
			{stanza.SetIQ, api.NameActivate}:           provisioning((*api.Service).Activate),
			{stanza.SetIQ, api.NameDeactivate}:         provisioning((*api.Service).Deactivate),
			{stanza.GetIQ, api.NameRegistrationStatus}: apiHandler((*api.Service).RegistrationStatus),
			{stanza.SetIQ, api.NameRemoveVersion}:      provisioning((*api.Service).RemoveVersion),
			{stanza.SetIQ, api.NameRemoveEndpoint}:     provisioning((*api.Service).RemoveEndpoint),
		},
		endpointIQ: map[iqKey]iqHandler{
			{stanza.GetIQ, api.NameManifestRequest}: apiHandler((*api.Service).ManifestRequest),
			{stanza.GetIQ, api.NameSchemaRequest}:   apiHandler((*api.Service).SchemaRequest),
		},
		endpointFeatures: api.EndpointFeatures,
	}
}

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
		MaxSelfVersions: g.cfg.Quotas.VersionsPerRegistrant,
	}
}

func (g *Gateway) apiRequest(req *Request) api.Request {
	return api.Request{Policy: g.Policy(), From: req.From, To: req.To, Payload: req.Payload}
}

// apiHandler adapts a handler of package api to the routing table.
func apiHandler(h func(*api.Service, context.Context, api.Request) (xml.TokenReader, error)) iqHandler {
	return func(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
		return h(g.apiService(), ctx, g.apiRequest(req))
	}
}

// provisioning is apiHandler for the operations that change the store, which
// are logged when they succeed: who did what to which endpoint.
func provisioning(h func(*api.Service, context.Context, api.Request) (xml.TokenReader, error)) iqHandler {
	return func(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
		res, err := h(g.apiService(), ctx, g.apiRequest(req))
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
	info, err := svc.NodeInfo(ctx, g.apiRequest(req), node)
	if err != nil {
		return nil, err
	}
	return info.TokenReader(), nil
}

// endpointNodeItems answers disco#items on a node of an endpoint.
func endpointNodeItems(g *Gateway, ctx context.Context, req *Request, node string) (xml.TokenReader, error) {
	items, err := g.apiService().NodeItems(ctx, g.apiRequest(req), node)
	if err != nil {
		return nil, err
	}
	return items.TokenReader(), nil
}
