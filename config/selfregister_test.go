package config_test

import (
	"strings"
	"testing"

	"agentgw/config"

	"mellium.im/xmpp/jid"
)

func TestSelfRegister(t *testing.T) {
	c, err := config.Load(write(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Policy.SelfRegister {
		t.Error("self_register must default to false")
	}
	c, err = config.Load(write(t, minimal+`
[policy]
local_domains = ["home.example"]
self_register = true
[[policy.visibility]]
principals = ["remote.example"]
endpoints = ["bot@home.example", "weather@agents.example"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Policy.SelfRegister {
		t.Error("self_register = true not applied")
	}
	// A self-registered account of a local domain can be granted by JID.
	if !c.Policy.CanSee(jid.MustParse("carol@remote.example"), "bot@home.example") {
		t.Error("grant on a local-domain endpoint not applied")
	}

	// Without local domains nobody could self-register: a mistake.
	_, err = config.Load(write(t, minimal+"[policy]\nself_register = true\n"))
	if err == nil || !strings.Contains(err.Error(), "policy.self_register: requires policy.local_domains") {
		t.Errorf("self_register without local_domains: %v", err)
	}
}
