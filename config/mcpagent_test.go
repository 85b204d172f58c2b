package config_test

import (
	"strings"
	"testing"

	"agentgw/config"
)

func TestMCPAgents(t *testing.T) {
	c, err := config.LoadMCP(mcpDir(t, mcpOnly+`
[[mcp.agent]]
jid = "weather@agents.example.org"
tools = ["*"]
prefix = "weather"

[[mcp.agent]]
jid = "demo@agents.example.org"
tools = ["echo", "count"]
prefix = "demo.v1"
`))
	if err != nil {
		t.Fatal(err)
	}
	m := c.MCP
	if m.AgentPollSeconds != config.DefaultAgentPollSeconds || len(m.Agents) != 2 ||
		m.Agents[0].JID.String() != "weather@agents.example.org" || m.Agents[1].Prefix != "demo.v1" || len(m.Agents[1].Tools) != 2 {
		t.Fatalf("agents: %+v poll %d", m.Agents, m.AgentPollSeconds)
	}
}

// TestMCPAgentNoPrefix: prefix = "" is allowed (the tools keep their
// names), for several agents whose listed tools differ.
func TestMCPAgentNoPrefix(t *testing.T) {
	body := mcpOnly + "\n[[mcp.agent]]\njid = \"a@b\"\ntools = [\"*\"]\nprefix = \"\"\n" +
		"\n[[mcp.agent]]\njid = \"c@d\"\ntools = [\"echo\"]\nprefix = \"\"\n"
	c, err := config.LoadMCP(mcpDir(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.MCP.Agents) != 2 || c.MCP.Agents[0].Prefix != "" || c.MCP.Agents[1].Prefix != "" {
		t.Fatalf("agents: %+v", c.MCP.Agents)
	}
}

func TestMCPAgentErrors(t *testing.T) {
	agent := func(jid, tools, prefix string) string {
		return "\n[[mcp.agent]]\njid = " + jid + "\ntools = " + tools + "\nprefix = " + prefix + "\n"
	}
	for _, c := range []struct{ body, want string }{
		{agent(`"a@b"`, `["*"]`, `"x"`) + agent(`"c@d"`, `["*"]`, `"x"`), `mcp.agent[1].prefix: "x" is already the prefix of mcp.agent[0]`},
		{agent(`"a@b"`, `["*"]`, `"we_ather"`), "mcp.agent[0].prefix: must be empty, or 1 to 64"},
		{agent(`"a@b"`, `["echo", "x"]`, `""`) + agent(`"c@d"`, `["echo"]`, `""`), `mcp.agent[1].tools[0]: "echo" is also projected without a prefix by mcp.agent[0]`},
		{agent(`"b"`, `["*"]`, `"x"`), "mcp.agent[0].jid: must be the bare JID"},
		{agent(`"a@b"`, `[]`, `"x"`), "mcp.agent[0].tools: required"},
		{agent(`"a@b"`, `["*", "echo"]`, `"x"`), `mcp.agent[0].tools: "*" stands alone`},
		{agent(`"a@b"`, `["echo", "echo"]`, `"x"`), "mcp.agent[0].tools[1]: must be a tool name, listed once"},
		{strings.Replace(mcpOnly, "queue_max = 10", "queue_max = 10\nagent_poll_seconds = 0", 1), "mcp.agent_poll_seconds: must be between 1 and 86400"},
	} {
		body := c.body
		if !strings.Contains(body, "[mcp]") {
			body = mcpOnly + body
		}
		_, err := config.LoadMCP(mcpDir(t, body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
}
