package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"agentgw/runtime"
	"agentgw/runtime/mcpclient"
	"agentgw/runtime/mcpclient/mcptest"
	"agentgw/runtime/runtimetest"
)

// writeFile writes a credential file.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// stdioOptions runs this test binary as the stdio fixture server.
func stdioOptions(t *testing.T) mcpclient.Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcpclient.Options{
		Command:        []string{exe},
		Env:            []string{serveEnv + "=1"},
		TerminateGrace: 200 * time.Millisecond,
	}
}

func textOf(t *testing.T, rep runtimetest.Report) string {
	t.Helper()
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(rep.Result.Raw, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("result %s", rep.Result.Raw)
	}
	return res.Content[0].Text
}

// A real subprocess over stdio: the server is killed mid-call, the call
// fails unavailable and retryable, and the next call restarts it. The
// server's standard error, which names a credential, is redacted.
func TestStdioCrashAndRestart(t *testing.T) {
	const secret = "s3cr3t-from-a-file"
	log := newStatusLog()
	opts := stdioOptions(t)
	opts.EnvFiles = map[string]string{"MCPTEST_SECRET": writeFile(t, secret+"\n")}
	opts.OnStatus = log.record
	r, _ := newRuntime(t, opts)

	rec := runtimetest.NewRecorder()
	start(t, r, call("env", `{"name":"MCPTEST_SECRET"}`), rec)
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "true:"+secret {
		t.Errorf("env from file: %q", got)
	}
	log.waitState(t, mcpclient.StateUp)
	// Nothing of the gateway's environment is passed on.
	os.Setenv("AGENTGW_MCPTEST_LEAK", "x")
	defer os.Unsetenv("AGENTGW_MCPTEST_LEAK")
	start(t, r, call("env", `{"name":"HOME"}`), rec)
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "false:" {
		t.Errorf("HOME passed on: %q", got)
	}

	start(t, r, call("crash", `{}`), rec)
	f := next(t, rec, runtimetest.KindFail).Failure
	if f.Code != runtime.CodeUnavailable || !f.Retryable {
		t.Errorf("failure %+v", f)
	}
	st := log.waitState(t, mcpclient.StateStopped)
	t.Logf("LastError: %q", st.LastError)
	if strings.Contains(st.LastError, secret) || !strings.Contains(st.LastError, "token=[redacted]") {
		t.Errorf("LastError %q", st.LastError)
	}

	start(t, r, call("env", `{"name":"MCPTEST_SECRET"}`), rec)
	next(t, rec, runtimetest.KindComplete)
	if s := r.Status(); !s.Up || s.Starts != 2 {
		t.Errorf("status %+v", s)
	}
}

func TestStdioImport(t *testing.T) {
	r, _ := newRuntime(t, stdioOptions(t))
	imp, err := r.Import(context.Background(), jid)
	if err != nil {
		t.Fatal(err)
	}
	tools := toolsOf(t, imp.Manifest)
	if string(tools["research"]["execution"]) != `{"taskSupport":"required"}` || tools["crash"] == nil {
		t.Errorf("tools %d, research %s", len(tools), tools["research"]["execution"])
	}
}

func TestStdioCommandNotFound(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{Command: []string{"agentgw-no-such-mcp-server"}, RestartWait: 100 * time.Millisecond})
	_, err := r.Import(context.Background(), jid)
	if err == nil || !strings.Contains(err.Error(), "not found in PATH") {
		t.Errorf("Import: %v", err)
	}
	rec := runtimetest.NewRecorder()
	start(t, r, call("echo", `{}`), rec)
	if f := next(t, rec, runtimetest.KindFail).Failure; f.Code != runtime.CodeUnavailable || !f.Retryable {
		t.Errorf("failure %+v", f)
	}
}

