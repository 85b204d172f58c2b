package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"agentgw/runtime"
	"agentgw/wire"
)

// Failure codes of this bridge (namespace-qualified, "Error Handling").
const (
	// CodeURLElicitation: the tool asked for URL-mode elicitation (a
	// browser interaction), which XMPP cannot carry.
	CodeURLElicitation = "agentgw.mcp:url-elicitation"
	// CodeElicitationUnsupported: a form elicitation whose schema cannot be
	// expressed under the version-0 rules.
	CodeElicitationUnsupported = "agentgw.mcp:elicitation-unsupported"
	// CodeTaskFailed: an MCP task ended failed without a tool result.
	CodeTaskFailed = "agentgw.mcp:task-failed"
	// CodeTaskCancelled: the server cancelled an MCP task on its own.
	CodeTaskCancelled = "agentgw.mcp:task-cancelled"
	// CodeTasksUnsupported: the tool requires MCP Tasks but the server
	// does not declare task-augmented tools/call.
	CodeTasksUnsupported = "agentgw.mcp:tasks-unsupported"
)

// codeURLElicitationRequired is the JSON-RPC error of MCP 2025-11-25 by
// which a server demands URL-mode elicitation before a call.
const codeURLElicitationRequired = -32042

// detailsJSONRPCCode names the JSON-RPC error code in failure details.
const detailsJSONRPCCode = "agentgw.mcp:jsonrpc-code"

// Limits of the task event payload that the bridge fits reports into.
const (
	maxMessageChars  = 4096
	maxQuestionChars = 4096
	eventQueue       = 64
)

// Fixed, safe failure messages: nothing from the upstream reaches them.
var (
	failNotAvailable = runtime.Failure{Code: runtime.CodeUnavailable, Retryable: true,
		Message: "The MCP server is not available."}
	failLost = runtime.Failure{Code: runtime.CodeUnavailable, Retryable: true,
		Message: "The connection to the MCP server failed during the call."}
	failRPC = runtime.Failure{Code: runtime.CodeUnavailable, Retryable: true,
		Message: "The MCP server refused or failed the request."}
	failURL = runtime.Failure{Code: CodeURLElicitation,
		Message: "The tool asked for a browser interaction (URL elicitation), which this gateway cannot relay."}
	failElicitSchema = runtime.Failure{Code: CodeElicitationUnsupported,
		Message: "The tool asked for input with a form this gateway cannot represent."}
	failTaskFailed = runtime.Failure{Code: CodeTaskFailed,
		Message: "The MCP task failed without a tool result."}
	failTaskCancelled = runtime.Failure{Code: CodeTaskCancelled,
		Message: "The MCP server cancelled the task."}
	failNoTasks = runtime.Failure{Code: CodeTasksUnsupported,
		Message: "The tool requires MCP Tasks, which the MCP server does not offer."}
	failInternal = runtime.Failure{Code: runtime.CodeInternalError,
		Message: "The gateway could not encode the call."}
)

// execution is one tool call on the upstream.
type execution struct {
	r     *Runtime
	call  runtime.Call
	rep   runtime.Reporter
	token string

	events    chan event
	cancelReq chan struct{}
	cancelOne sync.Once
	done      chan struct{}

	mu      sync.Mutex
	pending *elicitation // awaiting the caller's answer
	note    string
}

// eventKind says which member of event is set.
type eventKind int

const (
	evProgress eventKind = iota
	evElicit
	evOutcome
)

type event struct {
	kind     eventKind
	progress runtime.Progress
	elicit   *elicitation
	outcome  outcome
}

// outcome is how the MCP side of a call ended.
type outcome struct {
	result    json.RawMessage // a CallToolResult: completed
	failure   *runtime.Failure
	cancelled bool // ended by our cancellation
	note      string
	// undelivered: the session failed before tools/call was written to
	// it, so the server never saw the call, which may be made again on
	// the next session.
	undelivered bool
}

// deadSessionWait bounds the wait for a session on which a request could
// not be written to end, before the call is made on the next session.
const deadSessionWait = time.Second

// errUndelivered means a tools/call was never written to the transport.
var errUndelivered = errors.New("mcp: the request was not sent")

// elicitation is one elicitation/create waiting for the caller.
type elicitation struct {
	question string
	schema   json.RawMessage
	fail     *runtime.Failure // set when it cannot be relayed
	reply    chan *sdk.ElicitResult
}

func newExecution(r *Runtime, call runtime.Call, rep runtime.Reporter) *execution {
	return &execution{
		r:         r,
		call:      call,
		rep:       rep,
		token:     r.newToken(),
		events:    make(chan event, eventQueue),
		cancelReq: make(chan struct{}),
		done:      make(chan struct{}),
	}
}

