package gateway

import (
	"context"
	"encoding/xml"

	"agentgw/directory"
	"agentgw/ping"
	"agentgw/wire"

	"mellium.im/xmpp/stanza"
)

var (
	nameDiscoInfo  = xml.Name{Space: wire.NSDiscoInfo, Local: "query"}
	nameDiscoItems = xml.Name{Space: wire.NSDiscoItems, Local: "query"}
)

// route answers one IQ get or set. It returns the result payload, or an
// error that replyError turns into the wire error.
func (g *Gateway) route(ctx context.Context, req *Request) (xml.TokenReader, error) {
	to := req.To
	if to.Domainpart() != g.domain.Domainpart() || to.Resourcepart() != "" {
		return nil, errServiceUnavailable
	}
	if to.Localpart() == "" {
		return g.routeGateway(ctx, req)
	}
	return g.routeEndpoint(ctx, req)
}

// routeGateway answers IQs to the gateway domain.
func (g *Gateway) routeGateway(ctx context.Context, req *Request) (xml.TokenReader, error) {
	node, _ := req.Payload.AttrValue("node")
	switch {
	case req.Type == stanza.GetIQ && req.Payload.Start.Name == nameDiscoInfo:
		info, err := g.dir.GatewayInfo(node, g.gatewayFeatures)
		if err != nil {
			return nil, err
		}
		return info.TokenReader(), nil
	case req.Type == stanza.GetIQ && req.Payload.Start.Name == nameDiscoItems:
		items, err := g.dir.Items(ctx, g.Policy(), req.From, node, req.Payload)
		if err != nil {
			return nil, err
		}
		return items.TokenReader(), nil
	case req.Type == stanza.GetIQ && req.Payload.Start.Name == ping.Name:
		return nil, nil
	}
	return nil, errServiceUnavailable
}

// routeEndpoint answers IQs to an endpoint JID. Every known request first
// resolves the endpoint through directory.Service.Endpoint, which fails the
// same way for hidden and nonexistent endpoints.
func (g *Gateway) routeEndpoint(ctx context.Context, req *Request) (xml.TokenReader, error) {
	if req.Type != stanza.GetIQ {
		return nil, errServiceUnavailable
	}
	node, _ := req.Payload.AttrValue("node")
	switch req.Payload.Start.Name {
	case nameDiscoInfo:
		v, err := g.dir.Endpoint(ctx, g.Policy(), req.From, req.To)
		if err != nil {
			return nil, err
		}
		if node != "" {
			return nil, directory.ErrNotFound
		}
		return g.dir.EndpointInfo(v, g.endpointFeatures).TokenReader(), nil
	case nameDiscoItems:
		if _, err := g.dir.Endpoint(ctx, g.Policy(), req.From, req.To); err != nil {
			return nil, err
		}
		if node != "" {
			return nil, directory.ErrNotFound
		}
		return wire.ItemsResult{}.TokenReader(), nil
	case ping.Name:
		if _, err := g.dir.Endpoint(ctx, g.Policy(), req.From, req.To); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return nil, errServiceUnavailable
}
