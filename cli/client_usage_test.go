package cli_test

import "testing"

// The accounts of TestClientUsage, which runs `agentgw client` through
// Main for its exit codes (the client's own tests are in cli/client).
const (
	clientEndpoint = "demo@agents.example"
	clientUser     = "alice@home.example"
)

func TestClientUsage(t *testing.T) {
	for _, args := range [][]string{
		{"client", "-jid", clientUser, "call", clientEndpoint, "echo"},
		{"client", "-jid", clientUser, "call", "-request-id", "short", clientEndpoint, "echo", "{}"},
		{"client", "-jid", clientUser, "call", "-version", "1.0", clientEndpoint, "echo", "{}"},
		{"client", "-jid", clientUser, "call", "-deadline", "soon", clientEndpoint, "echo", "{}"},
		{"client", "-jid", clientUser, "call", "not-a-jid/res", "echo", "{}"},
		{"client", "-jid", clientUser, "state", clientEndpoint},
		{"client", "-jid", clientUser, "cancel", "-revision", "-1", clientEndpoint, "task-0123456789abcdef0123456789abcdef"},
		{"client", "-jid", clientUser, "input", clientEndpoint, "task-0123456789abcdef0123456789abcdef", "short", "{}"},
		{"client", "-jid", clientUser, "frobnicate"},
	} {
		if code, _, _ := run(t, args...); code != 2 {
			t.Errorf("%q: exit code %d, want 2", args, code)
		}
	}
}
