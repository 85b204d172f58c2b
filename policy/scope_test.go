package policy_test

import (
	"reflect"
	"testing"

	"agentgw/policy"

	"mellium.im/xmpp/jid"
)

// TestVisibleScopeMemo: a listed scope is the same however often it is
// asked for and from whichever resource, and a copy of a policy that is
// then edited answers from its own grants, not from the original's memo.
func TestVisibleScopeMemo(t *testing.T) {
	p := &policy.Policy{Visibility: []policy.Grant{
		{Principals: []policy.Principal{{JID: "carol@remote.example"}}, Endpoints: []string{"b@agents.example", "a@agents.example"}},
		{Principals: []policy.Principal{{Domain: "remote.example"}}, Endpoints: []string{"c@agents.example", "a@agents.example"}},
		{Principals: []policy.Principal{{Domain: "home.example"}}, AllEndpoints: true},
	}}
	want := policy.Scope{JIDs: []string{"a@agents.example", "b@agents.example", "c@agents.example"}}
	for _, r := range []string{"carol@remote.example/x", "carol@remote.example/y", "carol@remote.example"} {
		if got := p.VisibleScope(jid.MustParse(r)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", r, got, want)
		}
	}
	if got := p.VisibleScope(jid.MustParse("dave@remote.example")); !reflect.DeepEqual(got, policy.Scope{JIDs: []string{"a@agents.example", "c@agents.example"}}) {
		t.Errorf("dave: %+v", got)
	}
	if got := p.VisibleScope(jid.MustParse("alice@home.example")); !got.All {
		t.Errorf("alice: %+v", got)
	}
	if got := p.VisibleScope(jid.MustParse("mallory@evil.example")); got.All || len(got.JIDs) != 0 {
		t.Errorf("mallory: %+v", got)
	}

	cp := *p
	cp.Visibility = []policy.Grant{{Principals: []policy.Principal{{JID: "carol@remote.example"}}, Endpoints: []string{"z@agents.example"}}}
	if got := cp.VisibleScope(jid.MustParse("carol@remote.example")); !reflect.DeepEqual(got, policy.Scope{JIDs: []string{"z@agents.example"}}) {
		t.Errorf("edited copy: %+v", got)
	}
	if got := p.VisibleScope(jid.MustParse("carol@remote.example")); !reflect.DeepEqual(got, want) {
		t.Errorf("original after the copy: %+v", got)
	}
}
