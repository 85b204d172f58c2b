package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"agentgw/internal/privfile"
	"agentgw/runtime"
)

// clientName and clientVersion are the clientInfo the runtime sends in
// initialize (and in every request's _meta at 2026-07-28). They name the
// bridge, never the caller.
const (
	clientName    = "agentgw"
	clientVersion = "0"
)

// relatedTaskMeta is the _meta member by which MCP Tasks relate a
// server-to-client request (elicitation) to a task.
const relatedTaskMeta = "io.modelcontextprotocol/related-task"

// Runtime bridges the tools of one endpoint to an upstream MCP server. It
// implements runtime.Runtime; Import produces the endpoint's manifest.
type Runtime struct {
	opts Options
	// tempDir is the working directory New made (no Dir given), removed
	// at Close.
	tempDir string
	client  *sdk.Client
	up      *upstream
	cancel  context.CancelFunc
	seq     atomic.Uint64

	mu      sync.Mutex
	byToken map[string]*execution                          // progress token
	byTask  map[taskKey]*execution                         // MCP task ID
	active  map[*sdk.ClientSession]map[*execution]struct{} // calls in flight
}

// taskKey identifies an MCP task: task IDs are scoped to a session.
type taskKey struct {
	cs *sdk.ClientSession
	id string
}

var _ runtime.Runtime = (*Runtime)(nil)

// New checks opts and returns the runtime. Credential files must be
// readable now (they are read again at each connection); errors name the
// option, never a value. A runtime that is kept warm starts its upstream
// at once, in the background. Close releases it.
func New(opts Options) (*Runtime, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	tempDir := ""
	if len(opts.Command) > 0 && opts.Dir == "" {
		d, err := privfile.TempWorkDir()
		if err != nil {
			return nil, fmt.Errorf("mcp runtime: working directory: %w", err)
		}
		opts.Dir, tempDir = d, d
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{
		opts:    opts,
		tempDir: tempDir,
		cancel:  cancel,
		byToken: make(map[string]*execution),
		byTask:  make(map[taskKey]*execution),
		active:  make(map[*sdk.ClientSession]map[*execution]struct{}),
	}
	r.up = &upstream{r: r, ctx: ctx, changed: make(chan struct{})}
	r.up.st.Since = time.Now()
	r.client = sdk.NewClient(&sdk.Implementation{Name: clientName, Version: clientVersion}, &sdk.ClientOptions{
		// Form elicitation only: URL mode has no XMPP representation, and
		// neither roots nor sampling are offered.
		// At 2026-07-28 the tasks extension is declared too: the server
		// then may answer tools/call with a task (tasks.go).
		Capabilities: &sdk.ClientCapabilities{
			Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}},
			Extensions:  map[string]any{extTasks: map[string]any{}},
		},
		// MRTR input requests are answered by the bridge itself (mrtr.go):
		// the go-sdk's automatic retry would hide them.
		MultiRoundTrip:         &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler:     r.elicit,
		ToolListChangedHandler: r.toolsChanged,
		Logger:                 discardLogger,
	})
	if err := registerTaskMethods(r.client); err != nil {
		cancel()
		return nil, err
	}
	if opts.KeepWarm {
		r.up.mu.Lock()
		st, seq := r.up.beginStartLocked()
		r.up.mu.Unlock()
		r.up.notify(st, seq)
	}
	return r, nil
}

// Close stops the upstream (a stdio server gets its input closed, then
// SIGTERM and SIGKILL after Options.TerminateGrace each) and ends every
// execution's call. It is safe to call more than once.
func (r *Runtime) Close() error {
	// A start in progress is abandoned first, so that Close never waits
	// for ConnectTimeout.
	r.cancel()
	r.up.close()
	if r.tempDir != "" {
		// The directory New made for the server; nobody else uses it.
		os.RemoveAll(r.tempDir)
	}
	return nil
}

// Status returns the upstream's status.
func (r *Runtime) Status() Status { return r.up.status() }

// CanResume reports false: an MCP call, or the session that carries an
// MCP task, does not survive the gateway.
func (r *Runtime) CanResume() bool { return false }

// Resume returns runtime.ErrNotResumable.
func (r *Runtime) Resume(context.Context, runtime.Call, runtime.Reporter) (runtime.Execution, error) {
	return nil, runtime.ErrNotResumable
}

// Start begins the call in the background and returns at once. If the
// upstream is down and may not be started (ColdStart unset), the task
// fails with unavailable, retryable.
func (r *Runtime) Start(ctx context.Context, call runtime.Call, rep runtime.Reporter) (runtime.Execution, error) {
	e := newExecution(r, call, rep)
	go e.run(ctx)
	return e, nil
}

// register makes e reachable by its progress token and as a call in
// flight on cs.
func (r *Runtime) register(e *execution, cs *sdk.ClientSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byToken[e.token] = e
	set := r.active[cs]
	if set == nil {
		set = make(map[*execution]struct{})
		r.active[cs] = set
	}
	set[e] = struct{}{}
}

func (r *Runtime) unregister(e *execution, cs *sdk.ClientSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byToken, e.token)
	if set := r.active[cs]; set != nil {
		delete(set, e)
		if len(set) == 0 {
			delete(r.active, cs)
		}
	}
	for k, v := range r.byTask {
		if v == e {
			delete(r.byTask, k)
		}
	}
}

func (r *Runtime) registerTask(e *execution, cs *sdk.ClientSession, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byTask[taskKey{cs, id}] = e
}

// progress routes notifications/progress to the execution that owns the
// token. The tap calls it in wire order, so it must not block.
func (r *Runtime) progress(params json.RawMessage) {
	var p struct {
		ProgressToken any     `json:"progressToken"`
		Progress      float64 `json:"progress"`
		Total         float64 `json:"total"`
		Message       string  `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	r.mu.Lock()
	e := r.byToken[tok]
	r.mu.Unlock()
	if e != nil {
		e.onProgress(p.Progress, p.Total, p.Message)
	}
}

// elicit routes elicitation/create to an execution: the one whose call
// context carries it (URL elicitation raised as an error by tools/call),
// the one driving the related MCP task, or the only call in flight on the
// session. Anything else cannot be attributed and is answered "cancel".
func (r *Runtime) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	e, _ := ctx.Value(execKey{}).(*execution)
	if e == nil {
		e = r.route(req.Session, req.Params.Meta)
	}
	if e == nil {
		return &sdk.ElicitResult{Action: "cancel"}, nil
	}
	return e.onElicit(ctx, req.Params)
}

// execKey carries the execution in the context of its calls.
type execKey struct{}

func (r *Runtime) route(cs *sdk.ClientSession, meta map[string]any) *execution {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rel, ok := meta[relatedTaskMeta].(map[string]any); ok {
		if id, ok := rel["taskId"].(string); ok {
			return r.byTask[taskKey{cs, id}]
		}
	}
	if set := r.active[cs]; len(set) == 1 {
		for e := range set {
			return e
		}
	}
	return nil
}

// toolsChanged forgets what the session knows of its tools and tells the
// gateway.
func (r *Runtime) toolsChanged(context.Context, *sdk.ToolListChangedRequest) {
	r.up.mu.Lock()
	s := r.up.sess
	r.up.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		s.taskSupport = nil
		s.mu.Unlock()
	}
	if r.opts.OnToolsChanged != nil {
		r.opts.OnToolsChanged()
	}
}

// newToken returns a progress token unique within the runtime. It is
// opaque to the server and names neither the caller nor the task.
func (r *Runtime) newToken() string {
	return fmt.Sprintf("agentgw-%d", r.seq.Add(1))
}
