package gateway

import (
	"context"
	"encoding/xml"

	"agentgw/adhoc"
	"agentgw/directory"
	"agentgw/ping"
	"agentgw/policy"
	"agentgw/wire"

	"mellium.im/xmpp/stanza"
)

// iqKey selects an IQ handler: the IQ type and the payload's name.
type iqKey struct {
	typ  stanza.IQType
	name xml.Name
}

// iqHandler answers one IQ get or set with a result payload (nil for an
// empty result) or an error, which replyError turns into the wire error.
type iqHandler func(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error)

// surface is one protocol surface as the gateway routes it: its IQ handlers
// at the gateway JID and at endpoint JIDs, and the disco features it adds to
// each. Keeping features beside handlers means nothing is advertised that is
// not routed. Each surface lives in its own route_*.go file.
type surface struct {
	gatewayIQ        map[iqKey]iqHandler
	endpointIQ       map[iqKey]iqHandler
	gatewayFeatures  []string
	endpointFeatures []string
}

var (
	nameDiscoInfo  = xml.Name{Space: wire.NSDiscoInfo, Local: "query"}
	nameDiscoItems = xml.Name{Space: wire.NSDiscoItems, Local: "query"}
)

// surfaces lists every protocol surface the gateway serves. Each route_*.go
// file adds its own from an init function, so surfaces do not share code.
var surfaces []func() surface

// policyFeatures lists the gateway features that depend on the policy in
// force (admins configured, self-registration on). They are computed for
// every disco#info, so they follow a SIGHUP reload as the handlers do.
var policyFeatures []func(*policy.Policy) []string

func init() {
	surfaces = append(surfaces, coreDirectory, pingSurface)
}

// buildRoutes merges the surfaces into the routing tables and feature
// lists.
func (g *Gateway) buildRoutes() {
	g.gatewayIQ = map[iqKey]iqHandler{}
	g.endpointIQ = map[iqKey]iqHandler{}
	var gf, ef [][]string
	for _, mk := range surfaces {
		s := mk()
		for k, h := range s.gatewayIQ {
			g.gatewayIQ[k] = h
		}
		for k, h := range s.endpointIQ {
			g.endpointIQ[k] = h
		}
		gf = append(gf, s.gatewayFeatures)
		ef = append(ef, s.endpointFeatures)
	}
	g.gatewayFeatures = features(gf...)
	g.endpointFeatures = features(ef...)
}

// route answers one IQ get or set addressed to the gateway domain or to an
// endpoint under it. Anything unrouted gets service-unavailable, which does
// not depend on whether the addressed endpoint exists.
func (g *Gateway) route(ctx context.Context, req *Request) (xml.TokenReader, error) {
	to := req.To
	if to.Domainpart() != g.domain.Domainpart() || to.Resourcepart() != "" {
		return nil, errServiceUnavailable
	}
	table := g.endpointIQ
	if to.Localpart() == "" {
		table = g.gatewayIQ
	}
	h, ok := table[iqKey{req.Type, req.Payload.Start.Name}]
	if !ok {
		return nil, errServiceUnavailable
	}
	return h(g, ctx, req)
}

// coreDirectory is the Core Directory profile (package directory).
func coreDirectory() surface {
	return surface{
		gatewayIQ: map[iqKey]iqHandler{
			{stanza.GetIQ, nameDiscoInfo}:  gatewayDiscoInfo,
			{stanza.GetIQ, nameDiscoItems}: gatewayDiscoItems,
		},
		endpointIQ: map[iqKey]iqHandler{
			{stanza.GetIQ, nameDiscoInfo}:  endpointDiscoInfo,
			{stanza.GetIQ, nameDiscoItems}: endpointDiscoItems,
		},
		gatewayFeatures:  directory.GatewayFeatures,
		endpointFeatures: directory.EndpointFeatures,
	}
}

func gatewayDiscoInfo(g *Gateway, _ context.Context, req *Request) (xml.TokenReader, error) {
	node, _ := req.Payload.AttrValue("node")
	if adhoc.IsGatewayNode(node) {
		return gatewayCommandInfo(g, req, node)
	}
	lists := [][]string{g.gatewayFeatures}
	for _, f := range policyFeatures {
		lists = append(lists, f(g.Policy()))
	}
	info, err := g.dir.GatewayInfo(node, features(lists...))
	if err != nil {
		return nil, err
	}
	return info.TokenReader(), nil
}

func gatewayDiscoItems(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	node, _ := req.Payload.AttrValue("node")
	if adhoc.IsGatewayNode(node) {
		return gatewayCommandItems(g, req, node)
	}
	items, err := g.dir.Items(ctx, g.Policy(), req.From, node, req.Payload)
	if err != nil {
		return nil, err
	}
	return items.TokenReader(), nil
}

// endpointDiscoInfo answers node-less disco#info with the endpoint info, and
// hands any node to the agent API (tool collection and tool nodes,
// route_api.go), where every other node is item-not-found. Both resolve the
// endpoint first, so a hidden or nonexistent endpoint fails identically
// whatever the node.
func endpointDiscoInfo(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	if node, _ := req.Payload.AttrValue("node"); node != "" {
		if adhoc.IsCommandNode(node) {
			return adhocNodeInfo(g, ctx, req, node)
		}
		return endpointNodeInfo(g, ctx, req, node)
	}
	v, err := g.dir.EndpointSummary(ctx, g.Policy(), req.From, req.To)
	if err != nil {
		return nil, err
	}
	tf, err := g.taskEndpointFeatures(ctx, v)
	if err != nil {
		return nil, err
	}
	// The command features depend on the requester: they are part of the
	// info cache's key, beside the task features (infocache.go).
	af, err := g.adhocEndpointFeatures(ctx, req)
	if err != nil {
		return nil, err
	}
	return g.endpointInfo(v, features(tf, af)), nil
}

func endpointDiscoItems(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	if node, _ := req.Payload.AttrValue("node"); node != "" {
		if adhoc.IsCommandNode(node) {
			return adhocNodeItems(g, ctx, req, node)
		}
		return endpointNodeItems(g, ctx, req, node)
	}
	if _, err := g.dir.EndpointSummary(ctx, g.Policy(), req.From, req.To); err != nil {
		return nil, err
	}
	return wire.ItemsResult{}.TokenReader(), nil
}

// pingSurface answers XEP-0199 pings at the gateway and at visible
// endpoints; at a hidden or nonexistent endpoint it fails like a missing one.
func pingSurface() surface {
	return surface{
		gatewayIQ: map[iqKey]iqHandler{
			{stanza.GetIQ, ping.Name}: func(*Gateway, context.Context, *Request) (xml.TokenReader, error) { return nil, nil },
		},
		endpointIQ: map[iqKey]iqHandler{
			{stanza.GetIQ, ping.Name}: func(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
				_, err := g.dir.EndpointSummary(ctx, g.Policy(), req.From, req.To)
				return nil, err
			},
		},
		gatewayFeatures:  ping.Features,
		endpointFeatures: ping.Features,
	}
}
