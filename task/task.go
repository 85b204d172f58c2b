package task

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"agentgw/manifest"
	"agentgw/runtime"

	"mellium.im/xmpp/jid"
)

// Task is the durable record of one admitted invocation: the row the store
// keeps. Machine methods never modify a Task in place; they return the new
// value in a Step. Every field must survive a store round trip unchanged:
// times other than Deadline at millisecond resolution, Deadline at
// nanosecond resolution, byte slices exactly.
type Task struct {
	// ID is the receiver-generated task ID ("task-" and 32 hex digits).
	ID string
	// RequestID is the caller's request-id.
	RequestID string
	// Fingerprint is the admission replay fingerprint (see Fingerprint).
	Fingerprint [32]byte
	// Caller is the authorization principal: the invoking bare JID,
	// normalized.
	Caller jid.JID
	// Route is the full JID that sent <invoke/>, the best-effort
	// destination of events.
	Route jid.JID
	// Target is the endpoint bare JID, normalized.
	Target jid.JID
	// Tool is the exact tool name.
	Tool string
	// APIVersion is the pinned API version.
	APIVersion string
	// ManifestHash is the pinned SHA-256 manifest digest.
	ManifestHash [32]byte
	// Args is the validated argument object in RFC 8785 form.
	Args []byte
	// Features are the optional task features the pinned tool declares.
	Features Features
	// State is the current state.
	State State
	// Revision is the global revision: 0 at admission, +1 per event.
	Revision int64
	// Created is the admission time; Updated the time of the last event.
	Created, Updated time.Time
	// Deadline is the effective deadline: the caller's deadline capped by
	// the tool's and the gateway's maximum timeout, or created plus the
	// default timeout. Every task has one. It is reported in <task-state/>.
	Deadline time.Time
	// RetainUntil is the promised retention: Deadline plus
	// Config.Retention. State and result are queryable until then.
	RetainUntil time.Time
	// PurgeAfter is when the store may delete the task and every record
	// that belongs to it, once it is terminal: the later of RetainUntil
	// and created plus the replay window.
	PurgeAfter time.Time
	// Percent is the highest progress percent committed so far.
	Percent float64
	// InputCount is the number of input requests issued, re-issues
	// included.
	InputCount int
	// Pending is the pending input request; non-nil exactly when State
	// is input_required.
	Pending *InputRequest
	// Cancel is the accepted cancellation, if any.
	Cancel *Cancellation
	// Outcome is the terminal payload (the JSON object of the terminal
	// event, which <task-result/> returns), set exactly when State is
	// terminal.
	Outcome []byte
}

// Features are the optional task features of the pinned tool, from its
// urn:xmpp:agent-api:0 extension object.
type Features struct {
	// Progress: the tool may report progress (supportsProgress).
	Progress bool
	// Cancel: the caller may cancel (supportsCancellation).
	Cancel bool
	// Input: the tool may request input (supportsInput).
	Input bool
}

// InputRequest is a committed request for caller input.
type InputRequest struct {
	// ID is the task-unique input request ID ("input-" and 32 hex).
	ID string
	// Question is the human-readable question.
	Question string
	// Schema is the answer's JSON Schema in RFC 8785 form.
	Schema []byte
	// Created is when the request was committed.
	Created time.Time
	// Expires is when it expires; zero means never.
	Expires time.Time
	// Timeout is the lifetime given to a re-issued request (zero if the
	// request does not expire).
	Timeout time.Duration
	// Reasks is how many more times the request is re-issued on expiry.
	Reasks int
}

// InputStatus is the disposition of an input request.
type InputStatus string

// Input request dispositions.
const (
	// InputPending: the request is the task's pending request.
	InputPending InputStatus = "pending"
	// InputAnswered: an answer was accepted; the record holds its replay
	// tuple.
	InputAnswered InputStatus = "answered"
	// InputExpired: the request expired unanswered.
	InputExpired InputStatus = "expired"
	// InputSuperseded: a cancellation or settlement ended the request
	// unanswered.
	InputSuperseded InputStatus = "superseded"
)

// InputRecord is the retained identity and disposition of one input
// request, keyed by (task ID, RequestID). It lets an identical answer be
// replayed and a late answer to an expired or superseded request get
// <conflict/> rather than <item-not-found/> ("Interactive Input"). It
// lives as long as its task.
type InputRecord struct {
	// RequestID is the input request ID.
	RequestID string
	// Status is the disposition.
	Status InputStatus
	// ExpectedRevision, Input and Revision are set when Status is
	// InputAnswered: the expected-revision and canonical input of the
	// accepted answer, and the revision at which it was accepted. With
	// the task's caller, target and ID and the fixed media type
	// application/json they make up the replay tuple.
	ExpectedRevision int64
	Input            []byte
	Revision         int64
}

