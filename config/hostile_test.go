package config_test

import (
	"strings"
	"testing"

	"agentgw/config"
)

// TestDomainRateKeys: [gateway] domain_rate_limit and domain_rate_burst
// default, take 0 to disable, and name themselves in errors.
func TestDomainRateKeys(t *testing.T) {
	c, err := config.Load(write(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.DomainRateLimit != config.DefaultDomainRateLimit || c.DomainRateBurst != config.DefaultDomainRateBurst {
		t.Errorf("defaults: %v %d", c.DomainRateLimit, c.DomainRateBurst)
	}
	c, err = config.Load(write(t, minimal+"[gateway]\ndomain_rate_limit = 0\ndomain_rate_burst = 5\n"))
	if err != nil || c.DomainRateLimit != 0 || c.DomainRateBurst != 5 {
		t.Errorf("explicit: %v %d %v", c.DomainRateLimit, c.DomainRateBurst, err)
	}
	for body, key := range map[string]string{
		"[gateway]\ndomain_rate_limit = -1\n": "gateway.domain_rate_limit",
		"[gateway]\ndomain_rate_burst = 0\n":  "gateway.domain_rate_burst",
	} {
		if _, err := config.Load(write(t, minimal+body)); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", body, err, key)
		}
	}
}
