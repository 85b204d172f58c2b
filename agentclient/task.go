package agentclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentgw/manifest"
	"agentgw/task"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// NewRequestID returns a request ID of 128 bits from the CSPRNG.
func NewRequestID() (string, error) { return task.NewID(nil, RequestIDPrefix) }

// ErrNotAccepted is the error of an invocation refused: no task was
// created. It wraps the *IQError.
var ErrNotAccepted = errors.New("not accepted, no task was created")

// ErrAcceptanceUnknown is the error of an invocation whose every answer
// was lost: retry with the same request ID.
var ErrAcceptanceUnknown = errors.New("acceptance unknown")

// Invoke sends inv (pinned by p) and retries the identical request while
// the answer is lost, so that a lost acceptance replays the same task and
// never creates a second one. retried reports whether it was sent more
// than once: an acceptance after a retry may be a replay of a task that
// moved on, so its events may have gone elsewhere.
func (c *Client) Invoke(ctx context.Context, p *Pin, inv task.Invoke) (task.Accepted, bool, error) {
	inv.APIVersion, inv.ManifestHash = p.Version, p.Hash
	el, retried, err := c.SetRetrying(ctx, p.Endpoint.String(), inv.TokenReader(), InvokeAttemptTimeout, "request "+inv.RequestID)
	if err != nil {
		var ie *IQError
		switch {
		case errors.As(err, &ie) && !retried:
			return task.Accepted{}, retried, fmt.Errorf("%w: %w", ErrNotAccepted, err)
		case errors.As(err, &ie):
			// An earlier attempt whose answer was lost may have been
			// admitted before the conditions changed.
			return task.Accepted{}, retried, fmt.Errorf("the retried request %s was refused (an earlier attempt may have created a task): %w", inv.RequestID, err)
		}
		return task.Accepted{}, retried, fmt.Errorf("%w: retry with -request-id %s: %w", ErrAcceptanceUnknown, inv.RequestID, err)
	}
	acc, err := task.ParseAccepted(el)
	if err != nil || acc.RequestID != inv.RequestID || acc.Revision != 0 {
		return task.Accepted{}, retried, fmt.Errorf("%s answered the invocation with something other than its acceptance (retry with -request-id %s)", p.Endpoint, inv.RequestID)
	}
	return acc, retried, nil
}

// TaskState asks for the state of a task (client guide, step 10).
func (c *Client) TaskState(ctx context.Context, endpoint jid.JID, taskID string) (task.TaskState, error) {
	el, err := c.get(ctx, endpoint.String(), task.TaskStateRequest{TaskID: taskID}.TokenReader())
	if err != nil {
		return task.TaskState{}, err
	}
	st, err := task.ParseTaskState(el)
	if err != nil || st.TaskID != taskID || st.Endpoint != endpoint.String() {
		return task.TaskState{}, fmt.Errorf("%s answered the state request with something else than the state of %s", endpoint, taskID)
	}
	if st.PendingInput != nil {
		if _, err := ParseInputRequest(st.PendingInput); err != nil {
			return task.TaskState{}, fmt.Errorf("%s sent a pending input request that is not valid", endpoint)
		}
	}
	return st, nil
}

// TaskResult retrieves the terminal result of a task, checked against the
// event schema of its terminal state. A task not settled yet is the
// stanza error unexpected-request.
func (c *Client) TaskResult(ctx context.Context, endpoint jid.JID, taskID string) (task.TaskResult, error) {
	el, err := c.get(ctx, endpoint.String(), task.TaskResultRequest{TaskID: taskID}.TokenReader())
	if err != nil {
		return task.TaskResult{}, err
	}
	r, err := task.ParseTaskResult(el)
	if err != nil || r.TaskID != taskID {
		return task.TaskResult{}, fmt.Errorf("%s answered the result request with something else than the result of %s", endpoint, taskID)
	}
	if task.ValidatePayload(TerminalEventType(r.State), r.Payload) != nil {
		return task.TaskResult{}, fmt.Errorf("%s sent a result that does not satisfy the event schema", endpoint)
	}
	return r, nil
}

// TerminalEventType is the event type whose payload a terminal state's
// result carries.
func TerminalEventType(s task.State) task.EventType {
	switch s {
	case task.StateCompleted:
		return task.EventCompleted
	case task.StateFailed:
		return task.EventFailed
	}
	return task.EventCancelled
}

// TaskFailure is the error object of a failed task's payload (the
// "failed" event of the event schema). Its text is the target's:
// untrusted.
type TaskFailure struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// FailureOf reads the error object of a failed task's payload, already
// checked against the event schema; zero when there is none.
func FailureOf(payload []byte) TaskFailure {
	var p struct {
		Error TaskFailure `json:"error"`
	}
	json.Unmarshal(payload, &p)
	return p.Error
}

// SettledError is the error of a cancellation for a task that has
// already settled.
type SettledError struct {
	TaskID string
	State  task.State
}

func (e *SettledError) Error() string {
	return fmt.Sprintf("task %s has already settled: %s", e.TaskID, e.State)
}

