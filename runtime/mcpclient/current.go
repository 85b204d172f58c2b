package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"agentgw/runtime"
)

// MCP 2026-07-28 as a client: multi round-trip requests (MRTR) and the
// tasks extension io.modelcontextprotocol/tasks. Both carry the server's
// requests for input as inputRequests (elicitation/create, keyed by an ID
// of the server's choice); each becomes one ProtoXEP input request, and
// the caller's answer goes back as an inputResponses entry: on the retry
// of tools/call (MRTR) or in tasks/update (a task).

// extTasks is the identifier of the tasks extension.
const extTasks = "io.modelcontextprotocol/tasks"

// methodTasksUpdate carries input to an extension task.
const methodTasksUpdate = "tasks/update"

// maxInputRounds bounds the MRTR retries of one call, as the go-sdk's own
// client does: a server that keeps asking is failed.
const maxInputRounds = 10

// sheddingWait is the pause before retrying a call whose server asked for
// no input at all (an empty inputRequests: it is shedding load).
const sheddingWait = 500 * time.Millisecond

// Result types of 2026-07-28 (resultType).
const (
	resultInputRequired = "input_required"
	resultTask          = "task"
)

// CodeInputUnsupported: the server asked for input other than a form
// elicitation (sampling, roots), which this bridge does not offer.
const CodeInputUnsupported = "agentgw.mcp:input-unsupported"

var (
	failInputUnsupported = runtime.Failure{Code: CodeInputUnsupported,
		Message: "The tool asked for a kind of input this gateway cannot relay."}
	failInputRounds = runtime.Failure{Code: runtime.CodeUnavailable, Retryable: true,
		Message: "The MCP server kept asking for input."}
)

// inputRequired is what an input_required result (or an extension task in
// input_required) asks for.
type inputRequired struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

// resultType returns a result's resultType ("" when absent: complete).
func resultType(raw json.RawMessage) string {
	var r struct {
		ResultType string `json:"resultType"`
	}
	_ = json.Unmarshal(raw, &r)
	return r.ResultType
}

