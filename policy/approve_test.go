package policy_test

import (
	"testing"

	"agentgw/policy"

	"mellium.im/xmpp/jid"
)

func TestApprovedFailsClosed(t *testing.T) {
	alice := jid.MustParse("alice@example.org/x")
	var nilPolicy *policy.Policy
	if nilPolicy.Approved(alice, "e@agents.example", "t", true, nil) {
		t.Error("a nil policy approves")
	}
	if !nilPolicy.Approved(alice, "e@agents.example", "t", false, nil) {
		t.Error("a tool without declarations needs approval")
	}
	p := &policy.Policy{
		Invoke: []policy.Grant{{Principals: []policy.Principal{mustPrincipal(t, "example.org")}, AllEndpoints: true, AllTools: true}},
	}
	if !p.CanInvoke(alice, "e@agents.example", "t") {
		t.Fatal("invoke grant not applied")
	}
	if p.Approved(alice, "e@agents.example", "t", true, nil) {
		t.Error(`an invoke grant of "*" approves`)
	}
	if p.Approved(alice, "e@agents.example", "t", false, []string{"p"}) {
		t.Error(`an invoke grant of "*" vouches for a permission`)
	}
	p.Approve = []policy.Grant{{Principals: []policy.Principal{mustPrincipal(t, "alice@example.org")}, Endpoints: []string{"e@agents.example"}, AllTools: true, AllPermissions: true}}
	if !p.Approved(alice, "e@agents.example", "t", true, []string{"p", "q"}) {
		t.Error("approve grant not applied")
	}
	if p.Approved(alice, "other@agents.example", "t", true, nil) {
		t.Error("approve grant applied to another endpoint")
	}
}
