package integration

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inspectorEnv names the mcp-inspector executable of
// @modelcontextprotocol/inspector (scripts/test installs it).
const inspectorEnv = "AGENTGW_MCP_INSPECTOR"

// inspector finds the MCP inspector CLI: $AGENTGW_MCP_INSPECTOR, else the
// wrapper scripts/lib.sh writes into demo/mcp-inspector.
func inspector(t *testing.T) string {
	t.Helper()
	path := os.Getenv(inspectorEnv)
	if path == "" {
		path, _ = filepath.Abs("../demo/mcp-inspector/mcp-inspector")
	}
	if _, err := os.Stat(path); err != nil {
		if requireServers() {
			t.Fatalf("%s: %v, and AGENTGW_REQUIRE_SERVERS is set (scripts/test installs the inspector)", inspectorEnv, err)
		}
		t.Skipf("the MCP inspector is not installed (%s)", inspectorEnv)
	}
	return path
}

// inspect runs one inspector CLI call and decodes its JSON output.
func inspect(t *testing.T, bin string, args ...string) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cli", "--format", "json", "-q"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr syncBuf
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New(err.Error() + ": " + stderr.String() + string(out))
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector output %s: %v", out, err)
	}
	if r, ok := v["result"].(map[string]any); ok {
		return r, nil
	}
	return v, nil
}

func toolNames(r map[string]any) []string {
	var names []string
	tools, _ := r["tools"].([]any)
	for _, tl := range tools {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

func structured(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	s, ok := r["structuredContent"].(map[string]any)
	if !ok {
		t.Fatalf("no structuredContent: %v", r)
	}
	return s
}

// The real MCP inspector CLI against `agentgw mcp`: tools/list, tools/call,
// resources/list and resources/read, over HTTP with the bearer header and
// over stdio.
func TestMCPServerInspector(t *testing.T) {
	bin := inspector(t)
	a := newMCPAccountWith(t, "", "anyone", "") // dave is a stranger
	dave := remoteUser(t, "dave")
	url, _, stopHTTP := startMCPHTTP(t, a)
	http := func(token string, args ...string) (map[string]any, error) {
		return inspect(t, bin, append([]string{url, "--transport", "http", "--stored-auth-only", "--header", "Authorization: Bearer " + token}, args...)...)
	}

	r, err := http(mcpSendToken, "--method", "tools/list")
	if err != nil {
		t.Fatal(err)
	}
	if names := toolNames(r); len(names) != 1 || names[0] != "SendChatMessage" {
		t.Fatalf("send-only tools over HTTP: %v", names)
	}
	r, err = http(mcpSendToken, "--method", "tools/call", "--tool-name", "SendChatMessage", "--tool-args-json", `{"To":"`+bareOf(dave)+`","Message":"from the inspector"}`)
	if err != nil {
		t.Fatal(err)
	}
	if s := structured(t, r); s["Success"] != true {
		t.Fatalf("SendChatMessage: %v", s)
	}
	if body, _ := awaitMessage(t, dave, a.jid).Child(xmlName("jabber:client", "body")); body.Text() != "from the inspector" {
		t.Fatalf("dave got %q", body.Text())
	}
	if r, err := http(mcpSendToken, "--method", "resources/list"); err == nil {
		t.Fatalf("send-only resources/list allowed: %v", r)
	}
	if r, err := http("wrong-token-00000000000000", "--method", "tools/list"); err == nil {
		t.Fatalf("a wrong token was accepted: %v", r)
	}

	sendRaw(t, dave, `<message type="chat" to="`+a.jid+`"><body>for the inspector</body></message>`)
	r, err = http(mcpFullToken, "--method", "tools/call", "--tool-name", "WaitForMessage", "--tool-args-json", `{"TimeoutSeconds":60}`)
	if err != nil {
		t.Fatal(err)
	}
	msg := structured(t, r)
	if msg["Body"] != "for the inspector" {
		t.Fatalf("WaitForMessage: %v", msg)
	}
	first := "mid:" + msg["MessageId"].(string)
	r, err = http(mcpFullToken, "--method", "resources/list")
	if err != nil || !strings.Contains(jsonText(r), first) {
		t.Fatalf("resources/list over HTTP: %v %v", r, err)
	}
	r, err = http(mcpFullToken, "--method", "resources/read", "--uri", first)
	if err != nil || !strings.Contains(jsonText(r), "for the inspector") {
		t.Fatalf("resources/read over HTTP: %v %v", r, err)
	}
	if _, err := http(mcpSendToken, "--method", "resources/read", "--uri", first); err == nil {
		t.Fatal("send-only resources/read allowed")
	}
	sendRaw(t, dave, `<message type="chat" to="`+a.jid+`"><body>for stdio</body></message>`)
	r, err = http(mcpFullToken, "--method", "tools/call", "--tool-name", "WaitForMessage", "--tool-args-json", `{"TimeoutSeconds":60}`)
	if err != nil {
		t.Fatal(err)
	}
	mid := "mid:" + structured(t, r)["MessageId"].(string)

	// Over stdio (one process per call), after the HTTP server is gone:
	// the message waits in the store.
	stopHTTP()
	stdio := func(args ...string) (map[string]any, error) {
		return inspect(t, bin, append(args, "--", suite.bin, "mcp", "-config", a.config)...)
	}
	r, err = stdio("--method", "tools/list")
	// The seed's ten tools, WaitForMessage, and the four agent tools.
	if err != nil || len(toolNames(r)) != 15 {
		t.Fatalf("tools over stdio: %v %v", toolNames(r), err)
	}
	r, err = stdio("--method", "resources/list")
	if err != nil || !strings.Contains(jsonText(r), mid) {
		t.Fatalf("resources/list over stdio: %v %v", r, err)
	}
	r, err = stdio("--method", "resources/read", "--uri", mid)
	if err != nil || !strings.Contains(jsonText(r), "for stdio") {
		t.Fatalf("resources/read over stdio: %v %v", r, err)
	}
	// Reading popped it.
	r, err = stdio("--method", "tools/call", "--tool-name", "GetMessage", "--tool-args-json", `{"MessageId":"`+mid+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	if s := structured(t, r); s["Success"] != false {
		t.Fatalf("GetMessage after the read: %v", s)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
