package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// tsSDKEnv names the directory that holds the official TypeScript MCP SDK
// in node_modules (scripts/test installs it: install_mcp_tssdk).
const tsSDKEnv = "AGENTGW_MCP_TSSDK"

// tsClientOut is what testdata/tsclient.mjs prints.
type tsClientOut struct {
	Server          map[string]any `json:"server"`
	ProtocolVersion *string        `json:"protocolVersion"`
	Tools           []string       `json:"tools"`
	Call            map[string]any `json:"call"`
	Stream          []string       `json:"stream"`
	StreamResult    map[string]any `json:"streamResult"`
	StreamError     string         `json:"streamError"`
	Error           string         `json:"error"`
}

// runTSClient runs testdata/tsclient.mjs: the SDK's client lists the
// tools, calls tool with args plainly, then through the SDK's task stream.
func runTSClient(t *testing.T, tool, args string, target ...string) tsClientOut {
	t.Helper()
	sdk := os.Getenv(tsSDKEnv)
	if sdk == "" {
		sdk, _ = filepath.Abs("../demo/mcp-tssdk")
	}
	if _, err := os.Stat(filepath.Join(sdk, "node_modules/@modelcontextprotocol/sdk/package.json")); err != nil {
		if requireServers() {
			t.Fatalf("%s: %v, and AGENTGW_REQUIRE_SERVERS is set (scripts/test installs the SDK)", tsSDKEnv, err)
		}
		t.Skipf("the TypeScript MCP SDK is not installed (%s)", tsSDKEnv)
	}
	script, _ := filepath.Abs("testdata/tsclient.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script, sdk, tool, args}, target...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr syncBuf
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("tsclient: %v\n%s%s", err, stderr.String(), b)
	}
	var out tsClientOut
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("tsclient output %s: %v", b, err)
	}
	if out.Error != "" {
		t.Fatalf("tsclient: %s", out.Error)
	}
	return out
}

// The official TypeScript SDK (at 2025-11-25, its newest) against
// `agentgw mcp`: over stdio, the projected agent tool demo_echo is listed,
// called, and called again as an MCP task through the SDK's task stream;
// over HTTP with a bearer token, a seed tool is called and the revision
// negotiated is 2025-11-25.
func TestMCPTypeScriptSDK(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	config := writeAgentMCPConfig(t, 60)
	out := runTSClient(t, "demo_echo", `{"text":"from the TypeScript SDK"}`, "--", suite.bin, "mcp", "-config", config)
	if !slices.Contains(out.Tools, "demo_echo") {
		t.Fatalf("stdio tools: %v", out.Tools)
	}
	if s, _ := out.Call["structuredContent"].(map[string]any); s["text"] != "from the TypeScript SDK" {
		t.Errorf("stdio call: %v", out.Call)
	}
	if len(out.Stream) < 2 || out.Stream[0] != "taskCreated" || out.Stream[len(out.Stream)-1] != "result" {
		t.Errorf("stdio task stream: %v (%s)", out.Stream, out.StreamError)
	}
	if s, _ := out.StreamResult["structuredContent"].(map[string]any); s["text"] != "from the TypeScript SDK" {
		t.Errorf("stdio task result: %v", out.StreamResult)
	}

	a := newMCPAccountWith(t, "", "anyone", "")
	dave := remoteUser(t, "dave")
	url, _, _ := startMCPHTTP(t, a)
	out = runTSClient(t, "SendChatMessage", `{"To":"`+bareOf(dave)+`","Message":"from the TypeScript SDK"}`,
		"http", url, mcpFullToken)
	if out.ProtocolVersion == nil || *out.ProtocolVersion != "2025-11-25" {
		t.Errorf("HTTP revision: %v", out.ProtocolVersion)
	}
	if !slices.Contains(out.Tools, "SendChatMessage") || !slices.Contains(out.Tools, "WaitForMessage") {
		t.Errorf("HTTP tools: %v", out.Tools)
	}
	if s, _ := out.Call["structuredContent"].(map[string]any); s["Success"] != true {
		t.Errorf("HTTP call: %v", out.Call)
	}
	if body, _ := awaitMessage(t, dave, a.jid).Child(xmlName("jabber:client", "body")); body.Text() != "from the TypeScript SDK" {
		t.Errorf("dave got %q", body.Text())
	}
}
