package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"agentgw/runtime"
)

// MCP Tasks (MCP 2025-11-25, experimental) as a client, in the thin layer
// the go-sdk lacks: a task-augmented tools/call (params.task, through the
// tap) answered by a CreateTaskResult, then tasks/result (which blocks
// until the task is terminal, and meanwhile carries the task's
// elicitations), tasks/get polling for status messages, and tasks/cancel.
// The bridge keeps the XMPP task and the MCP task apart: the MCP task ID
// never reaches the caller except inside the tool result's _meta.

// MCP Tasks methods, registered as custom methods of the go-sdk client.
const (
	methodTasksGet    = "tasks/get"
	methodTasksResult = "tasks/result"
	methodTasksCancel = "tasks/cancel"
)

// mcpTask is the Task object of MCP Tasks.
type mcpTask struct {
	TaskID        string   `json:"taskId"`
	Status        string   `json:"status"`
	StatusMessage string   `json:"statusMessage"`
	PollInterval  *float64 `json:"pollInterval"`
}

// taskParams are the params of tasks/get, tasks/result and tasks/cancel.
type taskParams struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

// rawResult keeps a result's JSON whole.
type rawResult struct {
	sdk.ResultBase
	raw json.RawMessage
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawResult) UnmarshalJSON(b []byte) error {
	r.raw = bytes.Clone(b)
	return nil
}

// registerTaskMethods lets the go-sdk client send the MCP Tasks methods, of
// 2025-11-25 and of the tasks extension (current.go).
func registerTaskMethods(c *sdk.Client) error {
	for _, m := range []string{methodTasksGet, methodTasksResult, methodTasksCancel} {
		if err := sdk.AddSendingCustomMethod[*taskParams, *rawResult](c, m); err != nil {
			return fmt.Errorf("mcp: register %s: %w", m, err)
		}
	}
	if err := sdk.AddSendingCustomMethod[*taskUpdateParams, *rawResult](c, methodTasksUpdate); err != nil {
		return fmt.Errorf("mcp: register %s: %w", methodTasksUpdate, err)
	}
	return nil
}

// taskCall sends one MCP Tasks request and returns the raw result; a
// JSON-RPC error is returned as *jsonrpc.Error.
func (s *session) taskCall(ctx context.Context, method, id string) (json.RawMessage, error) {
	res, err := sdk.CallCustomMethod[*taskParams, *rawResult](ctx, s.cs, method, &taskParams{TaskID: id})
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, we
		}
		return nil, err
	}
	return res.raw, nil
}

// getTask polls tasks/get.
func (s *session) getTask(ctx context.Context, id string) (*mcpTask, error) {
	raw, err := s.taskCall(ctx, methodTasksGet, id)
	if err != nil {
		return nil, err
	}
	var t mcpTask
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("tasks/get: %w", err)
	}
	return &t, nil
}

// taskTTL is the ttl to request: the time left before the deadline plus a
// margin, so the server keeps the result until the bridge has fetched it,
// and no longer than needed.
func taskTTL(deadline time.Time) time.Duration {
	if deadline.IsZero() {
		return DefaultTaskTTL
	}
	return max(time.Until(deadline), 0) + TaskTTLMargin
}

// pollEvery returns the polling interval: the server's suggestion (in
// milliseconds) clamped, or the configured default.
func (e *execution) pollEvery(suggested *float64) time.Duration {
	if suggested == nil || *suggested <= 0 {
		return e.r.opts.PollInterval
	}
	d := time.Duration(*suggested * float64(time.Millisecond))
	return min(max(d, MinPollInterval), MaxPollInterval)
}

// taskOutcome is what the background tasks/result request returned.
type taskOutcome struct {
	raw json.RawMessage
	err error
}

