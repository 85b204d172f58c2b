package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"agentgw/agentclient"
	"agentgw/task"
)

// The objects of `agentgw client -json` for the task commands, one per
// line, told apart by "kind". Payloads are the validated JSON objects of
// the protocol, as received.

// outRequest is printed by call before the first <invoke/>: what is
// needed to retry the same request from another process.
type outRequest struct {
	Kind      string `json:"kind"` // "request"
	Endpoint  string `json:"endpoint"`
	Tool      string `json:"tool"`
	RequestID string `json:"requestId"`
	Version   string `json:"apiVersion"`
	Hash      string `json:"manifestHash"`
	Pin       string `json:"pin"` // retrieved, manifest-file or flags
	Deadline  string `json:"deadline,omitempty"`
}

// outAccepted is the durable admission.
type outAccepted struct {
	Kind        string `json:"kind"` // "accepted"
	Endpoint    string `json:"endpoint"`
	TaskID      string `json:"taskId"`
	RequestID   string `json:"requestId"`
	Revision    int64  `json:"revision"`
	Created     string `json:"created"`
	RetainUntil string `json:"retainUntil"`
}

// outEvent is one lifecycle event, in revision order.
type outEvent struct {
	Kind     string          `json:"kind"` // "event"
	TaskID   string          `json:"taskId"`
	EventID  string          `json:"eventId"`
	Revision int64           `json:"revision"`
	Type     string          `json:"type"`
	Payload  json.RawMessage `json:"payload"`
}

// outState is a <task-state/>.
type outState struct {
	Kind            string          `json:"kind"` // "state"
	TaskID          string          `json:"taskId"`
	Endpoint        string          `json:"endpoint"`
	State           string          `json:"state"`
	Revision        int64           `json:"revision"`
	APIVersion      string          `json:"apiVersion"`
	ManifestHash    string          `json:"manifestHash"`
	Created         string          `json:"created"`
	Updated         string          `json:"updated"`
	Deadline        string          `json:"deadline,omitempty"`
	RetainUntil     string          `json:"retainUntil"`
	ResultAvailable bool            `json:"resultAvailable"`
	PendingInput    json.RawMessage `json:"pendingInput,omitempty"`
}

// outResult is a <task-result/>.
type outResult struct {
	Kind     string          `json:"kind"` // "result"
	TaskID   string          `json:"taskId"`
	State    string          `json:"state"`
	Revision int64           `json:"revision"`
	Payload  json.RawMessage `json:"payload"`
}

// outAck is an <input-accepted/> or <cancel-accepted/>.
type outAck struct {
	Kind     string `json:"kind"` // "input-accepted" or "cancel-accepted"
	TaskID   string `json:"taskId"`
	Revision int64  `json:"revision"`
}

// outNotice reports what the client did on its own: a recovery after a
// revision gap, a lost session or a quiet period, or a retried request.
type outNotice struct {
	Kind    string `json:"kind"` // "notice"
	TaskID  string `json:"taskId,omitempty"`
	Message string `json:"message"`
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return task.FormatDateTime(t)
}

func stateOut(st task.TaskState) outState {
	return outState{
		Kind: "state", TaskID: st.TaskID, Endpoint: st.Endpoint, State: string(st.State), Revision: st.Revision,
		APIVersion: st.APIVersion, ManifestHash: base64.StdEncoding.EncodeToString(st.ManifestHash[:]),
		Created: formatTime(st.Created), Updated: formatTime(st.Updated), Deadline: formatTime(st.Deadline),
		RetainUntil: formatTime(st.RetainUntil), ResultAvailable: st.ResultAvailable, PendingInput: st.PendingInput,
	}
}

// notice prints what the client did on its own.
func (cmd *clientCmd) notice(taskID, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if cmd.json {
		cmd.emit(outNotice{Kind: "notice", TaskID: taskID, Message: msg})
		return
	}
	cmd.printf("-- %s\n", msg)
}

// printState prints a <task-state/>.
func (cmd *clientCmd) printState(st task.TaskState) {
	if cmd.json {
		cmd.emit(stateOut(st))
		return
	}
	cmd.printf("task %s at %s: %s, revision %d\n", st.TaskID, st.Endpoint, st.State, st.Revision)
	cmd.printf("  api version %s, manifest sha-256 %s\n", agentclient.SafeText(st.APIVersion, 64), base64.StdEncoding.EncodeToString(st.ManifestHash[:]))
	cmd.printf("  created %s, updated %s", formatTime(st.Created), formatTime(st.Updated))
	if !st.Deadline.IsZero() {
		cmd.printf(", deadline %s", formatTime(st.Deadline))
	}
	cmd.printf(", retained until %s\n", formatTime(st.RetainUntil))
	if st.State.Terminal() {
		cmd.printf("  result available: %v\n", st.ResultAvailable)
	}
	if st.PendingInput != nil {
		if in, err := agentclient.ParseInputRequest(st.PendingInput); err == nil {
			cmd.printf("  pending input %s: %s\n", in.RequestID, agentclient.SafeText(in.Question, 400))
			cmd.printf("  answer schema: %s\n", agentclient.SafeText(string(in.Schema), 400))
		}
	}
}

