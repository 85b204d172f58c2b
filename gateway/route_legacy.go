package gateway

import (
	"context"
	"encoding/xml"

	"agentgw/legacy"
)

// endpointProfile resolves the endpoint first, so a hidden or nonexistent
// endpoint fails with the directory's one not-found error.
func endpointProfile(g *Gateway, ctx context.Context, req *Request) (legacy.Profile, error) {
	v, err := g.dir.Endpoint(ctx, req.Policy, req.From, req.To)
	if err != nil {
		return legacy.Profile{}, err
	}
	return legacy.ProfileOf(v)
}

func endpointVCardTemp(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	p, err := endpointProfile(g, ctx, req)
	if err != nil {
		return nil, err
	}
	return p.VCardTemp().TokenReader(), nil
}

func endpointVCard4(g *Gateway, ctx context.Context, req *Request) (xml.TokenReader, error) {
	p, err := endpointProfile(g, ctx, req)
	if err != nil {
		return nil, err
	}
	return p.VCard4().TokenReader(), nil
}
