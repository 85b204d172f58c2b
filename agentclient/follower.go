package agentclient

import (
	"context"
	"errors"
	"time"

	"agentgw/task"
	"agentgw/wire"
)

// ErrEventsClosed ends a follow whose Events channel closed with no Lost
// to replace it.
var ErrEventsClosed = errors.New("the channel of task events closed")

// Follower follows one task until it settles (client guide, steps 8 to
// 10), for a caller that shows what happens: the CLI prints it, the MCP
// face relays it. It hands each lifecycle message to the Tracker, and asks
// for the task state after a quiet period, which doubles up to MaxPoll
// while nothing advances. What a message means to the caller, including
// when to ask for the state (Recover), is the caller's part.
type Follower struct {
	Client  *Client
	Tracker *Tracker
	// Poll is the first quiet period, MaxPoll its bound.
	Poll, MaxPoll time.Duration
	// Events delivers the stanzas received, lifecycle messages or not.
	Events <-chan wire.Element

	// Observed (required) is told of each lifecycle message, and reports
	// whether the task advanced, which starts the quiet period again.
	Observed func(ctx context.Context, o Observation) (advanced bool)
	// Recovered (required) is told of each state request Recover makes:
	// why (words for a person; "" for a routine poll) and the outcome as
	// Client.Recover returns it. What it returns is Recover's error; at a
	// routine poll an error ends the follow.
	Recovered func(ctx context.Context, why string, st task.TaskState, adopted bool, unknown, err error) error
	// Received, if set, sees every stanza of Events first.
	Received func(el wire.Element)
	// Lost, if set, is called when Events closes: it returns the channel
	// that replaces it, or an error that ends the follow.
	Lost func(ctx context.Context) (<-chan wire.Element, error)
	// Wait, if set, runs before each wait and returns the caller's own
	// wake-ups and work to run in the follow (an answer typed, an
	// elicitation's outcome); nil channels for none.
	Wait func(ctx context.Context) (wake <-chan struct{}, work <-chan func(context.Context))
}

// Recover asks for the task state, adopts it when newer, and tells
// Recovered; it returns what Recovered returns.
func (f *Follower) Recover(ctx context.Context, why string) error {
	st, adopted, unknown, err := f.Client.Recover(ctx, f.Tracker)
	return f.Recovered(ctx, why, st, adopted, unknown, err)
}

// Run follows until the task settles (nil), ctx ends (ctx.Err()), or the
// caller's part ends it (its error).
func (f *Follower) Run(ctx context.Context) error {
	interval := f.Poll
	timer := time.NewTimer(interval)
	defer timer.Stop()
	events := f.Events
	for !f.Tracker.State.Terminal() {
		var wake <-chan struct{}
		var work <-chan func(context.Context)
		if f.Wait != nil {
			wake, work = f.Wait(ctx)
		}
		select {
		case el, ok := <-events:
			if !ok {
				if f.Lost == nil {
					return ErrEventsClosed
				}
				var err error
				if events, err = f.Lost(ctx); err != nil {
					return err
				}
				continue
			}
			if f.Received != nil {
				f.Received(el)
			}
			if o := f.Tracker.HandleElement(el); o.Verdict != NotEvent && f.Observed(ctx, o) {
				interval = f.Poll
				resetTimer(timer, interval)
			}
		case <-wake:
		case do := <-work:
			do(ctx)
		case <-timer.C:
			if err := f.Recover(ctx, ""); err != nil {
				return err
			}
			interval = min(2*interval, f.MaxPoll)
			timer.Reset(interval)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// resetTimer restarts t with d, draining a tick it may hold.
func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}
