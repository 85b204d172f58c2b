// Package runtime is the boundary between the gateway and tool code: the
// transport-neutral contract of the ProtoXEP's "Gateway and Model Boundary"
// section. A Runtime executes one tool call at a time per Execution and
// reports what happens through a Reporter; the gateway turns each report
// into a task transition (package task) and builds every stanza itself.
//
// Tool code never sees a JID, a stanza, a namespace or a wire identifier.
// Start returns at once; reports of one execution are ordered, and a
// Reporter method that returns nil has committed the report. The
// concurrency rules and the lifecycle in full, and the three runtimes
// (builtin, exec, mcp): docs/exec-runtime.md, "Behind every runtime".
package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Reserved failure codes of the ProtoXEP ("Error Handling"). Any other code
// must be namespace-qualified, for example "com.example.weather:quota".
const (
	// CodeDeadlineExpired means the deadline elapsed before a successful
	// terminal result.
	CodeDeadlineExpired = "deadline-expired"
	// CodeInternalError means an unexpected internal condition.
	CodeInternalError = "internal-error"
	// CodeUnavailable means a required runtime or downstream service is
	// temporarily unavailable.
	CodeUnavailable = "unavailable"
)

// Errors a Reporter returns. Runtimes test for them with errors.Is.
var (
	// ErrSettled means the task is terminal (completed, failed or
	// cancelled, possibly by its deadline): the report was discarded and
	// every later one will be. The runtime should stop the tool.
	ErrSettled = errors.New("runtime: task already settled")
	// ErrRejected means this one report was refused (for example a
	// decreasing progress percent, or an input request while one is
	// pending); the task is unchanged and still running.
	ErrRejected = errors.New("runtime: report rejected")
	// ErrNotResumable is returned by Resume when the runtime cannot take
	// over an execution begun before a restart.
	ErrNotResumable = errors.New("runtime: execution cannot be resumed")
	// ErrNotWaiting is returned by Execution.Input when the tool is not
	// waiting for input (or has finished).
	ErrNotWaiting = errors.New("runtime: tool is not waiting for input")
)

// Runtime executes tool calls for the endpoints configured with it.
type Runtime interface {
	// Start begins executing call and returns at once. ctx bounds the
	// whole execution: when it ends the runtime stops the tool (for exec,
	// after a grace period) without reporting further. An error means
	// nothing was started; the gateway then settles the task as failed.
	Start(ctx context.Context, call Call, rep Reporter) (Execution, error)
	// CanResume reports whether executions survive a gateway restart. If
	// false, the gateway settles every task of this runtime that was
	// running at the restart as failed with CodeUnavailable, retryable.
	CanResume() bool
	// Resume takes over an execution begun before a restart; call.Resume
	// describes the committed task state. Runtimes whose CanResume is false
	// return ErrNotResumable.
	Resume(ctx context.Context, call Call, rep Reporter) (Execution, error)
}

// Call is one tool invocation as tool code sees it.
type Call struct {
	// Handle identifies the execution in tool logs. It is opaque, stable
	// across restarts and carries no authority; it is never a JID nor a
	// wire identifier.
	Handle string
	// Tool is the safe metadata of the selected tool.
	Tool ToolMeta
	// Arguments is the validated argument object in RFC 8785 form.
	Arguments json.RawMessage
	// Deadline is the instant at which the task fails with
	// CodeDeadlineExpired. Zero means none.
	Deadline time.Time
	// Resume is set only for Runtime.Resume.
	Resume *Resumption
}

// ToolMeta is the tool metadata a tool may see: nothing that names a
// caller, an endpoint address or a wire identifier.
type ToolMeta struct {
	// Name is the exact tool name.
	Name string
	// Title and Description are the manifest's optional texts.
	Title, Description string
	// APIVersion is the pinned endpoint API version.
	APIVersion string
	// SupportsProgress, SupportsCancellation and SupportsInput are the
	// tool's declarations; reports the tool did not declare are rejected.
	SupportsProgress, SupportsCancellation, SupportsInput bool
}

// Resumption is the committed state of a task handed to Resume.
type Resumption struct {
	// State is the task state: "running", "input_required" or
	// "cancelling".
	State string
	// PendingInput is the outstanding input request, if State is
	// "input_required".
	PendingInput *InputRequest
	// CancelRequested reports that a cancellation was accepted.
	CancelRequested bool
}

