package mcpsync

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"agentgw/db"
	"agentgw/runtime/mcpclient"
)

// SyncTimeout bounds one import an Endpoint runs in the background.
const SyncTimeout = 2 * time.Minute

// Availability hears whether an endpoint's MCP server is up;
// *legacy.Availability (gateway.Gateway.Availability) implements it, so
// that presence follows.
type Availability interface {
	MarkDown(endpoint string)
	MarkUp(endpoint string)
}

// EndpointOptions configures an Endpoint.
type EndpointOptions struct {
	// Availability, if set, is told each time the server goes up or down.
	Availability Availability
	// Log receives the imports and the server's availability changes.
	// Nil discards them.
	Log *slog.Logger
	// Adjust, if set, may change the runtime options before the runtime
	// is built (tests shorten timeouts with it).
	Adjust func(*mcpclient.Options)
}

// Endpoint is an mcp endpoint hosted by `agentgw serve`: the runtime that
// executes its tools, with the endpoint's presence following the server's
// availability and an import whenever the tool list may have changed.
type Endpoint struct {
	jid   string
	store *db.Store
	avail Availability
	log   *slog.Logger
	// rt is set once, before ready is closed: the runtime may report its
	// status (and so ask for an import) before mcpclient.New has returned.
	rt    *mcpclient.Runtime
	ready chan struct{}

	// ctx ends at Close; background imports run under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// syncMu serializes imports: one at a time per endpoint.
	syncMu sync.Mutex

	mu       sync.Mutex
	running  bool // a background import loop runs
	again    bool // an import was asked for while it ran
	imported bool // an import succeeded in this process
	closed   bool
}

// NewEndpoint builds the runtime of the endpoint jid (runtime "mcp") from
// o, the runtime options app makes of its [[endpoint]]. The endpoint
// counts as down until its server is up. A server kept warm is started at
// once. The tool list is imported by Sync, by Resync, and in the
// background whenever the server comes up or announces
// notifications/tools/list_changed. An error means the runtime refused
// its options; it names the option, never a value.
func NewEndpoint(store *db.Store, jid string, o mcpclient.Options, opts EndpointOptions) (*Endpoint, error) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Endpoint{jid: jid, store: store, avail: opts.Availability, log: opts.Log, ctx: ctx, cancel: cancel,
		ready: make(chan struct{})}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.log = e.log.With("endpoint", jid)
	if e.avail != nil {
		e.avail.MarkDown(e.jid)
	}
	o.OnStatus = e.onStatus
	o.OnToolsChanged = e.Resync
	if opts.Adjust != nil {
		opts.Adjust(&o)
	}
	rt, err := mcpclient.New(o)
	if err != nil {
		cancel()
		return nil, err
	}
	e.rt = rt
	close(e.ready)
	return e, nil
}

// Runtime returns the endpoint's runtime, for the task service.
func (e *Endpoint) Runtime() *mcpclient.Runtime { return e.rt }

// JID returns the endpoint's bare JID.
func (e *Endpoint) JID() string { return e.jid }

// Sync imports the tool list now and records it, after any import in
// progress. It logs the outcome; an error leaves the active version as it
// is, and the import runs again when the server next comes up.
func (e *Endpoint) Sync(ctx context.Context) (*Result, error) {
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	res, err := Sync(ctx, e.store, e.rt, e.jid)
	if err != nil {
		if e.ctx.Err() == nil {
			e.log.Warn("mcp: import failed; the active version stays", "err", err)
		}
		return nil, err
	}
	// The first import of this process and every change are worth the
	// operator's attention; an unchanged list again (servers announce
	// list_changed freely) is not.
	e.mu.Lock()
	quiet := e.imported && !res.Changed
	e.imported = true
	e.mu.Unlock()
	info, warn := slog.LevelInfo, slog.LevelWarn
	if quiet {
		info, warn = slog.LevelDebug, slog.LevelDebug
	}
	e.log.Log(ctx, info, "mcp: tools imported", "version", res.Version, "tools", res.Tools, "skipped", len(res.Skipped),
		"changed", res.Changed, "activated", res.Activated, "active", res.Active)
	for _, s := range res.Skipped {
		e.log.Log(ctx, warn, "mcp: tool left out", "version", res.Version, "tool", s.Tool, "reason", s.Reason)
	}
	return res, nil
}

// Resync asks for an import in the background. Requests that arrive while
// one runs are folded into one more. It never blocks: the runtime calls
// it on notifications/tools/list_changed.
func (e *Endpoint) Resync() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.again = true
	if e.running {
		return
	}
	e.running = true
	e.wg.Add(1)
	go e.loop()
}

// loop runs the imports Resync asked for.
func (e *Endpoint) loop() {
	defer e.wg.Done()
	select {
	case <-e.ready:
	case <-e.ctx.Done():
		e.mu.Lock()
		e.running = false
		e.mu.Unlock()
		return
	}
	for {
		e.mu.Lock()
		if !e.again || e.closed {
			e.running = false
			e.mu.Unlock()
			return
		}
		e.again = false
		e.mu.Unlock()
		ctx, cancel := context.WithTimeout(e.ctx, SyncTimeout)
		_, _ = e.Sync(ctx)
		cancel()
	}
}

// onStatus makes presence follow the server and imports again whenever it
// comes up. The runtime calls it in order; it must not block.
func (e *Endpoint) onStatus(st mcpclient.Status) {
	if e.avail != nil {
		if st.Up {
			e.avail.MarkUp(e.jid)
		} else {
			e.avail.MarkDown(e.jid)
		}
	}
	switch {
	case st.Up:
		e.log.Info("mcp: server up", "server", st.ServerName, "server_version", st.ServerVersion, "protocol", st.ProtocolVersion)
	case st.State == mcpclient.StateBackoff:
		e.log.Warn("mcp: server down; restarting", "at", st.RetryAt.Format(time.RFC3339Nano), "failures", st.Failures, "err", st.LastError)
	case st.State == mcpclient.StateStopped && st.Failures > 0:
		e.log.Warn("mcp: server down; the next call starts it", "failures", st.Failures, "err", st.LastError)
	default:
		e.log.Debug("mcp: server " + st.State.String())
	}
	// A server that comes up may bring other tools than the last import
	// saw: it was unreachable then, or was upgraded before a restart. An
	// unchanged list costs one tools/list and changes nothing.
	if st.Up {
		e.Resync()
	}
}

// Close stops background imports and the server.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	err := e.rt.Close()
	e.wg.Wait()
	return err
}
