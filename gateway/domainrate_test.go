package gateway_test

import (
	"fmt"
	"testing"

	"agentgw/config"
)

// startWith is start with the configuration edited before the gateway is
// built.
func startWith(t testing.TB, edit func(*config.Config)) *env {
	t.Helper()
	srv := newFakeServer(t)
	cfg := testConfig(t, srv.ln.Addr().String(), "")
	edit(cfg)
	e := launch(t, srv, cfg)
	waitUp(t, e.gw)
	return e
}

// domainBurst is the domain budget of these tests; its refill (one token
// per 100 s) is negligible over a test.
const domainBurst = 100

func domainLimited(cfg *config.Config) {
	cfg.DomainRateLimit, cfg.DomainRateBurst = 0.01, domainBurst
}

const discoInfo = `<query xmlns='http://jabber.org/protocol/disco#info'/>`

// TestDomainRateLimit: 500 accounts of one remote domain, each sending one
// IQ (far under its own rate_limit), are throttled as one domain: past
// domain_rate_burst they get <resource-constraint/>. An account of another
// domain is still answered.
func TestDomainRateLimit(t *testing.T) {
	e := startWith(t, domainLimited)
	const accounts = 500
	answered, limited := 0, 0
	for i := 0; i < accounts; i++ {
		el := e.srv.iq(fmt.Sprintf("u%03d@flood.example/r", i), domain, "get", discoInfo)
		switch condition(el) {
		case "":
			answered++
		case "resource-constraint":
			limited++
		default:
			t.Fatalf("unexpected answer %s", marshal(t, el))
		}
	}
	if answered < domainBurst || answered > domainBurst+1 || limited != accounts-answered {
		t.Errorf("one domain's %d accounts: %d answered, %d limited; want %d answered", accounts, answered, limited, domainBurst)
	}
	if c := condition(e.srv.iq(carol, domain, "get", discoInfo)); c != "" {
		t.Errorf("an account of another domain: %s", c)
	}
	// The domain stays limited for a fresh account of it.
	if c := condition(e.srv.iq("new@flood.example/r", domain, "get", discoInfo)); c != "resource-constraint" {
		t.Errorf("a new account of the throttled domain: %q", c)
	}
}

// TestDomainRateLimitCountsPresenceAndMessages: presence the gateway acts
// on and messages take from the same domain budget as IQs, so a flood of
// them leaves the domain's next IQ limited, and are not answered past it.
func TestDomainRateLimitCountsPresenceAndMessages(t *testing.T) {
	for _, kind := range []string{"message", "presence"} {
		t.Run(kind, func(t *testing.T) {
			e := startWith(t, domainLimited)
			for i := 0; i < 3*domainBurst; i++ {
				from := fmt.Sprintf("u%03d@flood.example/r", i)
				if kind == "message" {
					e.srv.write(fmt.Sprintf(`<message xmlns='jabber:component:accept' id='m%d' from='%s' to='a001@%s'><body>hi</body></message>`, i, from, domain))
				} else {
					e.srv.write(fmt.Sprintf(`<presence xmlns='jabber:component:accept' type='probe' from='%s' to='a001@%s'/>`, from, domain))
				}
			}
			if c := condition(e.srv.iq("late@flood.example/r", domain, "get", discoInfo)); c != "resource-constraint" {
				t.Errorf("IQ after %d %ss of the domain: %q, want resource-constraint", 3*domainBurst, kind, c)
			}
			if c := condition(e.srv.iq(carol, domain, "get", discoInfo)); c != "" {
				t.Errorf("an account of another domain: %s", c)
			}
		})
	}
}

// TestDomainRateLimitDisabled: domain_rate_limit = 0 disables the domain
// budget; the per-JID one still applies.
func TestDomainRateLimitDisabled(t *testing.T) {
	e := startWith(t, func(cfg *config.Config) { cfg.DomainRateLimit, cfg.DomainRateBurst = 0, 1 })
	for i := 0; i < 50; i++ {
		if c := condition(e.srv.iq(fmt.Sprintf("u%03d@flood.example/r", i), domain, "get", discoInfo)); c != "" {
			t.Fatalf("request %d with the domain limit off: %s", i, c)
		}
	}
}

// TestStanzaWithoutFromDropped: a stanza with no 'from' is dropped
// unanswered (it used to pass as the gateway's own domain, unlimited).
func TestStanzaWithoutFromDropped(t *testing.T) {
	e := start(t, "")
	e.srv.write(`<iq xmlns='jabber:component:accept' type='get' id='nofrom' to='` + domain + `'>` + discoInfo + `</iq>`)
	e.srv.write(`<message xmlns='jabber:component:accept' id='nofrom-msg' to='a001@` + domain + `'><body>x</body></message>`)
	e.srv.write(`<iq xmlns='jabber:component:accept' type='get' id='withfrom' from='` + alice + `' to='` + domain + `'>` + discoInfo + `</iq>`)
	el := e.srv.next()
	if id, _ := el.AttrValue("id"); id != "withfrom" {
		t.Fatalf("first answer is to %q: %s", id, marshal(t, el))
	}
}
