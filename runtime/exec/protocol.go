package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"agentgw/runtime"
)

// Protocol is the protocol identifier in the invoke message; a later,
// incompatible protocol gets a new one.
const Protocol = "agentgw-exec/0"

// Message types. The gateway writes invoke, input and cancel to the
// tool's standard input; the tool writes the others to its standard
// output. docs/exec-runtime.md is the specification.
const (
	msgInvoke        = "invoke"
	msgInput         = "input"
	msgCancel        = "cancel"
	msgProgress      = "progress"
	msgInputRequired = "input_required"
	msgResult        = "result"
	msgError         = "error"
	msgCancelled     = "cancelled"
)

// invokeMessage is the first line the tool reads.
type invokeMessage struct {
	Type      string          `json:"type"`
	Protocol  string          `json:"protocol"`
	Handle    string          `json:"handle"`
	Tool      toolMeta        `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Deadline  string          `json:"deadline,omitempty"`
}

type toolMeta struct {
	Name                 string `json:"name"`
	Title                string `json:"title,omitempty"`
	Description          string `json:"description,omitempty"`
	APIVersion           string `json:"apiVersion"`
	SupportsProgress     bool   `json:"supportsProgress"`
	SupportsCancellation bool   `json:"supportsCancellation"`
	SupportsInput        bool   `json:"supportsInput"`
}

// encodeLine encodes v as one line of JSON without HTML escaping, so that
// simple tools see strings as they are.
func encodeLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func invokeLine(call runtime.Call) ([]byte, error) {
	m := invokeMessage{
		Type:     msgInvoke,
		Protocol: Protocol,
		Handle:   call.Handle,
		Tool: toolMeta{
			Name: call.Tool.Name, Title: call.Tool.Title, Description: call.Tool.Description,
			APIVersion:           call.Tool.APIVersion,
			SupportsProgress:     call.Tool.SupportsProgress,
			SupportsCancellation: call.Tool.SupportsCancellation,
			SupportsInput:        call.Tool.SupportsInput,
		},
		Arguments: call.Arguments,
	}
	if len(m.Arguments) == 0 {
		m.Arguments = json.RawMessage(`{}`)
	}
	if !call.Deadline.IsZero() {
		m.Deadline = call.Deadline.UTC().Format(time.RFC3339Nano)
	}
	return encodeLine(m)
}

func inputLine(answer json.RawMessage) ([]byte, error) {
	return encodeLine(struct {
		Type   string          `json:"type"`
		Answer json.RawMessage `json:"answer"`
	}{msgInput, answer})
}

var cancelLine = []byte(`{"type":"cancel"}` + "\n")

// toolMessage is one parsed line of the tool's output: exactly one of the
// report fields is set, by type.
type toolMessage struct {
	typ       string
	progress  runtime.Progress
	input     runtime.InputRequest
	result    runtime.Result
	failure   runtime.Failure
	cancelled string
}

// members lists the members each message type may have besides "type".
var members = map[string][]string{
	msgProgress:      {"percent", "stage", "message"},
	msgInputRequired: {"question", "inputSchema", "timeoutSeconds", "reasks"},
	msgResult:        {"result", "summary"},
	msgError:         {"code", "message", "retryable", "details"},
	msgCancelled:     {"reason"},
}

// maxInputTimeoutSeconds bounds timeoutSeconds of an input request.
const maxInputTimeoutSeconds = 7 * 24 * 3600

// parseLine parses one output line. Errors describe the violation without
// quoting the line: they end up in logs.
func parseLine(line []byte) (toolMessage, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return toolMessage{}, errors.New("line is not a JSON object")
	}
	var typ string
	if err := json.Unmarshal(raw["type"], &typ); err != nil {
		return toolMessage{}, errors.New("missing or invalid type")
	}
	allowed, ok := members[typ]
	if !ok {
		return toolMessage{}, errors.New("unknown message type")
	}
	for k := range raw {
		if k != "type" && !slices.Contains(allowed, k) {
			return toolMessage{}, fmt.Errorf("unknown member in %s message", typ)
		}
	}
	m := toolMessage{typ: typ}
	var err error
	str := func(k string, dst *string) {
		if v, ok := raw[k]; ok && err == nil && json.Unmarshal(v, dst) != nil {
			err = fmt.Errorf("%s must be a string", k)
		}
	}
	switch typ {
	case msgProgress:
		if v, ok := raw["percent"]; ok {
			var p float64
			if json.Unmarshal(v, &p) != nil {
				return m, errors.New("percent must be a number")
			}
			m.progress.Percent = &p
		}
		str("stage", &m.progress.Stage)
		str("message", &m.progress.Message)
	case msgInputRequired:
		str("question", &m.input.Question)
		m.input.Schema = raw["inputSchema"]
		if v, ok := raw["timeoutSeconds"]; ok {
			var s float64
			if json.Unmarshal(v, &s) != nil || s <= 0 || s > maxInputTimeoutSeconds || math.IsNaN(s) {
				return m, errors.New("timeoutSeconds must be a positive number of seconds")
			}
			m.input.Timeout = time.Duration(s * float64(time.Second))
		}
		if v, ok := raw["reasks"]; ok && (json.Unmarshal(v, &m.input.Reasks) != nil || m.input.Reasks < 0) {
			return m, errors.New("reasks must be a non-negative integer")
		}
	case msgResult:
		m.result.Raw = raw["result"]
		if m.result.Raw == nil {
			return m, errors.New("result message without result")
		}
		str("summary", &m.result.Summary)
	case msgError:
		str("code", &m.failure.Code)
		str("message", &m.failure.Message)
		if v, ok := raw["retryable"]; ok && json.Unmarshal(v, &m.failure.Retryable) != nil {
			return m, errors.New("retryable must be a boolean")
		}
		m.failure.Details = raw["details"]
	case msgCancelled:
		str("reason", &m.cancelled)
	}
	return m, err
}
