package policy_test

import (
	"testing"

	"agentgw/policy"

	"mellium.im/xmpp/jid"
)

// TestChatGrants: a chat grant names principals and endpoints, grants
// nothing else, and nothing else grants chat.
func TestChatGrants(t *testing.T) {
	alice := jid.MustParse("alice@home.example/phone")
	carol := jid.MustParse("carol@remote.example/laptop")
	var nilPolicy *policy.Policy
	if nilPolicy.CanChat(alice, "demo@agents.example") {
		t.Fatal("nil policy granted chat")
	}
	p := &policy.Policy{
		Visibility: []policy.Grant{{Principals: []policy.Principal{mustPrincipal(t, "remote.example")}, AllEndpoints: true}},
		Invoke:     []policy.Grant{{Principals: []policy.Principal{mustPrincipal(t, "remote.example")}, AllEndpoints: true, AllTools: true}},
		Chat: []policy.Grant{
			{Principals: []policy.Principal{mustPrincipal(t, "home.example")}, Endpoints: []string{"demo@agents.example"}},
		},
	}
	if !p.CanChat(alice, "demo@agents.example") {
		t.Error("alice may not chat with demo")
	}
	if p.CanChat(alice, "other@agents.example") {
		t.Error("alice may chat with an endpoint the grant does not list")
	}
	if p.CanChat(carol, "demo@agents.example") {
		t.Error("visibility and invoke grants granted chat")
	}
	if p.CanSee(alice, "demo@agents.example") || p.CanInvoke(alice, "demo@agents.example", "echo") {
		t.Error("a chat grant granted visibility or invocation")
	}
}