// Streamable HTTP with a bearer token read from a file: the header
// reaches the server, the negotiated protocol version is sent after
// initialize, and the token never shows in an error or the status.
func TestHTTP(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a"
	var (
		mu   sync.Mutex
		auth []string
		vers []string
	)
	srv := mcptest.New(mcptest.Options{})
	ts := httptest.NewServer(srv.HTTPHandler(func(h http.Header) {
		mu.Lock()
		auth = append(auth, h.Get("Authorization"))
		vers = append(vers, h.Get("Mcp-Protocol-Version"))
		mu.Unlock()
	}))
	defer ts.Close()
	r, _ := newRuntime(t, mcpclient.Options{
		URL:         ts.URL,
		HeaderFiles: map[string]string{"Authorization": writeFile(t, "Bearer "+token+"\n")},
	})
	imp, err := r.Import(context.Background(), jid)
	if err != nil {
		t.Fatal(err)
	}
	if imp.Tools != 10 {
		t.Errorf("%d tools", imp.Tools)
	}
	rec := runtimetest.NewRecorder()
	start(t, r, call("echo", `{"text":"over http"}`), rec)
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "over http" {
		t.Errorf("echo %q", got)
	}
	start(t, r, call("progress", `{"steps":2}`), rec)
	next(t, rec, runtimetest.KindProgress)
	next(t, rec, runtimetest.KindProgress)
	next(t, rec, runtimetest.KindComplete)
	mu.Lock()
	defer mu.Unlock()
	for i, a := range auth {
		if a != "Bearer "+token {
			t.Errorf("request %d: Authorization %q", i, a)
		}
	}
	// server/discover at 2026-07-28 first; the fixture speaks 2025-11-25,
	// so the session is initialized at that revision and says so.
	if len(vers) < 3 || vers[0] != mcpclient.ProtocolVersion || vers[len(vers)-1] != mcpclient.LegacyProtocolVersion {
		t.Errorf("Mcp-Protocol-Version %q", vers)
	}
}

func TestHTTPErrorsRedactCredentials(t *testing.T) {
	const token = "tok-0a1b2c3d4e5f"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A server that echoes what it got.
		http.Error(w, "bad credentials: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
	}))
	defer ts.Close()
	log := newStatusLog()
	r, _ := newRuntime(t, mcpclient.Options{
		URL:         ts.URL + "/mcp",
		HeaderFiles: map[string]string{"Authorization": writeFile(t, "Bearer "+token)},
		OnStatus:    log.record,
	})
	_, err := r.Import(context.Background(), jid)
	if err == nil {
		t.Fatal("Import succeeded")
	}
	st := log.waitState(t, mcpclient.StateStopped)
	t.Logf("import error: %v; status: %q", err, st.LastError)
	for _, s := range []string{err.Error(), st.LastError} {
		if strings.Contains(s, token) {
			t.Errorf("credential in %q", s)
		}
	}
}

func TestHTTPRedirectRefused(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer target.Close()
	ts := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer ts.Close()
	r, _ := newRuntime(t, mcpclient.Options{URL: ts.URL, HeaderFiles: map[string]string{"Authorization": writeFile(t, "Bearer x")}})
	if _, err := r.Import(context.Background(), jid); err == nil {
		t.Error("Import through a redirect succeeded")
	}
	if hits.Load() != 0 {
		t.Error("the redirect was followed")
	}
}

