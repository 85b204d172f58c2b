package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"agentgw/manifest"
	"agentgw/runtime/mcpclient"
	"agentgw/runtime/runtimetest"
)

// everythingEnv names the dist/index.js of an installed
// @modelcontextprotocol/server-everything; the tests against it are
// skipped without it. Install it with
//
//	npm install --prefix DIR @modelcontextprotocol/server-everything
//	AGENTGW_MCP_EVERYTHING=DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js
const everythingEnv = "AGENTGW_MCP_EVERYTHING"

func everything(t *testing.T) (node, index string) {
	t.Helper()
	index = os.Getenv(everythingEnv)
	if index == "" {
		t.Skip(everythingEnv + " is not set")
	}
	node, err := osexec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	return node, index
}

// everythingStart bounds node's start of server-everything: over 30 s
// was seen with two suites at once (load about 100). A bound, not a
// speed claim.
const everythingStart = 2 * time.Minute

// TestEverythingStdio imports server-everything over stdio and drives the
// tools that exercise the bridge: plain, structured, progress, form
// elicitation (with the legacy enumNames) and the task-required tool with
// elicitation through MCP Tasks.
func TestEverythingStdio(t *testing.T) {
	node, index := everything(t)
	r, _ := newRuntime(t, mcpclient.Options{Command: []string{node, index, "stdio"}, TerminateGrace: 500 * time.Millisecond, ConnectTimeout: everythingStart})
	imp := importEverything(t, r)
	if tools := toolsOf(t, imp.Manifest); string(tools["simulate-research-query"]["execution"]) != `{"taskSupport":"required"}` {
		t.Errorf("simulate-research-query execution %s", tools["simulate-research-query"]["execution"])
	}

	rec := runtimetest.NewRecorder()
	start(t, r, call("echo", `{"message":"hello"}`), rec)
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "Echo: hello" {
		t.Errorf("echo %q", got)
	}

	start(t, r, call("get-structured-content", `{"location":"Chicago"}`), rec)
	if m := resultOf(t, next(t, rec, runtimetest.KindComplete)); len(m["structuredContent"]) == 0 {
		t.Errorf("no structuredContent: %v", m)
	}

	start(t, r, call("trigger-long-running-operation", `{"duration":0.4,"steps":2}`), rec)
	for i := 0; i < 2; i++ {
		if p := next(t, rec, runtimetest.KindProgress).Progress; p.Percent == nil {
			t.Errorf("progress %+v", p)
		}
	}
	next(t, rec, runtimetest.KindComplete)

	e := start(t, r, call("trigger-elicitation-request", `{}`), rec)
	q := next(t, rec, runtimetest.KindInput).Input
	if _, err := manifest.CompileSchema(q.Schema, false, manifest.Options{}); err != nil {
		t.Fatalf("elicitation schema: %v", err)
	}
	t.Logf("elicitation schema: %s", q.Schema)
	if err := e.Input(json.RawMessage(`{"name":"Ada","petType":"pet-2"}`)); err != nil {
		t.Fatal(err)
	}
	if m := resultOf(t, next(t, rec, runtimetest.KindComplete)); !strings.Contains(string(m["content"]), "Name: Ada") {
		t.Errorf("content %s", m["content"])
	}

	e = start(t, r, call("simulate-research-query", `{"topic":"python","ambiguous":true}`), rec)
	for {
		rep := rec.Next(t, 20*time.Second)
		if rep.Kind == runtimetest.KindProgress {
			t.Logf("task status: %s", rep.Progress.Message)
			continue
		}
		if rep.Kind != runtimetest.KindInput {
			t.Fatalf("report %+v", rep)
		}
		t.Logf("task question: %s", rep.Input.Question)
		break
	}
	if err := e.Input(json.RawMessage(`{"interpretation":"snake"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		rep := rec.Next(t, 20*time.Second)
		if rep.Kind == runtimetest.KindProgress {
			continue
		}
		if rep.Kind != runtimetest.KindComplete || !strings.Contains(textOf(t, rep), "snake") {
			t.Fatalf("report %+v", rep)
		}
		break
	}
}

// TestEverythingHTTP imports server-everything over Streamable HTTP.
func TestEverythingHTTP(t *testing.T) {
	node, index := everything(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := osexec.Command(node, index, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(everythingStart); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server-everything did not listen")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, _ := newRuntime(t, mcpclient.Options{URL: "http://" + addr + "/mcp", ConnectTimeout: everythingStart})
	importEverything(t, r)
	rec := runtimetest.NewRecorder()
	start(t, r, call("echo", `{"message":"over http"}`), rec)
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "Echo: over http" {
		t.Errorf("echo %q", got)
	}
	start(t, r, call("trigger-long-running-operation", `{"duration":0.2,"steps":2}`), rec)
	next(t, rec, runtimetest.KindProgress)
	next(t, rec, runtimetest.KindProgress)
	next(t, rec, runtimetest.KindComplete)
}

func importEverything(t *testing.T, r *mcpclient.Runtime) *mcpclient.Imported {
	t.Helper()
	imp, err := r.Import(context.Background(), jid)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(imp.Manifest, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported %d tools as %s (%s %s, MCP %s)", imp.Tools, m.Version, m.ImplementationName, m.ImplementationVersion, m.MCPProtocolVersion)
	for _, tl := range m.Tools {
		t.Logf("  tool %s", tl.Name)
	}
	for _, s := range imp.Skipped {
		t.Logf("  skipped %s: %s", s.Tool, s.Reason)
	}
	for _, n := range imp.Notes {
		t.Logf("  note %s: %s", n.Tool, n.Note)
	}
	if imp.Tools < 13 {
		t.Errorf("only %d tools", imp.Tools)
	}
	return imp
}
