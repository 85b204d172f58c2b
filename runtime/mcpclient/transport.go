package mcpclient

// The transports: how a session with the MCP server is made (a stdio
// process or a Streamable HTTP client) and initialized. upstream.go keeps
// the lifecycle around it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"agentgw/runtime"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect starts the transport and makes a session: server/discover at
// ProtocolVersion, or initialize where the server does not offer it.
func (r *Runtime) connect(ctx context.Context) (*session, error) {
	sec, err := r.opts.loadSecrets()
	if err != nil {
		return nil, err
	}
	s := &session{secrets: sec, done: make(chan struct{})}
	var (
		inner   sdk.Transport
		version *atomic.Value
	)
	switch {
	case r.opts.Dial != nil:
		if inner, err = r.opts.Dial(ctx); err != nil {
			return nil, fmt.Errorf("dial: %w", err)
		}
	case len(r.opts.Command) > 0:
		cmd, err := r.command(sec)
		if err != nil {
			return nil, err
		}
		s.stderr = &runtime.Tail{Max: stderrTail}
		cmd.Stderr = s.stderr
		inner = &sdk.CommandTransport{Command: cmd, TerminateDuration: r.opts.TerminateGrace}
	default:
		version = new(atomic.Value)
		version.Store("")
		inner = &sdk.StreamableClientTransport{
			Endpoint:             r.opts.URL,
			HTTPClient:           r.httpClient(sec, version),
			DisableStandaloneSSE: true,
		}
	}
	tap := &tapTransport{inner: inner, progress: r.progress}
	if ct, ok := inner.(*sdk.CommandTransport); ok && r.opts.Tracker != nil {
		tap.started = func() {
			if ct.Command.Process != nil {
				r.opts.Tracker.Started(ct.Command.Process.Pid)
			}
		}
	}
	init := &capture{method: "initialize"}
	cs, err := r.client.Connect(withCapture(ctx, init), tap, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		msg := err.Error()
		if ct, ok := inner.(*sdk.CommandTransport); ok && ct.Command.Process != nil {
			signalGroup(ct.Command.Process.Pid)
			if r.opts.Tracker != nil {
				r.opts.Tracker.Ended(ct.Command.Process.Pid)
			}
		}
		if s.stderr != nil {
			// A server that dies at once says why on standard error.
			time.Sleep(50 * time.Millisecond)
			if t := s.stderr.Text(s.secrets.redact); t != "" {
				msg += "; stderr: " + t
			}
		}
		return nil, errors.New(sec.redact(msg))
	}
	s.cs, s.tap, s.started = cs, tap.conn, time.Now()
	var pid int
	if ct, ok := inner.(*sdk.CommandTransport); ok && ct.Command.Process != nil {
		pid = ct.Command.Process.Pid
	}
	ir := cs.InitializeResult()
	if raw, _, ok := init.outcome(); ok {
		s.parseInitialize(raw)
	} else {
		// Reached through server/discover (the go-sdk keeps its
		// capabilities and serverInfo whole); or nothing was captured.
		if ir.ServerInfo != nil {
			s.serverName, s.serverTitle, s.serverVersion = ir.ServerInfo.Name, ir.ServerInfo.Title, ir.ServerInfo.Version
		}
		if ir.Capabilities != nil {
			_, s.tasksExt = ir.Capabilities.Extensions[extTasks]
		}
	}
	if s.protocolVersion == "" {
		s.protocolVersion = ir.ProtocolVersion
	}
	s.current = s.protocolVersion >= ProtocolVersion
	if version != nil {
		version.Store(s.protocolVersion)
	}
	go func() {
		_ = cs.Wait()
		if pid > 0 {
			// The go-sdk signals only the process it started; whatever
			// remains of its group (npx starts node, for example) goes too.
			signalGroup(pid)
			if r.opts.Tracker != nil {
				r.opts.Tracker.Ended(pid)
			}
		}
		close(s.done)
	}()
	return s, nil
}

// parseInitialize reads what the go-sdk drops from the raw initialize
// result: the tasks capability, and serverInfo as sent.
func (s *session) parseInitialize(raw json.RawMessage) {
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name, Title, Version string
		} `json:"serverInfo"`
		Capabilities struct {
			Tasks *struct {
				Cancel   json.RawMessage `json:"cancel"`
				Requests struct {
					Tools struct {
						Call json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(raw, &res) != nil {
		return
	}
	s.protocolVersion = res.ProtocolVersion
	s.serverName, s.serverTitle, s.serverVersion = res.ServerInfo.Name, res.ServerInfo.Title, res.ServerInfo.Version
	if t := res.Capabilities.Tasks; t != nil {
		s.tasksCall = present(t.Requests.Tools.Call)
		s.tasksCancel = present(t.Cancel)
	}
}

// present reports whether a JSON member was given and is not null.
func present(v json.RawMessage) bool {
	return len(v) > 0 && string(v) != "null"
}

// command builds the stdio server's process: its own process group, a
// minimal environment, and the program looked up in that environment's
// PATH.
func (r *Runtime) command(sec *secrets) (*osexec.Cmd, error) {
	env := []string{"PATH=" + basePath, "LANG=C.UTF-8"}
	env = append(env, r.opts.Env...)
	env = append(env, sec.env...)
	prog := r.opts.Command[0]
	if !strings.Contains(prog, "/") {
		path := basePath
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
		found := ""
		for _, dir := range filepath.SplitList(path) {
			p := filepath.Join(dir, prog)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode().Perm()&0o111 != 0 {
				found = p
				break
			}
		}
		if found == "" {
			return nil, fmt.Errorf("command %q not found in PATH", prog)
		}
		prog = found
	}
	cmd := osexec.Command(prog, r.opts.Command[1:]...)
	cmd.Env = env
	cmd.Dir = r.opts.Dir // never empty: New made a private one
	setGroup(cmd)
	if err := r.opts.Sandbox.ForWork(r.opts.Dir).Apply(cmd); err != nil {
		return nil, err
	}
	return cmd, nil
}

// httpClient returns the client of a Streamable HTTP upstream: the
// configured headers on every request, the negotiated protocol version
// (which the go-sdk cannot set through the tap), and no redirects, so
// that credentials never travel to another origin.
func (r *Runtime) httpClient(sec *secrets, version *atomic.Value) *http.Client {
	base := http.DefaultTransport
	var c http.Client
	if r.opts.HTTPClient != nil {
		c = *r.opts.HTTPClient
		if c.Transport != nil {
			base = c.Transport
		}
	}
	c.Transport = &headerTransport{base: base, headers: sec.headers, version: version}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	version *atomic.Value
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range t.headers {
		req.Header[k] = vs
	}
	if v, _ := t.version.Load().(string); v != "" && req.Header.Get("Mcp-Protocol-Version") == "" {
		req.Header.Set("Mcp-Protocol-Version", v)
	}
	if err := setTaskName(req); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(req)
}

// setTaskName sets the Mcp-Name header of a tasks-extension request to its
// taskId, as the extension requires over Streamable HTTP (so that a router
// finds the instance holding the task); the go-sdk sets Mcp-Method for
// every request but Mcp-Name only for its own methods.
func setTaskName(req *http.Request) error {
	switch req.Header.Get("Mcp-Method") {
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
	default:
		return nil
	}
	if req.Body == nil || req.Header.Get("Mcp-Name") != "" {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	var msg struct {
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Params.TaskID != "" {
		req.Header.Set("Mcp-Name", msg.Params.TaskID)
	}
	return nil
}