// Input delivers the caller's answer to the pending elicitation as an
// "accept" with that content.
func (e *execution) Input(answer json.RawMessage) error {
	var content map[string]any
	if err := json.Unmarshal(answer, &content); err != nil || content == nil {
		return fmt.Errorf("mcp: input answer must be a JSON object")
	}
	e.mu.Lock()
	el := e.pending
	e.pending = nil
	e.mu.Unlock()
	if el == nil {
		return runtime.ErrNotWaiting
	}
	el.reply <- &sdk.ElicitResult{Action: "accept", Content: content}
	return nil
}

// Cancel asks the call to stop: notifications/cancelled for a plain call,
// tasks/cancel for an MCP task. It never blocks.
func (e *execution) Cancel() { e.cancelOne.Do(func() { close(e.cancelReq) }) }

// Done is closed when the call has ended and nothing more is reported.
func (e *execution) Done() <-chan struct{} { return e.done }

// Diagnostics returns a note on an abnormal end; there is no per-call
// process, so ExitCode is -1 and Stderr empty (the upstream's standard
// error is in Status.LastError when it dies).
func (e *execution) Diagnostics() runtime.Diagnostics {
	e.mu.Lock()
	defer e.mu.Unlock()
	return runtime.Diagnostics{ExitCode: -1, Note: e.note}
}

func (e *execution) setNote(s string) {
	e.mu.Lock()
	if e.note == "" {
		e.note = s
	}
	e.mu.Unlock()
}

// answerPending answers a pending elicitation with action (cancel).
func (e *execution) answerPending(action string) {
	e.mu.Lock()
	el := e.pending
	e.pending = nil
	e.mu.Unlock()
	if el != nil {
		el.reply <- &sdk.ElicitResult{Action: action}
	}
}

// onProgress turns notifications/progress into a progress report. It
// never blocks: under backpressure a report is dropped.
func (e *execution) onProgress(progress, total float64, message string) {
	var p runtime.Progress
	if total > 0 && !math.IsNaN(progress) && !math.IsInf(progress, 0) {
		pct := math.Min(100, math.Max(0, progress/total*100))
		p.Percent = &pct
	}
	p.Message = safeText(message, maxMessageChars)
	if p.Percent == nil && p.Message == "" {
		// Progress without a total and without a message has no scale
		// the caller could read.
		return
	}
	select {
	case e.events <- event{kind: evProgress, progress: p}:
	default:
	}
}

// onElicit hands an elicitation to the execution and waits for the
// answer, the task's end, or the server's cancellation of the request.
func (e *execution) onElicit(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	el := &elicitation{reply: make(chan *sdk.ElicitResult, 1)}
	mode := p.Mode
	if mode == "" && (p.URL != "" || p.ElicitationID != "") {
		mode = "url"
	}
	switch mode {
	case "", "form":
		schema, err := elicitSchema(p.RequestedSchema)
		if err != nil {
			el.fail = &failElicitSchema
			e.setNote("elicitation schema not representable: " + err.Error())
			break
		}
		el.schema = schema
		el.question = safeText(p.Message, maxQuestionChars)
		if el.question == "" {
			el.question = "The tool asks for input."
		}
	default:
		el.fail = &failURL
	}
	select {
	case e.events <- event{kind: evElicit, elicit: el}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-e.done:
		return &sdk.ElicitResult{Action: "cancel"}, nil
	}
	select {
	case res := <-el.reply:
		return res, nil
	case <-ctx.Done():
		e.mu.Lock()
		if e.pending == el {
			e.pending = nil
		}
		e.mu.Unlock()
		return nil, ctx.Err()
	case <-e.done:
		return &sdk.ElicitResult{Action: "cancel"}, nil
	}
}

// run acquires the upstream, drives the call, and makes every report from
// this one goroutine. An upstream that is restarting is waited for, for
// Options.RestartWait at most (ctx, which ends when the task settles,
// bounds it too); so is a session that failed before the call was written
// to it, which the server never saw: the call is made on the next one.
func (e *execution) run(ctx context.Context) {
	defer close(e.done)
	until := time.Now().Add(e.r.opts.RestartWait)
	for e.attempt(ctx, until) {
	}
}

