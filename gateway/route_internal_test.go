package gateway

import (
	"context"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"testing"

	"agentgw/ping"

	"mellium.im/xmpp/stanza"
)

// TestSurfacesBuild checks that the surface list builds: no route twice,
// no feature without a route, and every listed route is in the tables.
func TestSurfacesBuild(t *testing.T) {
	g := &Gateway{}
	g.buildRoutes()
	n := 0
	for _, p := range surfaces {
		for _, r := range p.gateway {
			if g.gatewayIQ[iqKey{r.typ, r.name}] == nil {
				t.Errorf("%s: %s %v not routed at the gateway", p.name, r.typ, r.name)
			}
			n++
		}
		for _, r := range p.endpoint {
			if g.endpointIQ[iqKey{r.typ, r.name}] == nil {
				t.Errorf("%s: %s %v not routed at endpoints", p.name, r.typ, r.name)
			}
			n++
		}
	}
	if n != len(g.gatewayIQ)+len(g.endpointIQ) {
		t.Errorf("%d routes listed, %d in the tables", n, len(g.gatewayIQ)+len(g.endpointIQ))
	}
	if !slices.Contains(g.endpointFeatures, ping.NS) || !slices.Contains(g.gatewayFeatures, ping.NS) {
		t.Errorf("ping is routed everywhere but not advertised: %v / %v", g.gatewayFeatures, g.endpointFeatures)
	}
}

// TestDuplicateRoutePanics checks that a route listed twice stops the
// gateway from starting, naming both surfaces, instead of one silently
// replacing the other.
func TestDuplicateRoutePanics(t *testing.T) {
	dup := protocol{name: "a second ping", endpoint: []iqRoute{{stanza.GetIQ, ping.Name, endpointPing}}}
	wantPanic(t, "routed twice at the endpoint JID, by XEP-0199 ping (package ping) and by a second ping", func() {
		routeTable(append(slices.Clone(surfaces), dup), "endpoint",
			func(p protocol) ([]iqRoute, []string) { return p.endpoint, p.endpointFeatures })
	})
}

// TestFeatureWithoutRoutePanics checks that a surface cannot advertise a
// feature where it routes nothing.
func TestFeatureWithoutRoutePanics(t *testing.T) {
	liar := protocol{name: "liar", gatewayFeatures: []string{"urn:example:nothing"}}
	wantPanic(t, "liar advertises [urn:example:nothing] at the gateway JID but routes nothing there", func() {
		routeTable([]protocol{liar}, "gateway",
			func(p protocol) ([]iqRoute, []string) { return p.gateway, p.gatewayFeatures })
	})
	ok := protocol{name: "honest", gateway: []iqRoute{{stanza.GetIQ, xml.Name{Space: "urn:example", Local: "q"},
		func(*Gateway, context.Context, *Request) (xml.TokenReader, error) { return nil, nil }}},
		gatewayFeatures: []string{"urn:example"}}
	if _, f := routeTable([]protocol{ok}, "gateway", func(p protocol) ([]iqRoute, []string) { return p.gateway, p.gatewayFeatures }); !slices.Equal(f, []string{"urn:example"}) {
		t.Errorf("features = %v", f)
	}
}

func wantPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
			t.Errorf("panic = %v, want one containing %q", r, want)
		}
	}()
	f()
}
