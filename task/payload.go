package task

import (
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"agentgw/runtime"
	"agentgw/wire"
)

// Limits of the event payload schema, in characters (code points).
const (
	maxStageChars    = 256
	maxTextChars     = 4096
	maxCodeLen       = 128
	maxDetailsBytes  = 16 << 10
	maxQuestionChars = 4096
)

// CodeInputExpired is the failure code of a task whose input request
// expired with no re-issue left. It is deployment-defined, hence
// namespace-qualified ("Error Handling").
const CodeInputExpired = "agentgw:input-expired"

// CodeResultTooLarge is the failure code of a task whose tool returned a
// result too large to carry: over Config.MaxResultBytes as raw JSON, or
// over MaxEventWireBytes once XML-escaped in its event. It is
// deployment-defined, hence namespace-qualified ("Error Handling").
const CodeResultTooLarge = "agentgw:result-too-large"

// EnvelopeReserve is the part of wire.MaxStanzaBytes kept for what wraps an
// event payload on the wire: the <message/> or task-result <iq/> with its
// addresses (JIDs of up to 3071 bytes, escaped), the <event/> or
// <task-result/> attributes and namespace declarations.
const EnvelopeReserve = 16 << 10

// MaxEventWireBytes bounds an event payload after XML escaping
// (wire.EscapedLen), so that the event message and the task-result reply
// that carry it stay within wire.MaxStanzaBytes.
const MaxEventWireBytes = wire.MaxStanzaBytes - EnvelopeReserve

// Failures this package settles tasks with. Their messages are fixed and
// safe.
var (
	failDeadline = runtime.Failure{Code: runtime.CodeDeadlineExpired,
		Message: "The task deadline passed before the task settled.", Retryable: true}
	failInputExpired = runtime.Failure{Code: CodeInputExpired,
		Message: "The input request expired without an answer.", Retryable: true}
	failInvalidResult = runtime.Failure{Code: runtime.CodeInternalError,
		Message: "The tool produced a result that is not valid.", Retryable: false}
	failResultTooLarge = runtime.Failure{Code: CodeResultTooLarge,
		Message: "The tool's result exceeds the gateway's size limit (256 KiB of JSON, 464 KiB after XML escaping).", Retryable: false}
	failInterrupted = runtime.Failure{Code: runtime.CodeUnavailable,
		Message: "The task was interrupted by a gateway restart.", Retryable: true}
	failGeneric = "The tool failed."
)

// validText reports whether s is valid UTF-8 of at most max characters
// that XML 1.0 can carry once JSON has escaped its control characters.
func validText(s string, max int) bool {
	return wire.ValidJSONText(s) && utf8.RuneCountInString(s) <= max
}

func statusPayload(s State, updated time.Time) ([]byte, error) {
	return marshalCanonical(map[string]any{"state": string(s), "updatedAt": FormatDateTime(updated)})
}

// progressPayload builds a progress payload; ok is false when p breaks a
// rule of the event schema or is empty.
func progressPayload(p runtime.Progress) ([]byte, bool, error) {
	obj := map[string]any{}
	if p.Percent != nil {
		v := *p.Percent
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 100 {
			return nil, false, nil
		}
		obj["percent"] = v
	}
	if p.Stage != "" {
		if !validText(p.Stage, maxStageChars) {
			return nil, false, nil
		}
		obj["stage"] = p.Stage
	}
	if p.Message != "" {
		if !validText(p.Message, maxTextChars) {
			return nil, false, nil
		}
		obj["message"] = p.Message
	}
	if len(obj) == 0 {
		return nil, false, nil
	}
	b, err := marshalCanonical(obj)
	return b, err == nil, err
}

// inputPayload builds the input_required object of r: the event payload
// and the content of <pending-input/>, identical by construction.
func inputPayload(r *InputRequest) ([]byte, error) {
	obj := map[string]any{
		"requestId":   r.ID,
		"question":    r.Question,
		"inputSchema": json.RawMessage(r.Schema),
		"createdAt":   FormatDateTime(r.Created),
	}
	if !r.Expires.IsZero() {
		obj["expiresAt"] = FormatDateTime(r.Expires)
	}
	return marshalCanonical(obj)
}

func completedPayload(result []byte, summary string) ([]byte, error) {
	obj := map[string]any{"result": json.RawMessage(result)}
	if summary != "" {
		obj["summary"] = summary
	}
	return marshalCanonical(obj)
}

// failedPayload builds a failed payload from f after making it safe to
// commit: an invalid code becomes internal-error, an invalid message a
// generic one, and invalid details are dropped.
func failedPayload(f runtime.Failure) ([]byte, error) {
	if !validCode(f.Code) {
		f.Code = runtime.CodeInternalError
	}
	f.Message = safeFailureMessage(f.Message)
	e := map[string]any{"code": f.Code, "message": f.Message, "retryable": f.Retryable}
	if len(f.Details) > 0 {
		if d, err := canonicalJSON(f.Details, maxDetailsBytes, "details"); err == nil && len(d) > 0 && d[0] == '{' {
			e["details"] = json.RawMessage(d)
		}
	}
	return marshalCanonical(map[string]any{"error": e})
}

// MaxFailureMessageChars bounds the message of a failed event, in
// characters: a longer one is cut there and ends with "…".
const MaxFailureMessageChars = 1024

// safeFailureMessage bounds and sanitizes a failure message, which comes
// from a tool and reaches the caller: invalid UTF-8 or noncharacters give
// the generic message, control characters other than tab and newline
// become U+FFFD, and it is cut at MaxFailureMessageChars.
func safeFailureMessage(msg string) string {
	if msg == "" || !validText(msg, len(msg)) {
		return failGeneric
	}
	var b strings.Builder
	n := 0
	for _, r := range msg {
		if n == MaxFailureMessageChars-1 && utf8.RuneCountInString(msg) > MaxFailureMessageChars {
			b.WriteRune('…')
			break
		}
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || 0x80 <= r && r < 0xa0 {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func cancelledPayload(reason string) ([]byte, error) {
	obj := map[string]any{}
	if reason != "" && validText(reason, maxTextChars) {
		obj["reason"] = reason
	}
	return marshalCanonical(obj)
}

// validCode reports whether code is a reserved failure code, or a
// namespace-qualified one ("ns:name", both parts nonempty) within the
// event schema's pattern [A-Za-z0-9_.:-]{1,128}.
func validCode(code string) bool {
	switch code {
	case runtime.CodeDeadlineExpired, runtime.CodeInternalError, runtime.CodeUnavailable:
		return true
	}
	if len(code) == 0 || len(code) > maxCodeLen {
		return false
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	i := strings.IndexByte(code, ':')
	return i > 0 && i < len(code)-1
}
