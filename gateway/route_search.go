package gateway

import (
	"context"
	"encoding/xml"

	"agentgw/search"
)

// searchFields answers a search get at the gateway JID: the search form.
func searchFields(*Gateway, context.Context, *Request) (xml.TokenReader, error) {
	return search.GatewayFields().TokenReader(), nil
}

// searchSubmit answers a search set at the gateway JID (package search).
func searchSubmit(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	svc := search.Service{Store: g.store, PageMax: g.opts.PageMax}
	res, err := svc.Search(ctx, *req)
	if err != nil {
		return nil, err
	}
	return res.TokenReader(), nil
}
