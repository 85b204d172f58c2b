package task

// State is a task state ("Task States").
type State string

// The task states.
const (
	// StateAccepted: the task was durably accepted (revision 0).
	StateAccepted State = "accepted"
	// StateRunning: tool execution is in progress.
	StateRunning State = "running"
	// StateInputRequired: the target waits for caller input.
	StateInputRequired State = "input_required"
	// StateCancelling: a cancellation was accepted; not terminal.
	StateCancelling State = "cancelling"
	// StateCancelled: the target confirmed cancellation. Terminal.
	StateCancelled State = "cancelled"
	// StateFailed: execution failed. Terminal.
	StateFailed State = "failed"
	// StateCompleted: execution completed. Terminal.
	StateCompleted State = "completed"
)

// Valid reports whether s is one of the seven states.
func (s State) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// Terminal reports whether s is cancelled, failed or completed.
func (s State) Terminal() bool {
	return s == StateCancelled || s == StateFailed || s == StateCompleted
}

// transitions is the normative transition table of "Task States":
// accepted to running, input_required, cancelling or any terminal state;
// running to input_required, cancelling or any terminal state;
// input_required to running, cancelling or any terminal state; cancelling
// to any terminal state. Terminal states have no way out.
var transitions = map[State][]State{
	StateAccepted:      {StateRunning, StateInputRequired, StateCancelling, StateCancelled, StateFailed, StateCompleted},
	StateRunning:       {StateInputRequired, StateCancelling, StateCancelled, StateFailed, StateCompleted},
	StateInputRequired: {StateRunning, StateCancelling, StateCancelled, StateFailed, StateCompleted},
	StateCancelling:    {StateCancelled, StateFailed, StateCompleted},
	StateCancelled:     nil,
	StateFailed:        nil,
	StateCompleted:     nil,
}

// Permitted reports whether the transition table allows from → to. A
// state never transitions to itself; progress updates and the re-issue of
// an expired input request change the revision but not the state.
func Permitted(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// EventType is the 'type' attribute of an <event/> element.
type EventType string

// The lifecycle event types ("Lifecycle Events").
const (
	EventStatus        EventType = "status"
	EventProgress      EventType = "progress"
	EventInputRequired EventType = "input_required"
	EventCompleted     EventType = "completed"
	EventFailed        EventType = "failed"
	EventCancelled     EventType = "cancelled"
)

// Valid reports whether t is one of the six event types.
func (t EventType) Valid() bool {
	switch t {
	case EventStatus, EventProgress, EventInputRequired, EventCompleted, EventFailed, EventCancelled:
		return true
	}
	return false
}

// terminalEvent returns the event type that announces terminal state s.
func terminalEvent(s State) EventType {
	switch s {
	case StateCompleted:
		return EventCompleted
	case StateFailed:
		return EventFailed
	}
	return EventCancelled
}