// Cancel requests cancellation. With expected < 0, the revision is the
// current one from the task state, and a <conflict/> (the revision moved:
// progress came in) is retried at the new current revision. The answer is
// advisory: the task may still complete.
func (c *Client) Cancel(ctx context.Context, endpoint jid.JID, cn task.Cancel, expected int64) (task.CancelAccepted, error) {
	start := time.Now()
	var refused error
	for attempt := 0; ; attempt++ {
		if expected < 0 {
			st, err := c.TaskState(ctx, endpoint, cn.TaskID)
			if err != nil {
				return task.CancelAccepted{}, err
			}
			if st.State.Terminal() {
				return task.CancelAccepted{}, &SettledError{TaskID: cn.TaskID, State: st.State}
			}
			if refused != nil && st.State == task.StateCancelling {
				// Not a stale revision: another cancellation
				// was accepted, and ours never will be.
				return task.CancelAccepted{}, refused
			}
			cn.ExpectedRevision = st.Revision
		} else {
			cn.ExpectedRevision = expected
		}
		el, _, err := c.SetRetrying(ctx, endpoint.String(), cn.TokenReader(), IQTimeout, "the cancellation")
		if Condition(err) == stanza.Conflict && expected < 0 && retryStale(attempt, start) {
			refused = err
			continue
		}
		if err != nil {
			return task.CancelAccepted{}, err
		}
		ack, err := task.ParseCancelAccepted(el)
		if err != nil || ack.TaskID != cn.TaskID {
			return task.CancelAccepted{}, fmt.Errorf("%s answered the cancellation with something else than its acceptance", endpoint)
		}
		return ack, nil
	}
}

// ProvideInput answers an input request with a canonical answer. With
// expected < 0, the answer is checked against the pending request's
// schema first, sent at the current revision, and retried after a
// <conflict/>; with an explicit revision it is sent even when not pending
// any more: the identical answer is then a replay the target recognizes.
func (c *Client) ProvideInput(ctx context.Context, endpoint jid.JID, taskID, requestID string, canon []byte, expected int64) (task.InputAccepted, error) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		pi := task.ProvideInput{TaskID: taskID, RequestID: requestID, Input: string(canon), ExpectedRevision: expected}
		if expected < 0 {
			st, err := c.TaskState(ctx, endpoint, taskID)
			if err != nil {
				return task.InputAccepted{}, err
			}
			in, err := ParseInputRequest(st.PendingInput)
			if st.PendingInput == nil || err != nil || in.RequestID != requestID {
				return task.InputAccepted{}, fmt.Errorf("task %s has no pending input request %s (state: %s)", taskID, requestID, st.State)
			}
			if err := in.Validate(canon); err != nil {
				return task.InputAccepted{}, err
			}
			pi.ExpectedRevision = st.Revision
		}
		el, _, err := c.SetRetrying(ctx, endpoint.String(), pi.TokenReader(), IQTimeout, "the input")
		if Condition(err) == stanza.Conflict && expected < 0 && retryStale(attempt, start) {
			continue
		}
		if err != nil {
			return task.InputAccepted{}, err
		}
		ack, err := task.ParseInputAccepted(el)
		if err != nil || ack.TaskID != taskID {
			return task.InputAccepted{}, fmt.Errorf("%s answered the input with something else than its acceptance", endpoint)
		}
		return ack, nil
	}
}

// CanonicalInput checks an answer: I-JSON within the default input limit,
// in RFC 8785 form.
func CanonicalInput(answer []byte) ([]byte, error) {
	canon, err := manifest.Canonicalize(answer, manifest.Limits{
		MaxManifestBytes: task.DefaultMaxInputBytes, MaxStringBytes: task.DefaultMaxInputBytes,
	})
	if err != nil {
		// Not %w: the error of package manifest says "manifest", and an
		// answer is none (inputError).
		return nil, fmt.Errorf("input: not valid JSON: %s", inputError(err))
	}
	return canon, nil
}

// InputRequest is the input_required object of an event or of
// <pending-input/>.
type InputRequest struct {
	RequestID string          `json:"requestId"`
	Question  string          `json:"question"`
	Schema    json.RawMessage `json:"inputSchema"`
	CreatedAt string          `json:"createdAt"`
	ExpiresAt string          `json:"expiresAt,omitempty"`
}

// ParseInputRequest validates an input_required object against the event
// schema and reads it.
func ParseInputRequest(b []byte) (InputRequest, error) {
	var in InputRequest
	if err := task.ValidatePayload(task.EventInputRequired, b); err != nil {
		return in, err
	}
	err := json.Unmarshal(b, &in)
	return in, err
}

// Validate checks a canonical answer against the request's schema. The
// target validates authoritatively; this spares a round trip.
func (in InputRequest) Validate(canon []byte) error {
	s, err := manifest.CachedValidator(in.Schema, false)
	if err != nil {
		// A schema this client cannot compile is left to the target.
		return nil
	}
	if err := ValidateJSON(s, canon); err != nil {
		return fmt.Errorf("the answer does not satisfy the requested schema: %s", inputError(err))
	}
	return nil
}

// retryStale reports whether a request refused for a stale
// expected-revision is sent again, at the revision read anew: the
// attempt-th retry of one that started at start.
func retryStale(attempt int, start time.Time) bool {
	return attempt < MaxRevisionRetries || time.Since(start) < RevisionRetryWindow
}
