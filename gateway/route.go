package gateway

import (
	"context"
	"encoding/xml"
	"fmt"
	"slices"

	"agentgw/adhoc"
	"agentgw/gateway/internal/hotpath"
	"agentgw/metrics"
	"agentgw/policy"
	"agentgw/surface"
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

// protocol is one protocol surface as the gateway routes it (surfaces.go
// lists them all): the IQs it answers at the gateway JID and at endpoint
// JIDs, and the disco features it advertises at each.
type protocol struct {
	// name says which surface it is, and which package, for a reader and
	// for the panic of a duplicate route.
	name              string
	gateway, endpoint []iqRoute
	gatewayFeatures   []string
	endpointFeatures  []string
	// policyFeatures, if set, are gateway features that depend on the
	// policy in force, computed for every disco#info so that they follow
	// a SIGHUP reload as the handlers do.
	policyFeatures func(*policy.Policy) []string
	// fromMemory marks a surface whose IQs are all hot reads the store
	// can answer from memory: the read loop tries each itself before a
	// worker (fastIQs, fastpath.go). A handler of such a surface must fail
	// with db.ErrWouldBlock before any work it cannot do from memory. Its
	// answer to a payload-less get may be kept by the read loop's memo
	// (memo.go), so it must depend on nothing but the stanza's addresses
	// and payload, the store's in-memory view, the policy and the task and
	// chat services (hotpath.State); anything else it reads must be fixed for
	// the gateway's lifetime.
	fromMemory bool
	// kinds is the metrics label (the kind of agentgw_iq_requests_total,
	// a contract listed in docs/deploy.md) of each payload namespace the
	// surface routes. Every namespace routed needs one (iqKinds panics).
	kinds map[string]string
}

// iqRoute is one IQ a surface answers: the IQ type, the payload's name,
// and the handler.
type iqRoute struct {
	typ  stanza.IQType
	name xml.Name
	h    iqHandler
}

var (
	nameDiscoInfo  = xml.Name{Space: wire.NSDiscoInfo, Local: "query"}
	nameDiscoItems = xml.Name{Space: wire.NSDiscoItems, Local: "query"}
)

// buildRoutes builds the routing tables and feature lists from surfaces.
func (g *Gateway) buildRoutes() {
	g.gatewayIQ, g.gatewayFeatures = routeTable(surfaces, "gateway",
		func(p protocol) ([]iqRoute, []string) { return p.gateway, p.gatewayFeatures })
	g.endpointIQ, g.endpointFeatures = routeTable(surfaces, "endpoint",
		func(p protocol) ([]iqRoute, []string) { return p.endpoint, p.endpointFeatures })
	g.policyFeatures = nil
	for _, p := range surfaces {
		if p.policyFeatures == nil {
			continue
		}
		if len(p.gateway) == 0 {
			panic("gateway: " + p.name + " has policy features but routes nothing at the gateway JID")
		}
		g.policyFeatures = append(g.policyFeatures, p.policyFeatures)
	}
}

// routeTable merges the routes and features of list at one kind of JID
// (at: "gateway" or "endpoint"). A route listed twice, or features where
// a surface routes nothing, is a programming error: it panics, so that a
// gateway with an ambiguous or dishonest table never starts.
func routeTable(list []protocol, at string, pick func(protocol) ([]iqRoute, []string)) (map[iqKey]iqHandler, []string) {
	table := map[iqKey]iqHandler{}
	owner := map[iqKey]string{}
	var fs [][]string
	for _, p := range list {
		routes, f := pick(p)
		if len(f) > 0 && len(routes) == 0 {
			panic(fmt.Sprintf("gateway: %s advertises %v at the %s JID but routes nothing there", p.name, f, at))
		}
		for _, r := range routes {
			k := iqKey{r.typ, r.name}
			if prev, dup := owner[k]; dup {
				panic(fmt.Sprintf("gateway: IQ %s {%s}%s routed twice at the %s JID, by %s and by %s",
					r.typ, r.name.Space, r.name.Local, at, prev, p.name))
			}
			owner[k], table[k] = p.name, r.h
		}
		fs = append(fs, f)
	}
	return table, features(fs...)
}

// metricsKinds are the metrics labels of list's namespaces (iqKinds) as
// the value metrics counts under; New puts them in force. A label metrics
// refuses is a programming error, like those iqKinds panics on.
func metricsKinds(list []protocol) metrics.IQKinds {
	k, err := metrics.NewIQKinds(iqKinds(list))
	if err != nil {
		panic("gateway: " + err.Error())
	}
	return k
}

// iqKinds is the metrics label of every payload namespace list routes,
// from each surface's kinds. A namespace routed without a label, a label
// for a namespace its surface does not route, and a namespace labelled by
// two surfaces are programming errors: they panic, at start, so that the
// table is the one list an IQ joins.
func iqKinds(list []protocol) map[string]string {
	kinds := map[string]string{}
	owner := map[string]string{}
	for _, p := range list {
		routed := map[string]bool{}
		for _, r := range append(slices.Clip(p.gateway), p.endpoint...) {
			routed[r.name.Space] = true
			if _, ok := p.kinds[r.name.Space]; !ok {
				panic(fmt.Sprintf("gateway: %s routes {%s}%s but gives its namespace no metrics kind", p.name, r.name.Space, r.name.Local))
			}
		}
		for ns, kind := range p.kinds {
			if !routed[ns] {
				panic(fmt.Sprintf("gateway: %s labels namespace %s (%s) but routes nothing in it", p.name, ns, kind))
			}
			if prev, dup := owner[ns]; dup {
				panic(fmt.Sprintf("gateway: namespace %s labelled by %s and by %s", ns, prev, p.name))
			}
			owner[ns], kinds[ns] = p.name, kind
		}
	}
	return kinds
}

// route answers one IQ get or set addressed to the gateway domain or to an
// endpoint under it. Anything unrouted gets service-unavailable, which does
// not depend on whether the addressed endpoint exists.
func (g *Gateway) route(ctx context.Context, req *Request) (xml.TokenReader, error) {
	req.Policy = g.Policy()
	to := req.To
	if to.Domainpart() != g.domain.Domainpart() || to.Resourcepart() != "" {
		return nil, surface.ErrServiceUnavailable
	}
	table := g.endpointIQ
	if to.Localpart() == "" {
		table = g.gatewayIQ
	}
	h, ok := table[iqKey{req.Type, req.Payload.Start.Name}]
	if !ok {
		return nil, surface.ErrServiceUnavailable
	}
	return h(g, ctx, req)
}

func gatewayDiscoInfo(g *Gateway, _ context.Context, req *Request) (xml.TokenReader, error) {
	node, _ := req.Payload.AttrValue("node")
	if adhoc.IsGatewayNode(node) {
		return gatewayCommandInfo(g, req, node)
	}
	lists := [][]string{g.gatewayFeatures}
	for _, f := range g.policyFeatures {
		lists = append(lists, f(req.Policy))
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
	items, err := g.dir.Items(ctx, *req, node)
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
	// The visibility decision: only a visible endpoint has info to keep
	// built (hotpath.Visible).
	vis, err := hotpath.Decided(g.dir.EndpointSummary(ctx, req.Policy, req.From, req.To))
	if err != nil {
		return nil, err
	}
	v := vis.Version()
	tf, err := g.taskEndpointFeatures(ctx, v)
	if err != nil {
		return nil, err
	}
	// The command features depend on the requester: they are part of the
	// info cache's key, beside the task features (infocache.go).
	af, err := g.adhocEndpointFeatures(ctx, req, v)
	if err != nil {
		return nil, err
	}
	// So do the chat features (chat.go), shown only to who may chat.
	return g.endpointInfo(vis, features(tf, af, g.chatFeatures(req))), nil
}

func endpointDiscoItems(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	if node, _ := req.Payload.AttrValue("node"); node != "" {
		if adhoc.IsCommandNode(node) {
			return adhocNodeItems(g, ctx, req, node)
		}
		return endpointNodeItems(g, ctx, req, node)
	}
	if _, err := g.dir.EndpointSummary(ctx, req.Policy, req.From, req.To); err != nil {
		return nil, err
	}
	return wire.ItemsResult{}.TokenReader(), nil
}

// gatewayPing answers an XEP-0199 ping at the gateway JID.
func gatewayPing(*Gateway, context.Context, *Request) (xml.TokenReader, error) { return nil, nil }

// endpointPing answers an XEP-0199 ping at a visible endpoint; at a hidden
// or nonexistent one it fails like a missing one.
func endpointPing(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	_, err := g.dir.EndpointSummary(ctx, req.Policy, req.From, req.To)
	return nil, err
}