// attempt makes the call on one session and reports that it must be made
// again on the next: the session failed before the call was written to it.
func (e *execution) attempt(ctx context.Context, until time.Time) (again bool) {
	s, release, err := e.r.up.acquire(ctx, e.r.opts.ColdStart, false, until)
	if err != nil {
		if ctx.Err() == nil {
			e.setNote(err.Error())
			_ = e.rep.Fail(failNotAvailable)
		}
		return false
	}
	defer release()
	e.r.register(e, s.cs)
	defer e.r.unregister(e, s.cs)

	callCtx, stopCall := context.WithCancel(context.WithValue(ctx, execKey{}, e))
	defer stopCall()
	taskCancel := make(chan struct{})
	go func() {
		o := e.drive(callCtx, s, taskCancel)
		e.events <- event{kind: evOutcome, outcome: o}
	}()

	var (
		settled    bool // nothing more may be reported
		cancelling bool
		cancelC    = e.cancelReq
		ctxDone    = ctx.Done()
	)
	// report makes one report; a refusal other than ErrRejected settles.
	report := func(err error) error {
		if err != nil && !errors.Is(err, runtime.ErrRejected) {
			settled = true
			e.answerPending("cancel")
			stopCall()
		}
		return err
	}
	for {
		select {
		case ev := <-e.events:
			switch ev.kind {
			case evProgress:
				if !settled {
					_ = report(e.rep.Progress(ev.progress))
				}
			case evElicit:
				el := ev.elicit
				switch {
				case settled || cancelling:
					el.reply <- &sdk.ElicitResult{Action: "cancel"}
				case el.fail != nil:
					el.reply <- &sdk.ElicitResult{Action: "cancel"}
					_ = report(e.rep.Fail(*el.fail))
					settled = true
					stopCall()
				default:
					// Pending is set before the request is committed: the
					// answer can arrive as soon as it is.
					e.mu.Lock()
					e.pending = el
					e.mu.Unlock()
					err := report(e.rep.RequestInput(runtime.InputRequest{Question: el.question, Schema: el.schema}))
					if errors.Is(err, runtime.ErrRejected) {
						e.setNote("input request refused: " + err.Error())
						e.answerPending("cancel")
					}
				}
			case evOutcome:
				o := ev.outcome
				if o.undelivered && !settled && !cancelling && ctx.Err() == nil && time.Now().Before(until) {
					// The server never saw the call: wait for this session
					// to end (so that the next acquire finds it gone), then
					// make the call on the next one. A session that does not
					// end soon is not dead, and the failure stands.
					t := time.NewTimer(min(time.Until(until), deadSessionWait))
					defer t.Stop()
					select {
					case <-s.done:
						return true
					case <-t.C:
					case <-ctx.Done():
					}
				}
				if o.note != "" {
					e.setNote(o.note)
				}
				if !settled {
					switch {
					case o.result != nil:
						_ = e.rep.Complete(runtime.Result{Raw: o.result})
					case o.failure != nil:
						_ = e.rep.Fail(*o.failure)
					case o.cancelled || cancelling:
						_ = e.rep.Cancelled("")
					default:
						_ = e.rep.Fail(failLost)
					}
				}
				// No elicitation handler is left waiting on the ended call.
				e.answerPending("cancel")
				return
			}
		case <-cancelC:
			cancelC = nil
			if settled {
				continue
			}
			// The driver stops the call first and only then answers a
			// pending elicitation with "cancel": answered first, the tool
			// could finish on that answer and its result overtake the
			// cancellation.
			cancelling = true
			close(taskCancel)
		case <-ctxDone:
			// Settled by the gateway: stop the call, report nothing more,
			// and wait for the driver to return.
			ctxDone = nil
			settled = true
			e.answerPending("cancel")
			stopCall()
		}
	}
}

// drive performs the MCP side of the call: a plain tools/call, or an MCP
// task when the tool requires one. cancel is closed when the caller asks
// for cancellation.
func (e *execution) drive(ctx context.Context, s *session, cancel <-chan struct{}) outcome {
	if !s.current {
		// MCP Tasks of 2025-11-25 are requested by the client, for the
		// tools that require them; at 2026-07-28 the server decides.
		support, err := s.taskSupportFor(ctx, e.call.Tool.Name)
		if err != nil {
			if ctx.Err() != nil {
				return outcome{cancelled: true}
			}
			return outcome{failure: &failLost, note: "tools/list: " + s.secrets.redact(err.Error()), undelivered: true}
		}
		if support == "required" {
			if !s.tasksCall {
				return outcome{failure: &failNoTasks}
			}
			return e.driveTask(ctx, s, cancel)
		}
	}
	// A plain call is cancelled by cancelling its context: the go-sdk
	// then sends notifications/cancelled with the request's ID.
	// MCP: the sender of notifications/cancelled ignores any response
	// that arrives afterwards, so once the caller has cancelled the call
	// is cancelled, whatever the server still answers.
	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	var cancelled atomic.Bool
	go func() {
		select {
		case <-cancel:
			cancelled.Store(true)
			stop()
			if !s.current {
				// At 2026-07-28 a pending input request ends with callCtx;
				// an extension task answers it after tasks/cancel.
				e.answerPending("cancel")
			}
		case <-callCtx.Done():
		}
	}()
	if s.current {
		return e.callCurrent(callCtx, ctx, s, cancel, cancelled.Load)
	}
	raw, rpcErr, err := e.callTool(callCtx, s, nil, nil, "")
	switch {
	case cancelled.Load():
		return outcome{cancelled: true}
	case raw != nil:
		return e.resultOutcome(raw)
	case rpcErr != nil:
		return rpcOutcome(rpcErr, "tools/call")
	case callCtx.Err() != nil:
		return outcome{cancelled: true}
	default:
		return outcome{failure: &failLost, note: "tools/call: " + s.secrets.redact(errString(err)),
			undelivered: errors.Is(err, errUndelivered)}
	}
}