// Reporter receives the reports of one execution. The gateway implements
// it; each method commits one task transition before returning. A nil
// error means committed. ErrSettled and ErrRejected are the expected
// refusals; any other error is a local fault (for example the database),
// after which the runtime should stop the tool.
type Reporter interface {
	// Progress reports progress. Percent must be finite, 0–100 and not
	// below the last percent reported.
	Progress(p Progress) error
	// RequestInput asks the caller for input. At most one request may be
	// pending; the answer arrives through Execution.Input.
	RequestInput(q InputRequest) error
	// Complete settles the task as completed with a tool result. A result
	// with isError=true is still a completion.
	Complete(r Result) error
	// Fail settles the task as failed.
	Fail(f Failure) error
	// Cancelled confirms a cancellation and settles the task as cancelled.
	Cancelled(reason string) error
}

// Progress is a progress report; at least one member must be set.
type Progress struct {
	// Percent is 0 through 100, or nil.
	Percent *float64
	// Stage is a short stage name (at most 256 characters).
	Stage string
	// Message is a human-readable message (at most 4096 characters).
	Message string
}

// InputRequest asks the caller for input.
type InputRequest struct {
	// Question is shown to the caller (1 to 4096 characters).
	Question string
	// Schema is the JSON Schema (2020-12, version-0 rules) the answer
	// must satisfy.
	Schema json.RawMessage
	// Timeout, if positive, makes the request expire that long after it
	// is committed.
	Timeout time.Duration
	// Reasks is how many times an expired request is issued again (with a
	// new request ID and the same question) before the task fails.
	Reasks int
}

// Result is a tool result.
type Result struct {
	// Raw is the complete tool result envelope, an MCP CallToolResult:
	// {"content":[…],"structuredContent":…,"isError":…,"_meta":{…}}. It is
	// preserved whole.
	Raw json.RawMessage
	// Summary is an optional short summary (at most 4096 characters).
	Summary string
}

// Failure is an execution failure.
type Failure struct {
	// Code is a reserved code (CodeDeadlineExpired, CodeInternalError,
	// CodeUnavailable) or a namespace-qualified one.
	Code string
	// Message is safe, human-readable text: no secrets, prompts or stack
	// traces.
	Message string
	// Retryable reports whether the same call may succeed later.
	Retryable bool
	// Details is an optional JSON object of qualified members.
	Details json.RawMessage
}

// Execution is one running tool call.
type Execution interface {
	// Input delivers an accepted input answer (canonical JSON). It never
	// blocks; it returns ErrNotWaiting when no answer is awaited.
	Input(answer json.RawMessage) error
	// Cancel asks the tool to stop (advisory). The runtime then reports
	// Cancelled, or still Complete or Fail; a tool that does not stop is
	// stopped after the runtime's grace period and reported Cancelled.
	Cancel()
	// Done is closed when the tool has stopped and nothing more will be
	// reported.
	Done() <-chan struct{}
	// Diagnostics describes how the execution ended, for the operator's
	// log. It is complete once Done is closed.
	Diagnostics() Diagnostics
}

// Diagnostics is bounded, redacted information about an execution for the
// operator's log. It is never sent to the caller.
type Diagnostics struct {
	// ExitCode is the exit status of a process, or -1 (killed, or not a
	// process).
	ExitCode int
	// Stderr is the bounded tail of the process's standard error with
	// argument and input strings redacted and control characters escaped.
	Stderr string
	// Note describes an abnormal end (protocol violation, kill) or is
	// empty.
	Note string
}

// TextResult returns a Result with one text content item and, if
// structured is not nil, structuredContent.
func TextResult(text string, structured any) (Result, error) {
	env := struct {
		Content           []textContent `json:"content"`
		StructuredContent any           `json:"structuredContent,omitempty"`
		IsError           bool          `json:"isError"`
	}{Content: []textContent{{Type: "text", Text: text}}, StructuredContent: structured}
	raw, err := json.Marshal(env)
	if err != nil {
		return Result{}, err
	}
	return Result{Raw: raw}, nil
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}
