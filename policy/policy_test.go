package policy_test

import (
	"reflect"
	"testing"

	"agentgw/policy"
	"mellium.im/xmpp/jid"
)

func mustPrincipal(t *testing.T, s string) policy.Principal {
	t.Helper()
	p, err := policy.ParsePrincipal(s)
	if err != nil {
		t.Fatalf("ParsePrincipal(%q): %v", s, err)
	}
	return p
}

func TestZeroPolicyDenies(t *testing.T) {
	var p *policy.Policy
	alice := jid.MustParse("alice@example.org/phone")
	if p.CanSee(alice, "weather@agents.example") || p.CanInvoke(alice, "weather@agents.example", "x") || p.IsAdmin(alice) {
		t.Fatal("nil policy granted something")
	}
	if got := p.VisibleScope(alice); got.All || len(got.JIDs) != 0 {
		t.Fatalf("nil policy scope = %+v", got)
	}
	var zero policy.Policy
	if zero.CanSee(alice, "weather@agents.example") {
		t.Fatal("zero policy granted visibility")
	}
}

func TestGrants(t *testing.T) {
	p := &policy.Policy{
		Admins: []string{"admin@example.org"},
		Visibility: []policy.Grant{
			{Principals: []policy.Principal{mustPrincipal(t, "example.org")}, AllEndpoints: true},
			{Principals: []policy.Principal{mustPrincipal(t, "Carol@Remote.Example")}, Endpoints: []string{"b@agents.example", "a@agents.example"}},
			{Principals: []policy.Principal{mustPrincipal(t, "carol@remote.example")}, Endpoints: []string{"a@agents.example"}},
		},
		Invoke: []policy.Grant{
			{Principals: []policy.Principal{mustPrincipal(t, "example.org")}, Endpoints: []string{"weather@agents.example"}, Tools: []string{"forecast.get"}},
		},
	}
	alice := jid.MustParse("alice@example.org/phone")
	carol := jid.MustParse("carol@remote.example/laptop")
	dave := jid.MustParse("dave@remote.example")
	sub := jid.MustParse("eve@sub.example.org")

	if !p.CanSee(alice, "anything@agents.example") {
		t.Error("domain grant with * should cover every endpoint")
	}
	if p.CanSee(sub, "anything@agents.example") {
		t.Error("a domain principal must not match subdomains")
	}
	if !p.CanSee(carol, "a@agents.example") || p.CanSee(carol, "c@agents.example") {
		t.Error("JID grant wrong")
	}
	if p.CanSee(dave, "a@agents.example") {
		t.Error("other remote user sees")
	}
	if got, want := p.VisibleScope(carol), (policy.Scope{JIDs: []string{"a@agents.example", "b@agents.example"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("scope = %+v, want %+v", got, want)
	}
	if got := p.VisibleScope(alice); !got.All {
		t.Errorf("alice scope = %+v", got)
	}
	if !p.CanInvoke(alice, "weather@agents.example", "forecast.get") {
		t.Error("invoke grant not applied")
	}
	if p.CanInvoke(alice, "weather@agents.example", "forecast.set") || p.CanInvoke(carol, "a@agents.example", "x") {
		t.Error("invoke granted beyond grant")
	}
	if !p.IsAdmin(jid.MustParse("admin@example.org/console")) || p.IsAdmin(alice) || p.IsAdmin(jid.MustParse("example.org")) {
		t.Error("admin check wrong")
	}
}

func TestParsePrincipal(t *testing.T) {
	if _, err := policy.ParsePrincipal("a@b/c"); err == nil {
		t.Error("resource accepted")
	}
	if _, err := policy.ParsePrincipal("@@"); err == nil {
		t.Error("garbage accepted")
	}
	if p := mustPrincipal(t, "Example.ORG"); p.Domain != "example.org" {
		t.Errorf("domain not normalized: %+v", p)
	}
}
