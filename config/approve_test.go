package config_test

import (
	"strings"
	"testing"

	"agentgw/config"

	"mellium.im/xmpp/jid"
)

func TestApproveGrants(t *testing.T) {
	c, err := config.Load(write(t, minimal+`
[[policy.invoke]]
principals = ["example.org"]
endpoints = ["*"]
tools = ["*"]
[[policy.approve]]
principals = ["alice@example.org"]
endpoints = ["ledger@agents.example"]
tools = ["transfer"]
permissions = ["ledger.write"]
`))
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := jid.MustParse("alice@example.org/x"), jid.MustParse("bob@example.org/x")
	const ep = "ledger@agents.example"
	if !c.Policy.Approved(alice, ep, "transfer", true, []string{"ledger.write"}) {
		t.Error("approve grant not applied")
	}
	for _, tc := range []struct {
		name        string
		who         jid.JID
		tool        string
		permissions []string
	}{
		{"other principal", bob, "transfer", nil},
		{"other tool", alice, "refund", nil},
		{"permission not vouched for", alice, "transfer", []string{"ledger.admin"}},
	} {
		if c.Policy.Approved(tc.who, ep, tc.tool, true, tc.permissions) {
			t.Errorf("%s: approved", tc.name)
		}
	}
	// A tool that declares neither needs no approve grant.
	if !c.Policy.Approved(bob, ep, "balance", false, nil) {
		t.Error("a tool without declarations needs approval")
	}
}

func TestApproveGrantErrorsNameKeys(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"missing tools", "[[policy.approve]]\nprincipals=[\"example.org\"]\nendpoints=[\"*\"]\n", "policy.approve[0].tools: required"},
		{"empty permission", "[[policy.approve]]\nprincipals=[\"example.org\"]\nendpoints=[\"*\"]\ntools=[\"*\"]\npermissions=[\"\"]\n", "policy.approve[0].permissions[0]: must not be empty"},
		{"bad principal", "[[policy.approve]]\nprincipals=[\"*\"]\nendpoints=[\"*\"]\ntools=[\"*\"]\n", "policy.approve[0].principals[0]"},
		{"unknown key", "[[policy.approve]]\nprincipals=[\"example.org\"]\nendpoints=[\"*\"]\ntools=[\"*\"]\nperms=[\"x\"]\n", "perms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(write(t, minimal+tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not contain %q", err, tc.want)
			}
		})
	}
}
