package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"agentgw/internal/harness"
)

// TestProsodyRestart: when Prosody restarts, the gateway reconnects by
// itself and serves again. It runs last (file order) because it disturbs
// every connection.
func TestProsodyRestart(t *testing.T) {
	need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := suite.env.RestartProsody(ctx); err != nil {
		t.Fatal(err)
	}
	if err := suite.gateway.waitUp(ctx); err != nil {
		t.Fatalf("gateway did not reconnect: %v\n%s", err, tail(suite.gateway.logText(), 30))
	}
	alice := login(t, "alice", harness.HomeDomain)
	_, raw := iq(t, alice, "get", "weather@"+harness.ComponentDomain, discoInfo)
	if !strings.Contains(raw, "urn:xmpp:agent-endpoint-info:0") {
		t.Fatalf("after restart: %s", raw)
	}
}
