package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"agentgw/agentclient"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// follower follows one task for call: the protocol record and the follow
// loop are an agentclient.Follower; this follower prints what it learns
// and prompts for input on a terminal.
type follower struct {
	cmd      *clientCmd
	tr       *agentclient.Tracker
	fl       *agentclient.Follower
	endpoint jid.JID
	taskID   string

	announced map[string]bool
	// work carries the lines typed on the terminal, as answers to send,
	// once a prompt started reading them.
	work chan func(context.Context)
}

func newFollower(cmd *clientCmd, p *pin, taskID string) *follower {
	f := &follower{cmd: cmd, tr: agentclient.NewTracker(p, taskID), endpoint: p.Endpoint, taskID: taskID, announced: map[string]bool{}}
	f.fl = &agentclient.Follower{Client: cmd.ac, Tracker: f.tr, MaxPoll: maxPoll,
		Observed: f.handle, Recovered: f.recovered, Received: f.received, Lost: f.lost,
		Wait: func(context.Context) (<-chan struct{}, <-chan func(context.Context)) { return nil, f.work }}
	return f
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
		if err := f.fl.Recover(ctx, "of the task accepted earlier"); err != nil {
			return err
		}
	}
	f.fl.Poll, f.fl.Events = poll, f.cmd.s.c.Incoming()
	if err := f.fl.Run(ctx); err != nil {
		if err == ctx.Err() {
			return f.givenUp(err)
		}
		return err
	}
	r, err := f.cmd.ac.SettledResult(ctx, f.endpoint, f.taskID)
	if err != nil {
		return fmt.Errorf("task %s settled as %s, but its result could not be retrieved: %w", f.taskID, f.tr.State, err)
	}
	f.cmd.printResult(r)
	return outcome(r)
}

// lost follows the XMPP session's end: events for this task may have
// been lost with it, so log in again and ask for the state.
func (f *follower) lost(ctx context.Context) (<-chan wire.Element, error) {
	f.cmd.notice(f.taskID, "the XMPP session was lost; logging in again")
	if err := f.cmd.s.reconnect(ctx); err != nil {
		return nil, f.givenUp(err)
	}
	if err := f.fl.Recover(ctx, "after logging in again"); err != nil {
		return nil, err
	}
	return f.cmd.s.c.Incoming(), nil
}

func (f *follower) received(el wire.Element) { f.cmd.s.recordElement("stanza", el) }

// givenUp is the error of a follow that stops before the task settles: a
// local observation only, the task goes on.
func (f *follower) givenUp(why error) error {
	return fmt.Errorf("stopped following task %s (%v) while it was %s at revision %d; it goes on: see %s state %s %s",
		f.taskID, why, f.tr.State, f.tr.Revision, f.cmd.hint, f.endpoint, f.taskID)
}

// protocolError logs a lifecycle message that is ignored, with a bounded
// diagnostic that never includes its payload ("Lifecycle Events").
func (f *follower) protocolError(from, why string) {
	fmt.Fprintf(f.cmd.stderr, "agentgw: ignored a task message from %s: %s\n", agentclient.SafeText(from, 200), why)
}

// handle prints what a lifecycle message told, and reports whether it
// advanced the task.
func (f *follower) handle(ctx context.Context, o agentclient.Observation) bool {
	switch o.Verdict {
	case agentclient.Ignored:
		f.protocolError(o.From, o.Reason)
		return false
	case agentclient.Duplicate:
		if o.Reason != "" {
			f.protocolError(o.From, o.Reason)
		}
		return false
	case agentclient.Gap:
		f.cmd.notice(f.taskID, "revision gap: had %d, received %d; asking for the task state", f.tr.Revision, o.Event.Revision)
		if err := f.fl.Recover(ctx, "after a revision gap"); err != nil {
			f.cmd.notice(f.taskID, "state request failed: %v", err)
			return false
		}
		if f.tr.CaughtUp(o) {
			// The state caught up with exactly this event: show it.
			f.cmd.printEvent(o.Event)
		}
		return true
	case agentclient.Inconsistent:
		f.protocolError(o.From, o.Reason)
		if err := f.fl.Recover(ctx, "after an inconsistent event"); err != nil {
			f.cmd.notice(f.taskID, "state request failed: %v", err)
		}
		return false
	}
	f.cmd.printEvent(o.Event)
	f.announceInput()
	return true
}