// printEvent prints one lifecycle event.
func (cmd *clientCmd) printEvent(ev task.Event) {
	if cmd.json {
		cmd.emit(outEvent{Kind: "event", TaskID: ev.TaskID, EventID: ev.ID, Revision: ev.Revision, Type: string(ev.Type), Payload: ev.Payload})
		return
	}
	cmd.printf("[%d] %s\n", ev.Revision, eventSummary(ev.Type, ev.Payload))
}

// printResult prints a <task-result/>: the terminal state, then the text
// content and the structured content of a result, the code and message of
// a failure, or the reason of a cancellation. -json prints the whole
// payload.
func (cmd *clientCmd) printResult(r task.TaskResult) {
	if cmd.json {
		cmd.emit(outResult{Kind: "result", TaskID: r.TaskID, State: string(r.State), Revision: r.Revision, Payload: r.Payload})
		return
	}
	cmd.printf("result of %s: %s at revision %d\n", r.TaskID, r.State, r.Revision)
	var p struct {
		Result *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Structured json.RawMessage `json:"structuredContent"`
			IsError    bool            `json:"isError"`
		} `json:"result"`
		Summary string `json:"summary"`
	}
	if json.Unmarshal(r.Payload, &p) != nil || p.Result == nil {
		// A failure or a cancellation: the event summary says it all.
		cmd.printf("  %s\n", eventSummary(agentclient.TerminalEventType(r.State), r.Payload))
		return
	}
	if p.Result.IsError {
		cmd.printf("  the tool reports an error (isError: a completed call all the same)\n")
	}
	for _, c := range p.Result.Content {
		if c.Type == "text" {
			for _, line := range strings.Split(c.Text, "\n") {
				cmd.printf("  %s\n", agentclient.SafeText(line, 4096))
			}
		} else {
			cmd.printf("  [%s content]\n", agentclient.SafeText(c.Type, 64))
		}
	}
	if len(p.Result.Structured) > 0 {
		var compact bytes.Buffer
		if json.Compact(&compact, p.Result.Structured) == nil {
			cmd.printf("  structuredContent: %s\n", agentclient.SafeText(compact.String(), 4096))
		}
	}
	if p.Summary != "" {
		cmd.printf("  summary: %s\n", agentclient.SafeText(p.Summary, 4096))
	}
}

// eventSummary is the one-line human form of an event payload (already
// validated against the event schema).
func eventSummary(typ task.EventType, payload []byte) string {
	var p struct {
		State     string                   `json:"state"`
		Percent   *float64                 `json:"percent"`
		Stage     string                   `json:"stage"`
		Message   string                   `json:"message"`
		RequestID string                   `json:"requestId"`
		Question  string                   `json:"question"`
		Summary   string                   `json:"summary"`
		Reason    string                   `json:"reason"`
		Error     *agentclient.TaskFailure `json:"error"`
	}
	json.Unmarshal(payload, &p)
	var parts []string
	switch typ {
	case task.EventStatus:
		parts = append(parts, "status: "+p.State)
	case task.EventProgress:
		s := "progress:"
		if p.Percent != nil {
			// One decimal at most: 33.3%, 100%.
			s += " " + strconv.FormatFloat(math.Round(*p.Percent*10)/10, 'f', -1, 64) + "%"
		}
		if p.Stage != "" {
			s += " [" + agentclient.SafeText(p.Stage, 256) + "]"
		}
		if p.Message != "" {
			s += " " + agentclient.SafeText(p.Message, 400)
		}
		parts = append(parts, s)
	case task.EventInputRequired:
		parts = append(parts, "input required ("+p.RequestID+"): "+agentclient.SafeText(p.Question, 400))
	case task.EventCompleted:
		s := "completed"
		if p.Summary != "" {
			s += ": " + agentclient.SafeText(p.Summary, 400)
		}
		parts = append(parts, s)
	case task.EventFailed:
		s := "failed"
		if p.Error != nil {
			s += ": " + agentclient.SafeText(p.Error.Code, 128) + ": " + agentclient.SafeText(p.Error.Message, 400)
			if p.Error.Retryable {
				s += " (retryable)"
			}
		}
		parts = append(parts, s)
	case task.EventCancelled:
		s := "cancelled"
		if p.Reason != "" {
			s += ": " + agentclient.SafeText(p.Reason, 400)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}
