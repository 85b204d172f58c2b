package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"time"

	"agentgw/manifest"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// maxResultAttempts bounds the retrievals of the terminal result while its
// answer is lost.
const maxResultAttempts = 4

// eventName is the lifecycle event element.
var eventName = xml.Name{Space: task.NS, Local: "event"}

// seenEvent is what is kept of an applied event to recognize its replays:
// events are deduplicated by (endpoint, task ID, revision), and an
// identical replay keeps its event ID and canonical payload.
type seenEvent struct {
	id      string
	typ     task.EventType
	payload []byte // RFC 8785
}

// follower is the caller's record of one task while call follows it
// (client guide, "Minimum client state"): state and revision, the events
// applied, the pending input request. Notifications are advisory; the
// task state IQ is the source of truth whenever they are in doubt.
type follower struct {
	cmd      *clientCmd
	pin      *pin
	endpoint jid.JID
	taskID   string

	state     task.State
	revision  int64
	pending   *inputRequest
	seen      map[int64]seenEvent
	announced map[string]bool
	// answers carries lines typed on the terminal, once a prompt started
	// reading them.
	answers chan string
}

func newFollower(cmd *clientCmd, p *pin, taskID string) *follower {
	return &follower{
		cmd: cmd, pin: p, endpoint: p.Endpoint, taskID: taskID,
		state: task.StateAccepted, seen: map[int64]seenEvent{}, announced: map[string]bool{},
	}
}

// run follows the task until it settles, then retrieves and prints the
// result. wait bounds the whole (0: no bound); poll is the quiet period
// after which the state is asked for, doubling while nothing changes.
// With stateFirst the state is asked for at once.
func (f *follower) run(ctx context.Context, wait, poll time.Duration, stateFirst bool) error {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	if stateFirst {
		if err := f.recover(ctx, "of the task accepted earlier"); err != nil {
			return err
		}
	}
	interval := poll
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for !f.state.Terminal() {
		select {
		case raw, ok := <-f.cmd.s.c.Incoming():
			if !ok {
				// The session ended. Events for this task may have been
				// lost with it: log in again and ask for the state.
				f.cmd.notice(f.taskID, "the XMPP session was lost; logging in again")
				if err := f.cmd.s.reconnect(ctx); err != nil {
					return f.givenUp(err)
				}
				if err := f.recover(ctx, "after logging in again"); err != nil {
					return err
				}
				continue
			}
			f.cmd.s.record("stanza", raw)
			if f.handle(ctx, raw) {
				interval = poll
				resetTimer(timer, interval)
			}
		case line := <-f.answers:
			f.answer(ctx, line)
		case <-timer.C:
			if err := f.recover(ctx, ""); err != nil {
				return err
			}
			interval = min(2*interval, maxPoll)
			timer.Reset(interval)
		case <-ctx.Done():
			return f.givenUp(ctx.Err())
		}
	}
	var r task.TaskResult
	var err error
	for attempt := 1; attempt <= maxResultAttempts; attempt++ {
		r, err = f.cmd.taskResult(ctx, f.endpoint, f.taskID)
		var ie *iqError
		if err == nil || errors.As(err, &ie) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("task %s settled as %s, but its result could not be retrieved: %w", f.taskID, f.state, err)
	}
	f.cmd.printResult(r)
	return outcome(r)
}

// givenUp is the error of a follow that stops before the task settles: a
// local observation only, the task goes on.
func (f *follower) givenUp(why error) error {
	return fmt.Errorf("stopped following task %s (%v) while it was %s at revision %d; it goes on: see %s state %s %s",
		f.taskID, why, f.state, f.revision, f.cmd.hint, f.endpoint, f.taskID)
}

func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

// protocolError logs a lifecycle message that is ignored, with a bounded
// diagnostic that never includes its payload ("Lifecycle Events").
func (f *follower) protocolError(from, why string) {
	fmt.Fprintf(f.cmd.stderr, "agentgw: ignored a task message from %s: %s\n", safeText(from, 200), why)
}

