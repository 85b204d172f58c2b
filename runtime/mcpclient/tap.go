package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk client decodes every result into its own types, which drop
// members it does not know (execution.taskSupport, capabilities.tasks,
// unknown content fields) and cannot represent an MCP Tasks
// CreateTaskResult. The tap sits between the go-sdk and its transport: a
// request whose context carries a *capture is recorded by JSON-RPC ID,
// optionally augmented with params.task, and the raw bytes of its response
// are kept whole before the go-sdk sees them.

// capture records the raw outcome of one outgoing request.
type capture struct {
	// method is the JSON-RPC method the capture is for; another request
	// sent with the same context is not captured.
	method string
	// task, if set, is added to the request's params as "task" (an MCP
	// Tasks task-augmented request).
	task json.RawMessage
	// replace, if set, is handed to the go-sdk instead of a successful
	// result, so that its decoding never fails on content it does not know.
	replace json.RawMessage

	mu      sync.Mutex
	claimed bool
	sent    bool // the request was written to the transport
	done    bool
	result  json.RawMessage
	rpcErr  *jsonrpc.Error
}

type captureKey struct{}

// withCapture returns ctx carrying c.
func withCapture(ctx context.Context, c *capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// claim marks c as used by one request; a capture serves one request only.
func (c *capture) claim() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claimed {
		return false
	}
	c.claimed = true
	return true
}

func (c *capture) fill(resp *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	if resp.Error != nil {
		var we *jsonrpc.Error
		if !errors.As(resp.Error, &we) {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError}
		}
		c.rpcErr = we
		return
	}
	c.result = bytes.Clone(resp.Result)
}

// outcome returns the raw result or the JSON-RPC error of the response;
// ok is false when no response arrived (a transport failure or a
// cancellation).
// wasSent reports whether the request was written to the transport: a
// request that was not never reached the server.
func (c *capture) wasSent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

func (c *capture) outcome() (result json.RawMessage, rpcErr *jsonrpc.Error, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.result, c.rpcErr, c.done
}

// tapTransport wraps the transport of a session with a tapConn.
type tapTransport struct {
	inner sdk.Transport
	// progress receives notifications/progress in wire order.
	progress func(params json.RawMessage)
	conn     *tapConn // set by Connect
	// started, if set, runs once the inner transport has connected (a
	// stdio server's process has started).
	started func()
}

// Connect implements sdk.Transport.
func (t *tapTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if t.started != nil {
		// The stdio server's process has started; it is recorded before
		// the session is initialized.
		t.started()
	}
	t.conn = &tapConn{inner: c, progress: t.progress, pending: make(map[jsonrpc.ID]*capture)}
	return t.conn, nil
}

// tapConn is an sdk.Connection that records captured responses.
type tapConn struct {
	inner    sdk.Connection
	progress func(params json.RawMessage)
	mu       sync.Mutex
	pending  map[jsonrpc.ID]*capture
}

// Read implements sdk.Connection. Progress notifications are handled here,
// in the order they arrive: the go-sdk delivers responses and handles
// notifications on different goroutines, so a call's last progress could
// otherwise be reported after its result.
func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.inner.Read(ctx)
	for err == nil {
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.Method != "notifications/progress" || c.progress == nil {
			break
		}
		c.progress(req.Params)
		msg, err = c.inner.Read(ctx)
	}
	if err != nil {
		return msg, err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return msg, nil
	}
	c.mu.Lock()
	cp := c.pending[resp.ID]
	delete(c.pending, resp.ID)
	c.mu.Unlock()
	if cp == nil {
		return msg, nil
	}
	cp.fill(resp)
	if resp.Error == nil && cp.replace != nil {
		r := *resp
		r.Result = cp.replace
		return &r, nil
	}
	return msg, nil
}

// Write implements sdk.Connection.
func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return c.inner.Write(ctx, msg)
	}
	cp, _ := ctx.Value(captureKey{}).(*capture)
	if cp == nil || cp.method != req.Method || !cp.claim() {
		return c.inner.Write(ctx, msg)
	}
	if cp.task != nil {
		params, err := withMember(req.Params, "task", cp.task)
		if err != nil {
			return err
		}
		r := *req
		r.Params = params
		msg = &r
	}
	c.mu.Lock()
	c.pending[req.ID] = cp
	c.mu.Unlock()
	if err := c.inner.Write(ctx, msg); err != nil {
		c.mu.Lock()
		delete(c.pending, req.ID)
		c.mu.Unlock()
		return err
	}
	cp.mu.Lock()
	cp.sent = true
	cp.mu.Unlock()
	return nil
}

// Close implements sdk.Connection.
func (c *tapConn) Close() error { return c.inner.Close() }

// SessionID implements sdk.Connection.
func (c *tapConn) SessionID() string { return c.inner.SessionID() }

// withMember returns the JSON object obj with member name set to value.
func withMember(obj json.RawMessage, name string, value json.RawMessage) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(obj)) > 0 && !bytes.Equal(bytes.TrimSpace(obj), []byte("null")) {
		if err := json.Unmarshal(obj, &m); err != nil {
			return nil, err
		}
	}
	m[name] = value
	return json.Marshal(m)
}
