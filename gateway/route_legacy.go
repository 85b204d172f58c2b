package gateway

import (
	"context"
	"encoding/xml"

	"agentgw/legacy"

	"mellium.im/xmpp/stanza"
)

func init() {
	surfaces = append(surfaces, vcardSurface)
}

// vcardSurface answers XEP-0054 vcard-temp and XEP-0292 vCard4 gets at
// endpoints with the endpoint's public profile (package legacy). The gateway
// JID has no profile, so nothing is routed or advertised there. A set is not
// routed (service-unavailable, whatever the endpoint): profiles come from
// manifests only.
func vcardSurface() protocol {
	return protocol{
		endpointIQ: map[iqKey]iqHandler{
			{stanza.GetIQ, legacy.NameVCardTemp}: endpointVCardTemp,
			{stanza.GetIQ, legacy.NameVCard4}:    endpointVCard4,
		},
		endpointFeatures: legacy.VCardFeatures,
	}
}

// endpointProfile resolves the endpoint first, so a hidden or nonexistent
// endpoint fails with the directory's one not-found error.
func endpointProfile(g *Gateway, ctx context.Context, req *Request) (legacy.Profile, error) {
	v, err := g.dir.Endpoint(ctx, g.Policy(), req.From, req.To)
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