// Without cold start the upstream is kept warm: while it is down a call
// fails at once, and it comes up again by itself.
func TestKeepWarm(t *testing.T) {
	srv := mcptest.New(mcptest.Options{})
	var broken atomic.Bool
	broken.Store(true)
	log := newStatusLog()
	r, err := mcpclient.New(mcpclient.Options{
		Dial: func(ctx context.Context) (sdk.Transport, error) {
			if broken.Load() {
				return nil, errors.New("refused")
			}
			return srv.Dial(ctx)
		},
		BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
		// A call waits this long for the restarts before it fails.
		RestartWait: 50 * time.Millisecond,
		OnStatus:    log.record,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	log.waitState(t, mcpclient.StateBackoff)
	rec := runtimetest.NewRecorder()
	start(t, r, call("echo", `{"text":"x"}`), rec)
	if f := next(t, rec, runtimetest.KindFail).Failure; f.Code != runtime.CodeUnavailable || !f.Retryable {
		t.Errorf("failure %+v", f)
	}
	broken.Store(false)
	log.waitState(t, mcpclient.StateUp)
	start(t, r, call("echo", `{"text":"x"}`), rec)
	next(t, rec, runtimetest.KindComplete)
	r.Close()
	log.waitState(t, mcpclient.StateClosed)
}

// A call that finds a kept-warm upstream restarting (in backoff) waits for
// the restart, and completes once it is up.
func TestCallWaitsForRestart(t *testing.T) {
	srv := mcptest.New(mcptest.Options{})
	var broken atomic.Bool
	broken.Store(true)
	attempts := make(chan struct{}, 1)
	r, err := mcpclient.New(mcpclient.Options{
		Dial: func(ctx context.Context) (sdk.Transport, error) {
			if broken.Load() {
				select {
				case attempts <- struct{}{}:
				default:
				}
				return nil, errors.New("refused")
			}
			return srv.Dial(ctx)
		},
		BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	<-attempts
	rec := runtimetest.NewRecorder()
	start(t, r, call("echo", `{"text":"waited"}`), rec)
	// Restarts keep failing for a while after the call arrived.
	<-attempts
	<-attempts
	broken.Store(false)
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "waited" {
		t.Fatalf("result %q", got)
	}
}

// A cold-startable upstream stops when idle and wakes for the next call.
func TestIdleStopAndColdStart(t *testing.T) {
	log := newStatusLog()
	r, _ := newRuntime(t, mcpclient.Options{IdleTimeout: 50 * time.Millisecond, OnStatus: log.record})
	if s := r.Status(); s.State != mcpclient.StateStopped {
		t.Errorf("initial state %s", s.State)
	}
	rec := runtimetest.NewRecorder()
	start(t, r, call("echo", `{"text":"x"}`), rec)
	next(t, rec, runtimetest.KindComplete)
	log.waitState(t, mcpclient.StateUp)
	log.waitState(t, mcpclient.StateStopped)
	start(t, r, call("echo", `{"text":"y"}`), rec)
	next(t, rec, runtimetest.KindComplete)
	if s := r.Status(); s.Starts != 2 || s.Failures != 0 {
		t.Errorf("status %+v", s)
	}
}

func TestOptionsChecked(t *testing.T) {
	secret := writeFile(t, "line1\nline2")
	for _, tc := range []struct {
		name string
		opts mcpclient.Options
		want string
	}{
		{"none", mcpclient.Options{}, "exactly one of command and url"},
		{"both", mcpclient.Options{Command: []string{"x"}, URL: "http://h/"}, "exactly one"},
		{"userinfo", mcpclient.Options{URL: "https://u:p@h/mcp"}, "userinfo"},
		{"scheme", mcpclient.Options{URL: "ftp://h/"}, "scheme"},
		{"missing file", mcpclient.Options{URL: "http://h/", HeaderFiles: map[string]string{"Authorization": "/nonexistent/agentgw"}}, "header_files.Authorization"},
		{"bad value", mcpclient.Options{URL: "http://h/", HeaderFiles: map[string]string{"X-Key": secret}}, "not a valid header value"},
		{"reserved", mcpclient.Options{URL: "http://h/", HeaderFiles: map[string]string{"mcp-session-id": secret}}, "set by the transport"},
		{"env name", mcpclient.Options{Command: []string{"x"}, EnvFiles: map[string]string{"1X": secret}}, "invalid variable name"},
		{"env without command", mcpclient.Options{URL: "http://h/", EnvPass: []string{"X"}}, "need command"},
	} {
		_, err := mcpclient.New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "line1") {
			t.Errorf("%s: file content in %q", tc.name, err)
		}
	}
}