// handle processes one incoming stanza and reports whether it advanced
// the task. A message is a lifecycle message when it has an <event/> of
// urn:xmpp:agent-task:0 as a direct child; it is then applied only if
// every rule of "Lifecycle Events" holds, else ignored whole and logged.
func (f *follower) handle(ctx context.Context, raw string) bool {
	el, err := wire.Parse(raw)
	if err != nil || el.Start.Name.Local != "message" {
		return false
	}
	var events []wire.Element
	for _, c := range el.Children() {
		if c.Start.Name == eventName {
			events = append(events, c)
		}
	}
	if len(events) == 0 {
		return false
	}
	from, _ := el.AttrValue("from")
	switch {
	case len(events) > 1:
		f.protocolError(from, "more than one event")
		return false
	case !sameBare(from, f.endpoint):
		f.protocolError(from, "not sent by the endpoint of the task")
		return false
	}
	if typ, ok := el.AttrValue("type"); ok && typ != "normal" {
		f.protocolError(from, "not a message of type normal")
		return false
	}
	ev, err := task.ParseEvent(events[0])
	if err != nil {
		f.protocolError(from, "malformed event")
		return false
	}
	if ev.TaskID != f.taskID {
		f.protocolError(from, "event for a task this command does not follow")
		return false
	}
	if task.ValidatePayload(ev.Type, ev.Payload) != nil {
		f.protocolError(from, fmt.Sprintf("%s event at revision %d does not satisfy the event schema", ev.Type, ev.Revision))
		return false
	}
	canon, err := manifest.Canonicalize(ev.Payload, manifest.Limits{MaxManifestBytes: 1 << 20, MaxStringBytes: 1 << 20})
	if err != nil {
		f.protocolError(from, "event payload is not I-JSON")
		return false
	}
	switch {
	case ev.Revision <= f.revision:
		if s, ok := f.seen[ev.Revision]; ok && (s.id != ev.ID || s.typ != ev.Type || !bytes.Equal(s.payload, canon)) {
			f.protocolError(from, fmt.Sprintf("a different event for revision %d", ev.Revision))
		}
		// An exact replay, or an event older than the state recovered:
		// nothing new either way.
		return false
	case ev.Revision > f.revision+1:
		f.cmd.notice(f.taskID, "revision gap: had %d, received %d; asking for the task state", f.revision, ev.Revision)
		if err := f.recover(ctx, "after a revision gap"); err != nil {
			f.cmd.notice(f.taskID, "state request failed: %v", err)
			return false
		}
		if ev.Revision == f.revision {
			// The state caught up with exactly this event: show it.
			f.seen[ev.Revision] = seenEvent{ev.ID, ev.Type, canon}
			f.cmd.printEvent(ev)
		}
		return true
	}
	if !f.apply(ev, canon) {
		f.protocolError(from, fmt.Sprintf("%s event at revision %d is inconsistent with the task", ev.Type, ev.Revision))
		if err := f.recover(ctx, "after an inconsistent event"); err != nil {
			f.cmd.notice(f.taskID, "state request failed: %v", err)
		}
		return false
	}
	return true
}

// apply applies the next event and prints it; it reports false (and
// changes nothing) for an event the transition table does not allow.
func (f *follower) apply(ev task.Event, canon []byte) bool {
	next := f.state
	var pending *inputRequest
	switch ev.Type {
	case task.EventStatus:
		var p struct {
			State task.State `json:"state"`
		}
		if json.Unmarshal(ev.Payload, &p) != nil {
			return false
		}
		next = p.State
	case task.EventProgress:
		if f.state.Terminal() {
			return false
		}
	case task.EventInputRequired:
		in, err := parseInputRequest(ev.Payload)
		if err != nil {
			return false
		}
		next, pending = task.StateInputRequired, &in
	case task.EventCompleted:
		next = task.StateCompleted
	case task.EventFailed:
		next = task.StateFailed
	case task.EventCancelled:
		next = task.StateCancelled
	}
	// Progress changes no state; an input request may be re-issued
	// (expired, then asked again) in state input_required; every other
	// event announces a permitted transition.
	switch {
	case ev.Type == task.EventProgress:
	case ev.Type == task.EventInputRequired && f.state == task.StateInputRequired:
	case !task.Permitted(f.state, next):
		return false
	}
	f.state, f.revision = next, ev.Revision
	if next != task.StateInputRequired {
		f.pending = nil
	} else if pending != nil {
		f.pending = pending
	}
	f.seen[ev.Revision] = seenEvent{ev.ID, ev.Type, canon}
	f.cmd.printEvent(ev)
	f.announceInput()
	return true
}

