package gateway

import (
	"context"
	"encoding/xml"

	"agentgw/search"

	"mellium.im/xmpp/stanza"
)

func init() {
	surfaces = append(surfaces, searchSurface)
}

// searchSurface is the Jabber Search Compatibility profile (package search):
// XEP-0055 at the gateway JID only. At an endpoint JID a search is not
// routed, so it gets service-unavailable whether the endpoint exists or not.
func searchSurface() protocol {
	return protocol{
		gatewayIQ: map[iqKey]iqHandler{
			{stanza.GetIQ, search.Name}: searchFields,
			{stanza.SetIQ, search.Name}: searchSubmit,
		},
		gatewayFeatures: search.Features,
	}
}

func searchFields(*Gateway, context.Context, *Request) (xml.TokenReader, error) {
	return search.GatewayFields().TokenReader(), nil
}

func searchSubmit(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	svc := search.Service{Store: g.store, PageMax: g.cfg.PageMax}
	res, err := svc.Search(ctx, *req)
	if err != nil {
		return nil, err
	}
	return res.TokenReader(), nil
}
