package gateway_test

import (
	"context"
	"testing"

	"agentgw/api"
	"agentgw/config"
	"agentgw/policy"
)

// TestVersionsPerRegistrantQuota: a self-registrant keeps at most
// versions_per_registrant versions; the next new one gets
// <resource-constraint/>, an identical re-registration still succeeds, and
// every stored version is kept.
func TestVersionsPerRegistrantQuota(t *testing.T) {
	e := startWith(t, func(c *config.Config) { c.Quotas.VersionsPerRegistrant = 2 })
	e.gw.SetPolicy(apiPolicy(e, func(*policy.Policy) {}))
	const botJID = "bot@home.example"
	for _, v := range []string{"1", "2"} {
		if c := condition(e.apiIQ(bot, domain, "set", registerXML(selfManifest(botJID, v)))); c != "" {
			t.Fatalf("version %s: %s", v, c)
		}
	}
	if c := condition(e.apiIQ(bot, domain, "set", registerXML(selfManifest(botJID, "3")))); c != "resource-constraint" {
		t.Errorf("version past the quota: %q, want resource-constraint", c)
	}
	el := e.apiIQ(bot, domain, "set", registerXML(selfManifest(botJID, "1")))
	if r, err := api.ParseRegistered(payload(t, el)); err != nil || r.Version != "1" {
		t.Errorf("identical re-registration past the quota: %v %s", err, condition(el))
	}
	st, err := e.store.Status(context.Background(), botJID)
	if err != nil || len(st.Versions) != 2 {
		t.Errorf("stored versions %+v %v", st.Versions, err)
	}
}

// TestSubscriptionQuotas: past subscriptions_per_endpoint, or
// subscriptions_total, a new subscription gets a presence error
// <resource-constraint/> and nothing is stored; an existing subscription
// is still approved.
func TestSubscriptionQuotas(t *testing.T) {
	e := startWith(t, func(c *config.Config) {
		c.Quotas.SubscriptionsPerEndpoint, c.Quotas.SubscriptionsTotal = 1, 2
	})
	for _, ep := range []string{"a001", "a003", "a005"} {
		register(t, e.store, ep, ep, true)
	}
	// answer sends a subscribe and returns the type of the direct answer
	// (the presence that carries the request's id) and its condition.
	answer := func(from, ep, id string) (typ, cond string) {
		t.Helper()
		e.srv.sendPresence(from, ep+"@"+domain, "subscribe", id)
		for {
			el := e.srv.nextPresence()
			if got, _ := el.AttrValue("id"); got != id {
				continue // an available presence that follows an approval
			}
			typ, _ = el.AttrValue("type")
			return typ, condition(el)
		}
	}
	for _, tc := range []struct{ from, ep, typ, cond string }{
		{aliceBare, "a001", "subscribed", ""},
		{"dave@home.example", "a001", "error", "resource-constraint"}, // a001 is full
		{"dave@home.example", "a003", "subscribed", ""},
		{"erin@home.example", "a005", "error", "resource-constraint"}, // the gateway is full
		{aliceBare, "a001", "subscribed", ""},                         // existing: approved again
	} {
		typ, cond := answer(tc.from, tc.ep, "s-"+tc.ep+"-"+tc.from[:4])
		if typ != tc.typ || cond != tc.cond {
			t.Errorf("%s → %s: %s %s, want %s %s", tc.from, tc.ep, typ, cond, tc.typ, tc.cond)
		}
	}
	if subscribed(t, e.store, "a001@"+domain, "dave@home.example") || subscribed(t, e.store, "a005@"+domain, "erin@home.example") {
		t.Error("a refused subscription was stored")
	}
	if !subscribed(t, e.store, "a001@"+domain, aliceBare) || !subscribed(t, e.store, "a003@"+domain, "dave@home.example") {
		t.Error("a stored subscription was lost")
	}
}