// recover asks for the authoritative task state and adopts it when it is
// newer than what the events told (client guide, step 10). why, when set,
// is printed with the state.
func (f *follower) recover(ctx context.Context, why string) error {
	st, err := f.cmd.taskState(ctx, f.endpoint, f.taskID)
	var ie *iqError
	if errors.As(err, &ie) {
		return fmt.Errorf("task %s: %w", f.taskID, err)
	}
	if err != nil {
		// The answer is unknown; try again at the next poll.
		f.cmd.notice(f.taskID, "no answer to the state request: %v", err)
		return nil
	}
	if st.APIVersion != f.pin.Version || st.ManifestHash != f.pin.Hash {
		return fmt.Errorf("task %s: the endpoint reports a version or manifest hash other than the one pinned", f.taskID)
	}
	if st.Revision < f.revision || (st.Revision == f.revision && st.State == f.state) {
		return nil
	}
	if why != "" {
		f.cmd.notice(f.taskID, "recovered the state %s", why)
	}
	f.state, f.revision, f.pending = st.State, st.Revision, nil
	if st.PendingInput != nil {
		in, err := parseInputRequest(st.PendingInput)
		if err == nil {
			f.pending = &in
		}
	}
	f.cmd.printState(st)
	f.announceInput()
	return nil
}

// announceInput shows a pending input request once: how to answer it
// from any resource of the account, and on a terminal a prompt.
func (f *follower) announceInput() {
	in := f.pending
	if in == nil || f.announced[in.RequestID] {
		return
	}
	f.announced[in.RequestID] = true
	if !f.cmd.json {
		f.cmd.printf("    answer schema: %s\n", safeText(string(in.Schema), 1000))
		if in.ExpiresAt != "" {
			f.cmd.printf("    expires: %s\n", safeText(in.ExpiresAt, 64))
		}
		f.cmd.printf("    answer from any resource of this account with:\n      %s input %s %s %s 'JSON'\n",
			f.cmd.hint, f.endpoint, f.taskID, in.RequestID)
	}
	if f.cmd.interactive {
		f.cmd.printf("answer (one line of JSON): ")
		if f.answers == nil {
			f.answers = make(chan string)
			go readLines(f.cmd.stdin, f.answers)
		}
	}
}

// readLines sends each line of r to out, until r ends.
func readLines(r io.Reader, out chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), task.DefaultMaxInputBytes+1)
	for sc.Scan() {
		out <- sc.Text()
	}
}

// answer sends a line typed at the prompt as the answer to the pending
// input request.
func (f *follower) answer(ctx context.Context, line string) {
	in := f.pending
	if in == nil {
		f.cmd.printf("no input is pending; ignored\n")
		return
	}
	canon, err := manifest.Canonicalize([]byte(line), manifest.Limits{
		MaxManifestBytes: task.DefaultMaxInputBytes, MaxStringBytes: task.DefaultMaxInputBytes,
	})
	if err == nil {
		err = in.validate(canon)
	}
	if err != nil {
		f.cmd.printf("%v\nanswer (one line of JSON): ", err)
		return
	}
	pi := task.ProvideInput{TaskID: f.taskID, RequestID: in.RequestID, ExpectedRevision: f.revision, Input: string(canon)}
	payload, err := wire.Marshal(pi.TokenReader())
	if err != nil {
		return
	}
	el, _, err := f.cmd.setRetrying(ctx, f.endpoint.String(), payload, iqTimeout, "the input")
	if err != nil {
		f.cmd.printf("the answer was not accepted: %v\n", err)
		if rerr := f.recover(ctx, "after a refused answer"); rerr != nil {
			f.cmd.notice(f.taskID, "state request failed: %v", rerr)
		}
		if f.pending != nil {
			f.announced[f.pending.RequestID] = false
			f.announceInput()
		}
		return
	}
	if ack, err := task.ParseInputAccepted(el); err == nil {
		f.cmd.printf("input accepted at revision %d\n", ack.Revision)
	}
}

// sameBare reports whether the JID s has the bare JID want.
func sameBare(s string, want jid.JID) bool {
	j, err := jid.Parse(s)
	return err == nil && j.Bare().Equal(want.Bare())
}