// driveTask runs a tool that requires MCP Tasks.
func (e *execution) driveTask(ctx context.Context, s *session, cancel <-chan struct{}) outcome {
	// Until the server has created the task, cancellation is a plain
	// request cancellation (notifications/cancelled).
	createCtx, stopCreate := context.WithCancel(ctx)
	go func() {
		select {
		case <-cancel:
			stopCreate()
			e.answerPending("cancel")
		case <-createCtx.Done():
		}
	}()
	ttl := json.RawMessage(fmt.Sprintf(`{"ttl":%d}`, taskTTL(e.call.Deadline).Milliseconds()))
	raw, rpcErr, err := e.callTool(createCtx, s, ttl, nil, "")
	cancelledEarly := createCtx.Err() != nil && ctx.Err() == nil
	stopCreate()
	switch {
	case raw != nil:
	case rpcErr != nil:
		return rpcOutcome(rpcErr, "tools/call")
	case cancelledEarly || ctx.Err() != nil:
		return outcome{cancelled: true}
	default:
		return outcome{failure: &failLost, note: "tools/call: " + s.secrets.redact(errString(err)),
			undelivered: errors.Is(err, errUndelivered)}
	}
	var created struct {
		Task *mcpTask `json:"task"`
	}
	if json.Unmarshal(raw, &created) != nil || created.Task == nil || created.Task.TaskID == "" {
		// The server ran the call without a task: a CallToolResult.
		return e.resultOutcome(raw)
	}
	id := created.Task.TaskID
	e.r.registerTask(e, s.cs, id)
	if cancelledEarly {
		// The cancellation raced the creation: cancel the task now.
		if _, err := s.taskCall(ctx, methodTasksCancel, id); err == nil {
			return outcome{cancelled: true}
		}
	}

	resCtx, stopRes := context.WithCancel(ctx)
	defer stopRes()
	resC := make(chan taskOutcome, 1)
	go func() {
		raw, err := s.taskCall(resCtx, methodTasksResult, id)
		resC <- taskOutcome{raw, err}
	}()
	poll := time.NewTimer(e.pollEvery(created.Task.PollInterval))
	defer poll.Stop()
	lastMsg := created.Task.StatusMessage
	cancelC := cancel
	cancelRequested := false
	for {
		select {
		case r := <-resC:
			if r.err == nil {
				return e.resultOutcome(r.raw)
			}
			return e.taskEnd(ctx, s, id, r.err, cancelRequested)
		case <-poll.C:
			t, err := s.getTask(ctx, id)
			next := e.r.opts.PollInterval
			if err == nil {
				if t.StatusMessage != lastMsg && t.StatusMessage != "" {
					lastMsg = t.StatusMessage
					select {
					case e.events <- event{kind: evProgress, progress: runtime.Progress{
						Message: safeText(t.StatusMessage, maxMessageChars)}}:
					default:
					}
				}
				next = e.pollEvery(t.PollInterval)
			}
			// A failed poll is not fatal: tasks/result reports a lost
			// connection.
			poll.Reset(next)
		case <-cancelC:
			cancelC = nil
			cancelRequested = true
			if !s.tasksCancel {
				e.setNote("the server does not offer tasks/cancel; the task runs on")
				e.answerPending("cancel")
				continue
			}
			_, err := s.taskCall(ctx, methodTasksCancel, id)
			// Only now: answered before tasks/cancel, the task could
			// finish on the answer first.
			e.answerPending("cancel")
			if err == nil {
				// MCP: a successful tasks/cancel leaves the task
				// cancelled, terminal.
				return outcome{cancelled: true}
			}
			// Already terminal (or unknown): tasks/result tells.
		case <-ctx.Done():
			// The XMPP task settled (deadline, shutdown): stop the MCP
			// task too, best effort.
			if s.tasksCancel {
				go func() {
					cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), e.r.opts.ConnectTimeout)
					defer stop()
					_, _ = s.taskCall(cctx, methodTasksCancel, id)
				}()
			}
			return outcome{cancelled: true}
		}
	}
}

// taskEnd explains a tasks/result that returned no tool result, from the
// task's final status.
func (e *execution) taskEnd(ctx context.Context, s *session, id string, err error, cancelRequested bool) outcome {
	if ctx.Err() != nil {
		return outcome{cancelled: true}
	}
	var we *jsonrpc.Error
	t, gerr := s.getTask(ctx, id)
	switch {
	case gerr == nil && t.Status == "cancelled" && cancelRequested:
		return outcome{cancelled: true}
	case gerr == nil && t.Status == "cancelled":
		return outcome{failure: &failTaskCancelled}
	case gerr == nil && t.Status == "failed":
		return outcome{failure: &failTaskFailed}
	case errors.As(err, &we):
		return rpcOutcome(we, methodTasksResult)
	}
	return outcome{failure: &failLost, note: "tasks/result: " + s.secrets.redact(err.Error())}
}