// recovered prints a state request's outcome (client guide, step 10):
// the state when it was adopted, with why when set.
func (f *follower) recovered(_ context.Context, why string, st task.TaskState, adopted bool, unknown, err error) error {
	if err != nil {
		return err
	}
	if unknown != nil {
		// The answer is unknown; try again at the next poll.
		f.cmd.notice(f.taskID, "no answer to the state request: %v", unknown)
		return nil
	}
	if !adopted {
		return nil
	}
	if why != "" {
		f.cmd.notice(f.taskID, "recovered the state %s", why)
	}
	f.cmd.printState(st)
	f.announceInput()
	return nil
}

// announceInput shows a pending input request once: how to answer it
// from any resource of the account, and on a terminal a prompt.
func (f *follower) announceInput() {
	in := f.tr.Pending
	if in == nil || f.announced[in.RequestID] {
		return
	}
	f.announced[in.RequestID] = true
	if !f.cmd.json {
		f.cmd.printf("    answer schema: %s\n", agentclient.SafeText(string(in.Schema), 1000))
		if in.ExpiresAt != "" {
			f.cmd.printf("    expires: %s\n", agentclient.SafeText(in.ExpiresAt, 64))
		}
		answer := "'JSON'"
		if ex := in.Example(); ex != "" {
			answer = shellQuote(ex)
		}
		f.cmd.printf("    answer from any resource of this account with:\n      %s input %s %s %s %s\n",
			f.cmd.hint, f.endpoint, f.taskID, in.RequestID, answer)
		if f.cmd.hintNote != "" {
			f.cmd.printf("      (%s)\n", f.cmd.hintNote)
		}
	}
	if f.cmd.interactive {
		f.cmd.printf("%s", f.prompt(in))
		if f.work == nil {
			f.work = make(chan func(context.Context))
			go readLines(f.cmd.stdin, func(line string) {
				f.work <- func(ctx context.Context) { f.answer(ctx, line) }
			})
		}
	}
}

// prompt is what the terminal shows before reading an answer: plain text
// where the schema is one string property (TextAnswer wraps it), one line
// of JSON otherwise.
func (f *follower) prompt(in *agentclient.InputRequest) string {
	if in.TakesText() {
		return "answer (text): "
	}
	return "answer (one line of JSON): "
}

// readLines calls each with every line of r, until r ends.
func readLines(r io.Reader, each func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), task.DefaultMaxInputBytes+1)
	for sc.Scan() {
		each(sc.Text())
	}
}

// answer sends a line typed at the prompt as the answer to the pending
// input request.
func (f *follower) answer(ctx context.Context, line string) {
	in := f.tr.Pending
	if in == nil {
		f.cmd.printf("no input is pending; ignored\n")
		return
	}
	canon, err := in.TextAnswer(line)
	if err != nil {
		f.cmd.printf("%v\n%s", err, f.prompt(in))
		return
	}
	ack, err := f.cmd.ac.ProvideInput(ctx, f.endpoint, f.taskID, in.RequestID, canon, f.tr.Revision)
	if err != nil {
		f.cmd.printf("the answer was not accepted: %v\n", err)
		if rerr := f.fl.Recover(ctx, "after a refused answer"); rerr != nil {
			f.cmd.notice(f.taskID, "state request failed: %v", rerr)
		}
		if f.tr.Pending != nil {
			f.announced[f.tr.Pending.RequestID] = false
			f.announceInput()
		}
		return
	}
	f.cmd.printf("input accepted at revision %d\n", ack.Revision)
}
