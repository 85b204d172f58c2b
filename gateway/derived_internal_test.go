package gateway

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"agentgw/metrics"
	"agentgw/ping"
	"agentgw/search"

	"mellium.im/xmpp/stanza"
)

// TestFastIQsFromSurfaces: the read loop tries exactly the hot reads it
// tried when fastIQs was a list of its own (disco#info and #items, a
// search form and a search, a ping), now derived from the surfaces marked
// fromMemory, and nothing that needs a worker.
func TestFastIQsFromSurfaces(t *testing.T) {
	want := map[iqKey]bool{
		{stanza.GetIQ, nameDiscoInfo}:  true,
		{stanza.GetIQ, nameDiscoItems}: true,
		{stanza.GetIQ, search.Name}:    true,
		{stanza.SetIQ, search.Name}:    true,
		{stanza.GetIQ, ping.Name}:      true,
	}
	if !maps.Equal(fastIQs, want) {
		t.Errorf("fastIQs = %v, want %v", fastIQs, want)
	}
}

// TestMemoryReadConflictPanics: a payload one surface answers from memory
// and another routes to a worker stops the start.
func TestMemoryReadConflictPanics(t *testing.T) {
	slow := protocol{name: "a slow ping", gateway: []iqRoute{{stanza.GetIQ, ping.Name, gatewayPing}}, kinds: map[string]string{ping.NS: "ping"}}
	wantPanic(t, "answered from memory by one surface and by a worker in another (a slow ping)", func() {
		memoryReads(append(slices.Clone(surfaces), slow))
	})
}

// TestIQKindsMatchDeploy: the metrics kinds the surfaces give are the
// ones docs/deploy.md lists for agentgw_iq_requests_total (a contract
// dashboards rely on), and metrics counts every routed namespace under
// its own once a gateway is constructed.
func TestIQKindsMatchDeploy(t *testing.T) {
	b, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `agentgw_iq_requests_total") {
			row = line
		}
	}
	_, list, _ := strings.Cut(row, "by protocol (")
	list, _, _ = strings.Cut(list, ")")
	var documented []string
	for _, m := range regexp.MustCompile("`([a-z0-9_]+)`").FindAllStringSubmatch(list, -1) {
		documented = append(documented, m[1])
	}
	derived := append(slices.Collect(maps.Values(iqKinds(surfaces))), "other")
	slices.Sort(documented)
	slices.Sort(derived)
	if len(documented) < 2 || !slices.Equal(documented, derived) {
		t.Errorf("docs/deploy.md lists kinds %v; the surfaces give %v", documented, derived)
	}
	// Constructing a gateway puts the surfaces' kinds in force.
	New(Options{}, nil, nil)
	for ns, kind := range iqKinds(surfaces) {
		before := metrics.IQRequests.Value(kind, "result")
		metrics.IQ(ns, nil, -1)
		if got := metrics.IQRequests.Value(kind, "result"); got != before+1 {
			t.Errorf("an IQ in %s: %s/result = %d, want %d", ns, kind, got, before+1)
		}
	}
}

// TestUnlabelledNamespacePanics: a surface that routes a namespace without
// a metrics kind, or labels one it does not route, stops the start.
func TestUnlabelledNamespacePanics(t *testing.T) {
	bare := protocol{name: "bare", gateway: []iqRoute{{stanza.GetIQ, ping.Name, gatewayPing}}}
	wantPanic(t, "bare routes {urn:xmpp:ping}ping but gives its namespace no metrics kind", func() { iqKinds([]protocol{bare}) })
	extra := protocol{name: "extra", gateway: []iqRoute{{stanza.GetIQ, ping.Name, gatewayPing}},
		kinds: map[string]string{ping.NS: "ping", "urn:example:x": "x"}}
	wantPanic(t, "extra labels namespace urn:example:x (x) but routes nothing in it", func() { iqKinds([]protocol{extra}) })
	twice := protocol{name: "twice", endpoint: []iqRoute{{stanza.GetIQ, ping.Name, endpointPing}}, kinds: map[string]string{ping.NS: "ping"}}
	wantPanic(t, "namespace urn:xmpp:ping labelled by XEP-0199 ping (package ping) and by twice", func() {
		iqKinds(append(slices.Clone(surfaces), twice))
	})
}
