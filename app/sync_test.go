package app_test

import (
	"strings"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/config"
)

// TestMCPClientOptions: every key of an mcp endpoint reaches its runtime
// option (moved from mcpsync, which no longer reads config).
func TestMCPClientOptions(t *testing.T) {
	ep := config.Endpoint{
		JID: "mcp@agents.example", Runtime: config.RuntimeMCP, Command: []string{"/bin/server", "-x"}, Dir: "/srv", Env: []string{"A=b"},
		MCP: &config.MCPEndpoint{
			EnvFiles: map[string]string{"K": "/k"}, EnvPass: []string{"P"},
			ColdStart: true, KeepWarm: true, IdleTimeout: time.Minute,
			Name: "n", Title: "t", Description: "d", DefaultTimeout: 30 * time.Second, MaxTimeout: time.Hour,
		},
	}
	o := app.MCPClientOptions(ep)
	if strings.Join(o.Command, " ") != "/bin/server -x" || o.Dir != "/srv" || o.Env[0] != "A=b" || o.EnvFiles["K"] != "/k" ||
		o.EnvPass[0] != "P" || !o.ColdStart || !o.KeepWarm || o.IdleTimeout != time.Minute || o.AgentName != "n" ||
		o.AgentTitle != "t" || o.AgentDescription != "d" || o.DefaultTimeoutSeconds != 30 || o.MaximumTimeoutSeconds != 3600 {
		t.Errorf("options %+v", o)
	}
}