// callTool sends tools/call with the validated arguments and the progress
// token, optionally task-augmented, and returns the raw result or error.
// At 2026-07-28, responses and state answer an input_required result
// (MRTR).
func (e *execution) callTool(ctx context.Context, s *session, task json.RawMessage, responses map[string]*sdk.ElicitResult, state string) (json.RawMessage, *jsonrpc.Error, error) {
	cp := &capture{method: "tools/call", task: task, replace: emptyToolResult}
	params := &sdk.CallToolParams{Name: e.call.Tool.Name, Arguments: json.RawMessage(e.call.Arguments)}
	if len(bytes.TrimSpace(e.call.Arguments)) == 0 {
		params.Arguments = json.RawMessage("{}")
	}
	if len(responses) > 0 || state != "" {
		params.InputResponses = make(sdk.InputResponseMap, len(responses))
		for k, v := range responses {
			params.InputResponses[k] = v
		}
		params.RequestState = state
	}
	params.SetProgressToken(e.token)
	_, err := s.cs.CallTool(withCapture(ctx, cp), params)
	raw, rpcErr, ok := cp.outcome()
	if !ok {
		if err == nil {
			err = errors.New("no response")
		}
		if !cp.wasSent() {
			err = fmt.Errorf("%w: %w", errUndelivered, err)
		}
		return nil, nil, err
	}
	return raw, rpcErr, nil
}

// emptyToolResult is what the go-sdk decodes instead of the real result,
// which the tap keeps whole.
var emptyToolResult = json.RawMessage(`{"content":[]}`)

// resultOutcome preserves a CallToolResult whole: content,
// structuredContent, isError and _meta exactly as received. Other members
// have no place in the task result envelope and are left out (noted).
func (e *execution) resultOutcome(raw json.RawMessage) outcome {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return outcome{failure: &failRPC, note: "tools/call: result is not a JSON object"}
	}
	var dropped []string
	trimmed := false
	for k := range m {
		switch k {
		case "content", "structuredContent", "isError", "_meta":
		case "resultType":
			// 2026-07-28's "complete": the envelope says it already.
			delete(m, k)
			trimmed = true
		default:
			dropped = append(dropped, k)
			delete(m, k)
		}
	}
	o := outcome{result: raw}
	if len(dropped) > 0 || trimmed {
		if len(dropped) > 0 {
			slices.Sort(dropped)
			o.note = "result members not representable, left out: " + strings.Join(dropped, ", ")
		}
		b, err := json.Marshal(m)
		if err != nil {
			return outcome{failure: &failInternal}
		}
		o.result = b
	}
	return o
}

// rpcOutcome maps a JSON-RPC error: URL elicitation required fails the
// task with CodeURLElicitation; anything else is unavailable, retryable,
// with the numeric code in the details. The server's message is never
// relayed.
func rpcOutcome(err *jsonrpc.Error, method string) outcome {
	if err.Code == codeURLElicitationRequired {
		return outcome{failure: &failURL, note: method + ": URL elicitation required"}
	}
	f := failRPC
	f.Details = json.RawMessage(fmt.Sprintf(`{%q:%d}`, detailsJSONRPCCode, err.Code))
	return outcome{failure: &f, note: fmt.Sprintf("%s: JSON-RPC error %d", method, err.Code)}
}

func errString(err error) string {
	if err == nil {
		return "no response"
	}
	return err.Error()
}

// safeText makes upstream text fit a task event: valid UTF-8 whose
// characters XML 1.0 can carry in JSON (wire.JSONChar), cut to max
// characters.
func safeText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if !wire.JSONChar(r) {
			return '\uFFFD'
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > max {
		rs := []rune(s)
		s = string(rs[:max-1]) + "…"
	}
	return s
}