// answer asks the caller for every request in reqs that is not in skip,
// one after the other, in key order. It returns the responses, or the
// outcome that ends the call (cancelled, or a request it cannot relay).
func (e *execution) answer(ctx context.Context, reqs map[string]json.RawMessage, skip map[string]bool) (map[string]*sdk.ElicitResult, *outcome) {
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		if !skip[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make(map[string]*sdk.ElicitResult, len(keys))
	for _, k := range keys {
		var ir struct {
			Method string            `json:"method"`
			Params *sdk.ElicitParams `json:"params"`
		}
		if err := json.Unmarshal(reqs[k], &ir); err != nil || ir.Method != "elicitation/create" || ir.Params == nil {
			return nil, &outcome{failure: &failInputUnsupported, note: fmt.Sprintf("input request %q is not a form elicitation (%s)", k, safeText(ir.Method, 64))}
		}
		res, err := e.onElicit(ctx, ir.Params)
		if err != nil || ctx.Err() != nil {
			return nil, &outcome{cancelled: true}
		}
		out[k] = res
	}
	return out, nil
}

// callCurrent makes a plain tools/call on a 2026-07-28 session: an
// input_required result is answered (MRTR) and the call retried with the
// responses and the server's requestState, up to maxInputRounds times; a
// task result is followed as an extension task. cancelled reports the
// caller's cancellation.
func (e *execution) callCurrent(ctx, taskCtx context.Context, s *session, cancel <-chan struct{}, cancelled func() bool) outcome {
	var (
		responses map[string]*sdk.ElicitResult
		state     string
	)
	for round := 0; ; round++ {
		raw, rpcErr, err := e.callTool(ctx, s, nil, responses, state)
		switch {
		case cancelled():
			return outcome{cancelled: true}
		case raw != nil:
		case rpcErr != nil:
			return rpcOutcome(rpcErr, "tools/call")
		case ctx.Err() != nil:
			return outcome{cancelled: true}
		default:
			return outcome{failure: &failLost, note: "tools/call: " + s.secrets.redact(errString(err)),
				undelivered: round == 0 && errors.Is(err, errUndelivered)}
		}
		switch resultType(raw) {
		case resultTask:
			if !s.tasksExt {
				return outcome{failure: &failRPC, note: "tools/call: a task result from a server without the tasks extension"}
			}
			return e.driveExtTask(taskCtx, s, raw, cancel)
		case resultInputRequired:
		default:
			return e.resultOutcome(raw)
		}
		if round+1 >= maxInputRounds {
			return outcome{failure: &failInputRounds, note: fmt.Sprintf("tools/call: input still required after %d rounds", maxInputRounds)}
		}
		var ir inputRequired
		if err := json.Unmarshal(raw, &ir); err != nil {
			return outcome{failure: &failRPC, note: "tools/call: malformed input_required result"}
		}
		state = ir.RequestState
		if len(ir.InputRequests) == 0 {
			responses = nil
			select {
			case <-time.After(sheddingWait):
			case <-ctx.Done():
				return outcome{cancelled: true}
			}
			continue
		}
		var o *outcome
		if responses, o = e.answer(ctx, ir.InputRequests, nil); o != nil {
			return *o
		}
	}
}

// taskCreatedMessage is the progress message of an extension task whose
// server gave no status message at its creation.
const taskCreatedMessage = "The MCP server runs the call as a task."

// extTask is a Task of the tasks extension (a DetailedTask).
type extTask struct {
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	PollIntervalMs *float64                   `json:"pollIntervalMs"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Result         json.RawMessage            `json:"result"`
	Error          *struct {
		Code int64 `json:"code"`
	} `json:"error"`
}

// taskUpdateParams are the params of tasks/update.
type taskUpdateParams struct {
	sdk.ParamsBase
	TaskID         string                       `json:"taskId"`
	InputResponses map[string]*sdk.ElicitResult `json:"inputResponses"`
}

// getExtTask polls tasks/get.
func (s *session) getExtTask(ctx context.Context, id string) (*extTask, error) {
	raw, err := s.taskCall(ctx, methodTasksGet, id)
	if err != nil {
		return nil, err
	}
	var t extTask
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("tasks/get: %w", err)
	}
	return &t, nil
}

// inputDone is what the goroutine asking the caller for a task's input
// returns.
type inputDone struct {
	responses map[string]*sdk.ElicitResult
	end       *outcome
}

// driveExtTask follows an extension task from its CreateTaskResult:
// tasks/get polling (status messages become progress), input requests
// answered through tasks/update (each key once), tasks/cancel on the
// caller's cancellation, and the result or error of the terminal task.
func (e *execution) driveExtTask(ctx context.Context, s *session, created json.RawMessage, cancel <-chan struct{}) outcome {
	var t extTask
	if err := json.Unmarshal(created, &t); err != nil || t.TaskID == "" {
		return outcome{failure: &failRPC, note: "tools/call: malformed task result"}
	}
	id := t.TaskID
	answered := map[string]bool{}
	var (
		inputC          chan inputDone // set while the caller is asked
		lastMsg         string
		cancelRequested bool
		cancelC         = cancel
		failedPolls     int
		pollNow         bool
	)
	if t.Status != "working" {
		// A CreateTaskResult is a Task, not a DetailedTask: its result or
		// input requests come with tasks/get.
		t.Status, pollNow = "working", true
	}
	if t.StatusMessage == "" {
		// The caller learns that the server made the call a task (its
		// status message, when it has one, says it below): an MCP face
		// answers its own client's call with a task from then on.
		t.StatusMessage = taskCreatedMessage
	}
	poll := time.NewTimer(0)
	poll.Stop()
	defer poll.Stop()
	for {
		switch t.Status {
		case "completed":
			if t.Result == nil {
				return outcome{failure: &failTaskFailed, note: "tasks/get: completed without a result"}
			}
			return e.resultOutcome(t.Result)
		case "failed":
			f := failTaskFailed
			if t.Error != nil {
				f.Details = json.RawMessage(fmt.Sprintf(`{%q:%d}`, detailsJSONRPCCode, t.Error.Code))
			}
			return outcome{failure: &f}
		case "cancelled":
			if cancelRequested {
				return outcome{cancelled: true}
			}
			return outcome{failure: &failTaskCancelled}
		case "input_required":
			if inputC == nil && !cancelRequested {
				pending := false
				for k := range t.InputRequests {
					pending = pending || !answered[k]
				}
				if pending {
					reqs := t.InputRequests
					skip := maps.Clone(answered)
					inputC = make(chan inputDone, 1)
					go func(c chan<- inputDone) {
						res, end := e.answer(ctx, reqs, skip)
						c <- inputDone{res, end}
					}(inputC)
				}
			}
		}
		if t.StatusMessage != "" && t.StatusMessage != lastMsg {
			lastMsg = t.StatusMessage
			select {
			case e.events <- event{kind: evProgress, progress: runtime.Progress{
				Message: safeText(t.StatusMessage, maxMessageChars)}}:
			default:
			}
		}
		next := e.pollEvery(t.PollIntervalMs)
		if pollNow {
			next, pollNow = 0, false
		}
		poll.Reset(next)
		select {
		case <-poll.C:
			nt, err := s.getExtTask(ctx, id)
			if err != nil {
				var we *jsonrpc.Error
				if errors.As(err, &we) {
					// Unknown or expired: the task is gone.
					return rpcOutcome(we, methodTasksGet)
				}
				if ctx.Err() != nil {
					return outcome{cancelled: true}
				}
				// A lost poll is retried; a session that ended is not.
				if failedPolls++; failedPolls >= 3 || s.ended() {
					return outcome{failure: &failLost, note: "tasks/get: " + s.secrets.redact(err.Error())}
				}
				continue
			}
			failedPolls = 0
			t = *nt
		case d := <-inputC:
			inputC = nil
			if d.end != nil {
				// Input that cannot be relayed, or the XMPP task settled.
				go e.cancelExtTask(ctx, s, id)
				return *d.end
			}
			for k := range d.responses {
				answered[k] = true
			}
			if _, err := sdk.CallCustomMethod[*taskUpdateParams, *rawResult](ctx, s.cs, methodTasksUpdate,
				&taskUpdateParams{TaskID: id, InputResponses: d.responses}); err != nil {
				var we *jsonrpc.Error
				if errors.As(err, &we) {
					return rpcOutcome(we, methodTasksUpdate)
				}
				if ctx.Err() != nil {
					return outcome{cancelled: true}
				}
				return outcome{failure: &failLost, note: "tasks/update: " + s.secrets.redact(err.Error())}
			}
			// Look again at once: the input may have moved it on.
			t.Status, pollNow = "working", true
		case <-cancelC:
			cancelC = nil
			cancelRequested = true
			// Cancellation is only a request (the task may still end
			// otherwise), but the caller's task ends here: MCP lets the
			// client forget the task once tasks/cancel is sent.
			_, err := s.taskCall(ctx, methodTasksCancel, id)
			e.answerPending("cancel")
			if err != nil {
				e.setNote("tasks/cancel: " + s.secrets.redact(err.Error()))
			}
			return outcome{cancelled: true}
		case <-ctx.Done():
			// The XMPP task settled (deadline, shutdown): stop the MCP
			// task too, best effort.
			go e.cancelExtTask(ctx, s, id)
			return outcome{cancelled: true}
		}
	}
}

// cancelExtTask sends tasks/cancel, best effort, outliving ctx.
func (e *execution) cancelExtTask(ctx context.Context, s *session, id string) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), e.r.opts.ConnectTimeout)
	defer stop()
	_, _ = s.taskCall(cctx, methodTasksCancel, id)
}

// ended reports whether the session has ended.
func (s *session) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}