// Cancellation is the accepted cancellation of a task and its replay
// tuple ("Cancellation and Deadlines"). The caller, target, namespace and
// task ID of the tuple are those of the task.
type Cancellation struct {
	// ExpectedRevision is the cancel's expected-revision.
	ExpectedRevision int64
	// HasReason records whether <reason/> was present, and Reason its
	// parsed character data.
	HasReason bool
	Reason    string
	// Revision is the revision at which the cancellation was accepted.
	Revision int64
}

// Step is the outcome of one Machine method: what the store must write in
// ONE transaction, after which the events are sent. A Step without events
// writes nothing.
//
// A method may return a Step with events together with an error: the
// deadline (or an input expiry) preempted the command. The step must be
// committed all the same; the error is then the answer to the command.
type Step struct {
	// Task is the task after the step; write it when Events is not empty.
	Task Task
	// Events are the new events, at consecutive revisions ending at
	// Task.Revision. Insert each.
	Events []Event
	// Inputs are input records to insert or replace, by (task ID,
	// RequestID).
	Inputs []InputRecord
}

// Changed reports whether the step has anything to write.
func (s Step) Changed() bool { return len(s.Events) > 0 }

// Settled reports whether the step settled the task: the gateway then
// ends the execution (cancels the context given to runtime.Start).
func (s Step) Settled() bool { return s.Changed() && s.Task.State.Terminal() }

// Accepted returns the <accepted/> element for t. It depends only on
// fields fixed at admission, so a replay returns the original bytes.
func (t *Task) Accepted() Accepted {
	return Accepted{
		RequestID:   t.RequestID,
		TaskID:      t.ID,
		Revision:    0,
		Created:     t.Created,
		RetainUntil: t.RetainUntil,
	}
}

// Expired reports whether the retention promise of a terminal task has
// ended: the task then answers <item-not-found/> to its caller. A
// non-terminal task never expires.
func (t *Task) Expired(now time.Time) bool {
	return t.State.Terminal() && !now.Before(t.RetainUntil)
}

// Purgeable reports whether the store may delete the task with its event
// rows, input records and replay record ("Retention").
func (t *Task) Purgeable(now time.Time) bool {
	return t.State.Terminal() && !now.Before(t.PurgeAfter)
}

// NextWake returns when Tick next has work for t: the deadline or the
// pending input's expiry while non-terminal, PurgeAfter once terminal.
func (t *Task) NextWake() time.Time {
	if t.State.Terminal() {
		return t.PurgeAfter
	}
	w := t.Deadline
	if p := t.Pending; p != nil && !p.Expires.IsZero() && p.Expires.Before(w) {
		w = p.Expires
	}
	return w
}

// Call returns the runtime call of t for tool, the pinned tool
// definition. Its handle is Handle(t.ID).
func (t *Task) Call(tool *manifest.Tool) runtime.Call {
	return runtime.Call{
		Handle: Handle(t.ID),
		Tool: runtime.ToolMeta{
			Name:                 tool.Name,
			Title:                tool.Title,
			Description:          tool.Description,
			APIVersion:           t.APIVersion,
			SupportsProgress:     t.Features.Progress,
			SupportsCancellation: t.Features.Cancel,
			SupportsInput:        t.Features.Input,
		},
		Arguments: append([]byte(nil), t.Args...),
		Deadline:  t.Deadline,
	}
}

// handleDomain separates runtime handles from other digests.
const handleDomain = "agentgw runtime handle v1\x00"

// Handle returns the opaque handle tool code sees for task id: "h-" and
// 32 hex digits of a SHA-256 of the ID. It is stable across restarts, lets
// the operator correlate tool logs with a task, and reveals neither the
// wire task ID nor anything else; it grants nothing.
func Handle(taskID string) string {
	sum := sha256.Sum256([]byte(handleDomain + taskID))
	return "h-" + hex.EncodeToString(sum[:16])
}

// Resumption returns the runtime view of a non-terminal task for
// runtime.Runtime.Resume.
func (t *Task) Resumption() *runtime.Resumption {
	r := &runtime.Resumption{State: string(t.State), CancelRequested: t.Cancel != nil}
	if p := t.Pending; p != nil {
		r.PendingInput = &runtime.InputRequest{
			Question: p.Question, Schema: append([]byte(nil), p.Schema...),
			Timeout: p.Timeout, Reasks: p.Reasks,
		}
	}
	return r
}
