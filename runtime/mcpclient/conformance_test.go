package mcpclient_test

import (
	"context"
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

// conformanceServerEnv names go-sdk v1.8.0's conformance fixture server
// (conformance/everything-server in the module), built by scripts/lib.sh
// (install_mcp_conformance) beside the suite. The tests below skip without
// it.
const conformanceServerEnv = "AGENTGW_MCP_CONFORMANCE_SERVER"

func conformanceServer(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(conformanceServerEnv)
	if bin == "" {
		t.Skip(conformanceServerEnv + " is not set")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v", conformanceServerEnv, err)
	}
	return bin
}

// TestConformanceServerStdio and TestConformanceServerHTTP reach go-sdk's
// own conformance server, a real 2026-07-28 server, through the runtime:
// at 2026-07-28, with its MRTR tools answered as input requests.
func TestConformanceServerStdio(t *testing.T) {
	bin := conformanceServer(t)
	r, err := mcpclient.New(mcpclient.Options{Command: []string{bin}, ColdStart: true, TerminateGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	driveConformanceServer(t, r)
}

func TestConformanceServerHTTP(t *testing.T) {
	bin := conformanceServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := osexec.Command(bin, "-http", addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never listened on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r, err := mcpclient.New(mcpclient.Options{URL: "http://" + addr + "/mcp", ColdStart: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	driveConformanceServer(t, r)
}

func driveConformanceServer(t *testing.T, r *mcpclient.Runtime) {
	imp, err := r.Import(context.Background(), jid)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(imp.Manifest, manifest.Options{Domain: "agents.example"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported %d tools (%s %s, MCP %s); %d skipped", imp.Tools, m.ImplementationName, m.ImplementationVersion, m.MCPProtocolVersion, len(imp.Skipped))
	if m.MCPProtocolVersion != "2026-07-28" || m.ImplementationName != "mcp-conformance-test-server" {
		t.Errorf("mcp %q, implementation %q", m.MCPProtocolVersion, m.ImplementationName)
	}

	rec := runtimetest.NewRecorder()
	start(t, r, call("test_simple_text", `{}`), rec)
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "This is a simple text response for testing." {
		t.Errorf("test_simple_text %q", got)
	}

	start(t, r, call("test_tool_with_progress", `{}`), rec)
	var percents []string
	for {
		rep := rec.Next(t, timeout)
		if rep.Kind == runtimetest.KindProgress {
			if rep.Progress.Percent != nil {
				percents = append(percents, fmt.Sprint(*rep.Progress.Percent))
			}
			continue
		}
		if rep.Kind != runtimetest.KindComplete {
			t.Fatalf("test_tool_with_progress: %+v", rep)
		}
		break
	}
	if strings.Join(percents, ",") != "0,50,100" {
		t.Errorf("progress %v", percents)
	}

	// MRTR, one round.
	e := start(t, r, call("test_input_required_result_elicitation", `{}`), rec)
	if q := next(t, rec, runtimetest.KindInput).Input; q.Question != "What is your name?" {
		t.Errorf("question %q", q.Question)
	}
	if err := e.Input([]byte(`{"name":"Ada"}`)); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "Hello, Ada!" {
		t.Errorf("test_input_required_result_elicitation %q", got)
	}

	// MRTR, two rounds, the state carried by the server's requestState.
	e = start(t, r, call("test_input_required_result_multi_round", `{}`), rec)
	next(t, rec, runtimetest.KindInput)
	if err := e.Input([]byte(`{"name":"Ada"}`)); err != nil {
		t.Fatal(err)
	}
	if q := next(t, rec, runtimetest.KindInput).Input; q.Question != "Step 2: What is your favorite color?" {
		t.Errorf("question %q", q.Question)
	}
	if err := e.Input([]byte(`{"color":"blue"}`)); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "Multi-round complete: Ada likes blue" {
		t.Errorf("test_input_required_result_multi_round %q", got)
	}

	// Roots and sampling among the input requests: not offered, so the
	// call fails before anyone is asked.
	start(t, r, call("test_input_required_result_multiple_inputs", `{}`), rec)
	if f := next(t, rec, runtimetest.KindFail).Failure; f.Code != mcpclient.CodeInputUnsupported {
		t.Errorf("test_input_required_result_multiple_inputs: %+v", f)
	}
}
