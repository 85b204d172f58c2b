package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/mcpface/layer"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answering is a go-sdk client at the current revision that answers
// input requests (MRTR) with answer, and records the questions.
type answering struct {
	mu        sync.Mutex
	questions []string
	answer    string
}

func (a *answering) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.questions = append(a.questions, r.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": a.answer}}, nil
	}}
}

// askThroughMRTR calls the demo's ask tool with go-sdk at 2026-07-28: the
// plain call answers input_required, go-sdk's client asks its
// ElicitationHandler and retries with inputResponses, and the same
// XMPP task completes with the answer.
func askThroughMRTR(t *testing.T, cs *mcp.ClientSession, a *answering, question string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "CallAgentTool", Arguments: map[string]any{
		"Jid": demoEndpoint, "Tool": "ask", "Arguments": map[string]any{"question": question}}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(raw), `"answer":"`+a.answer+`"`) {
		t.Fatalf("ask through MRTR: %s %+v", raw, res.Content)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.questions) == 0 || a.questions[len(a.questions)-1] != question {
		t.Fatalf("questions asked: %q", a.questions)
	}
}

// elicitingParams is currentParams of a client that declares elicitation.
func elicitingParams(params map[string]any) map[string]any {
	out := currentParams(params, false)
	meta := out["_meta"].(map[string]any)
	meta[layer.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	return out
}

// TestMCPMRTR: input for a plain call at 2026-07-28 goes through MRTR on
// `agentgw mcp -http` and stdio; a requestState is refused under another
// token and when forged.
func TestMCPMRTR(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	a := newMCPAccount(t, "")
	const otherToken = "integration-other-token-0123456789"
	if err := os.WriteFile(filepath.Join(a.dir, "other.token"), []byte(otherToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(a.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[[mcp.token]]\nfile = \"other.token\"\naccount = \"" + a.jid + "\"\nscopes = [\"*\"]\n")
	f.Close()

	t.Run("http", func(t *testing.T) {
		url, _, _ := startMCPHTTP(t, a)
		ans := &answering{answer: "green"}
		cs := connectCurrent(t, url, mcpFullToken, ans.options())
		askThroughMRTR(t, cs, ans, "Which colour, through MRTR?")

		// The raw exchange: input_required with a requestState that
		// only this token can use.
		call := httpCaller(t, url, mcpFullToken)
		// A client that declares no elicitation gets no input request:
		// the task is cancelled and the call says why.
		none, _ := call("tools/call", currentParams(map[string]any{"name": "CallAgentTool", "arguments": map[string]any{
			"Jid": demoEndpoint, "Tool": "ask", "Arguments": map[string]any{"question": "Nobody to ask?"}}}, false), nil)
		if none.Error != nil || strings.Contains(string(none.Result), "inputRequests") || !strings.Contains(string(none.Result), `"isError":true`) ||
			!strings.Contains(string(none.Result), "does not support elicitation") {
			t.Fatalf("a call without elicitation: %+v %s", none.Error, none.Result)
		}
		first, _ := call("tools/call", elicitingParams(map[string]any{"name": "CallAgentTool", "arguments": map[string]any{
			"Jid": demoEndpoint, "Tool": "ask", "Arguments": map[string]any{"question": "Raw MRTR?"}}}), nil)
		var ir struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		if first.Error != nil || json.Unmarshal(first.Result, &ir) != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 || ir.RequestState == "" {
			t.Fatalf("first call: %+v %s", first.Error, first.Result)
		}
		var key string
		for k := range ir.InputRequests {
			key = k
		}
		retry := func(state string) map[string]any {
			return elicitingParams(map[string]any{"name": "CallAgentTool", "arguments": map[string]any{
				"Jid": demoEndpoint, "Tool": "ask", "Arguments": map[string]any{"question": "Raw MRTR?"}},
				"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": "blue"}}},
				"requestState":   state})
		}
		other := httpCaller(t, url, otherToken)
		for name, try := range map[string]func() rawAnswer{
			"another token": func() rawAnswer { r, _ := other("tools/call", retry(ir.RequestState), nil); return r },
			"a forged state": func() rawAnswer {
				r, _ := call("tools/call", retry("eyJ0IjoibWNwdGFzay14Iiwia2V5IjoieCIsImUiOjk5OTk5OTk5OTl9."+strings.Repeat("A", 43)), nil)
				return r
			},
		} {
			r := try()
			if !strings.Contains(string(r.Result), "requestState is not valid") && (r.Error == nil || !strings.Contains(r.Error.Message, "requestState is not valid")) {
				t.Errorf("%s: %+v %s", name, r.Error, r.Result)
			}
		}
		done, _ := call("tools/call", retry(ir.RequestState), nil)
		if done.Error != nil || !strings.Contains(string(done.Result), `"answer":"blue"`) || !strings.Contains(string(done.Result), `"resultType":"complete"`) {
			t.Fatalf("the retry: %+v %s", done.Error, done.Result)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		stderr := &syncBuf{}
		cmd := exec.Command(suite.bin, "mcp", "-config", a.config)
		cmd.Stderr = stderr
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ans := &answering{answer: "stdio-green"}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "integration-mrtr", Version: "1"}, ans.options()).
			Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, stderr)
		}
		defer cs.Close()
		expectCurrent(t, cs)
		waitMCPLog(t, stderr, "xmpp stream up", 1)
		askThroughMRTR(t, cs, ans, "Which colour, through MRTR over stdio?")
	})
}
