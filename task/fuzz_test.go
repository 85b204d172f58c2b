package task_test

import (
	"testing"

	"agentgw/internal/fuzztest"
	"agentgw/task"
	"agentgw/wire"
)

// The agent-task request elements a target parses from any sender, and
// the answers and events a caller parses from any target. Seeds are the
// spec's examples, in testdata/fuzz.

func FuzzParseInvoke(f *testing.F) {
	fuzztest.Element(f, nil, task.ParseInvoke)
}

func FuzzParseProvideInput(f *testing.F) {
	fuzztest.Element(f, nil, task.ParseProvideInput)
}

func FuzzParseCancel(f *testing.F) {
	fuzztest.Element(f, nil, task.ParseCancel)
}

func FuzzParseTaskStateRequest(f *testing.F) {
	fuzztest.Element(f, nil, task.ParseTaskStateRequest)
}

func FuzzParseTaskResultRequest(f *testing.F) {
	fuzztest.Element(f, nil, task.ParseTaskResultRequest)
}

// FuzzParseAnswer covers what a caller parses: every answer element, by
// name, and events, whose payloads are also checked against the event
// schema.
func FuzzParseAnswer(f *testing.F) {
	fuzztest.Element(f, nil, func(el wire.Element) (any, error) {
		switch el.Start.Name.Local {
		case "accepted":
			return task.ParseAccepted(el)
		case "event":
			ev, err := task.ParseEvent(el)
			if err == nil {
				_ = task.ValidatePayload(ev.Type, ev.Payload)
			}
			return ev, err
		case "task-state":
			return task.ParseTaskState(el)
		case "task-result":
			return task.ParseTaskResult(el)
		case "input-accepted":
			return task.ParseInputAccepted(el)
		case "cancel-accepted":
			return task.ParseCancelAccepted(el)
		}
		return task.ParseInvoke(el)
	})
}

// FuzzParseDateTime checks that an accepted XEP-0082 DateTime formats
// and parses back to the same instant.
func FuzzParseDateTime(f *testing.F) {
	for _, s := range []string{
		"2026-07-27T19:14:01Z", "2026-07-27T19:14:01.123456789123Z",
		"2026-07-27T21:14:01+02:00", " 0001-01-01T00:00:00-14:00\n", "9999-12-31T23:59:59.9Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in, err := task.ParseDateTime(s)
		if err != nil {
			return
		}
		again, err := task.ParseDateTime(in.String())
		if err != nil {
			t.Fatalf("%q parses, but its form %q does not: %v", s, in.String(), err)
		}
		if again != in {
			t.Fatalf("%q: %v, then %v", s, in, again)
		}
	})
}
